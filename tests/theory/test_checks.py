"""The theory API refuses nonsense with errors that name the problem (issue 18, group 4)."""

import warnings

import numpy as np
import pytest

import attention_paths as ap
from attention_paths import sampling
from attention_paths.theory.action import NotPositiveDefiniteError


@pytest.fixture
def problem():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 8, 4))
    y = np.sign(rng.standard_normal(30))
    return X, y, ap.Architecture.uniform((2, 2), 10)


def test_overflowing_features_are_named_as_the_cause(problem):
    """Features x 1e160 overflow the kernels: an input error naming the features' scale (issue 24, group 4),
    raised even when the solver is asked not to raise on a failure to converge."""
    X, y, arch = problem
    with np.errstate(over="ignore", invalid="ignore"):
        for kwargs in ({}, {"raise_on_failure": False}):
            with pytest.raises(FloatingPointError, match="features' scale .* overflows"):
                ap.solve(ap.Action(ap.PathKernel(X * 1e160), y, 0.5, arch), **kwargs)


def test_extreme_width_and_init_are_named(problem):
    X, y, arch = problem
    with pytest.raises(ap.SolverError, match="widths"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # its restarts disagree on the way to the error
        ap.solve(ap.Action(ap.PathKernel(X), y, 0.5, ap.Architecture.uniform((2, 2), 1e-6)))
    with pytest.raises(ValueError, match="numerically singular"):
        ap.solve(ap.Action(ap.PathKernel(X), y, 0.5, arch), init=[1e-300 * np.eye(4), 1e-300 * np.eye(2)])
    with pytest.raises(NotPositiveDefiniteError, match="initial U_1"):
        ap.solve(ap.Action(ap.PathKernel(X), y, 0.5, arch), init=[-np.eye(4), np.eye(2)])


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"max_iter": -1}, "max_iter"),
        ({"max_iter": 2.5}, "max_iter"),
        ({"newton_steps": -2}, "newton_steps"),
        ({"n_restarts": -1}, "n_restarts"),
        ({"tol": 0.0}, "tol"),
        ({"tol": float("nan")}, "tol"),
        ({"tol": "small"}, "tol"),
    ],
)
def test_solver_settings_are_checked(problem, kwargs, match):
    X, y, arch = problem
    with pytest.raises(ValueError, match=match):
        ap.solve(ap.Action(ap.PathKernel(X), y, 0.5, arch), **kwargs)


def test_architecture_and_temperature_are_checked(problem):
    X, y, arch = problem
    with pytest.raises(ValueError, match="whole numbers"):
        ap.Architecture.uniform((2.7, 2), 10)
    with pytest.raises(ValueError, match="sequence"):
        ap.Architecture(4, (10, 10), (1.0, 1.0))
    assert ap.Architecture.uniform((2.0, 2), 10).heads == (2, 2)  # a whole-number float is fine
    with pytest.raises(TypeError, match="Architecture"):
        ap.Action(ap.PathKernel(X), y, 0.5, (2, 2))
    for tau in ("abc", np.array([1.0, 2.0]), None):
        with pytest.raises(ValueError, match="tau"):
            ap.Action(ap.PathKernel(X), y, tau, arch)


def test_features_complex_empty_and_nonfinite(problem):
    X, y, arch = problem
    with pytest.raises(ValueError, match="complex"):
        ap.PathKernel(X + 1j)
    with pytest.raises(ValueError, match="empty"):
        ap.PathKernel(X[:0])
    with pytest.raises(ValueError, match="empty"):
        ap.predict(np.eye(4), X, y, 0.5, X[:0])
    with pytest.raises(ValueError, match="complex"):
        ap.Action(ap.PathKernel(X), y + 0j, 0.5, arch)


def test_accuracy_convention_and_shapes():
    assert ap.accuracy(np.array([0.3, -0.2, 0.0]), np.array([1, -1, 1])) == pytest.approx(200 / 3)
    with pytest.raises(ValueError, match=r"\+1 or -1"):
        ap.accuracy(np.ones(3), np.array([0, 1, 1]))
    with pytest.raises(ValueError, match="shape"):
        ap.generalization_error(np.ones(3), np.zeros(3), np.ones(3)[:, None])
    assert ap.generalization_error(np.ones(3), np.zeros(3), np.ones(3)) == 0.0
    with pytest.raises(ValueError, match="empty"):
        ap.accuracy(np.ones(0), np.ones(0))


def test_samplers_check_test_inputs_and_saved_metadata(problem, tmp_path):
    X, y, arch = problem
    bad = X[:5].copy()
    bad[0, 0, 0] = np.nan
    cfg = sampling.SamplerConfig(num_warmup=1, num_samples=2, num_chains=1)
    with pytest.raises(ValueError, match="test features contain non-finite"):
        sampling.sample_rao_blackwell(X, y, 0.5, arch, bad, config=cfg)
    with pytest.raises(ValueError, match="test path inputs contain non-finite"):
        sampling.sample_full(X.transpose(0, 2, 1), y, 0.5, arch, bad.transpose(0, 2, 1), config=cfg)
    import json

    meta = np.frombuffer(json.dumps({"kind": "full"}).encode(), dtype=np.uint8)
    np.savez(
        tmp_path / "s.npz",
        U=np.zeros((1, 1, 4, 4)),
        mean_samples=np.zeros((1, 1, 2)),
        var_samples=np.zeros((1, 1, 2)),
        meta_json=meta,
    )
    with pytest.raises(ValueError, match="incomplete.*settings"):
        sampling.load_samples(tmp_path / "s.npz")


def test_features_carry_their_layout_and_a_mismatch_is_refused():
    """Issue 24, group 4: (2, 2)-path features with a (4,)-head architecture were accepted (4 paths either
    way); the features now carry their heads per layer, through slices and pickling."""
    import pickle

    from helpers import random_instance

    _, y, _, _, feats = random_instance(heads=(2, 2), P=12)
    assert feats.heads == (2, 2) and feats[:5].heads == (2, 2) and pickle.loads(pickle.dumps(feats)).heads == (2, 2)
    assert type(feats * 2) is np.ndarray and type(feats.sum()) is np.float64  # computed results are plain
    with pytest.raises(ValueError, match=r"heads per layer \(2, 2\), the architecture \(4,\)"):
        ap.Action(ap.PathKernel(feats), y, 0.5, ap.Architecture.uniform((4,), N=10))
    ap.Action(ap.PathKernel(feats), y, 0.5, ap.Architecture.uniform((2, 2), N=10))
    ap.Action(ap.PathKernel(np.asarray(feats)), y, 0.5, ap.Architecture.uniform((4,), N=10))  # layout unknown
    with pytest.raises(ValueError, match="cannot have heads"):
        ap.theory.paths.PathFeatures(np.ones((2, 3, 4)), (3, 2))


@pytest.mark.parametrize("heads", ["22", b"22", 4])
def test_heads_as_a_string_are_refused(heads):
    with pytest.raises(ValueError, match="heads must be"):
        ap.Architecture.uniform(heads, N=10)
    with pytest.raises(ValueError, match="heads must be"):
        ap.Architecture(heads, (10.0, 10.0, 10.0), (1.0, 1.0, 1.0))


def test_training_targets_in_zero_one_warn_and_unknown_variances_raise():
    from helpers import random_instance

    _, y, _, _, feats = random_instance(heads=(2, 2), P=12)
    with pytest.warns(UserWarning, match="0/1"):
        ap.predict(np.eye(4), feats, (y + 1) / 2, 0.5, feats)
    pred = ap.predict(np.eye(4), feats, y, 0.5, feats, return_var=False)
    with pytest.raises(ValueError, match="variance was not computed"):
        pred.generalization_error(y)
    full = ap.predict(np.eye(4), feats, y, 0.5, feats)
    assert np.isfinite(full.generalization_error(y))


def test_features_that_overflow_the_kernels_are_named_as_the_cause():
    from helpers import random_instance

    _, y, _, _, feats = random_instance(heads=(2, 2), P=12)
    big = np.asarray(feats) * 1e160
    with np.errstate(over="ignore", invalid="ignore"):
        with pytest.raises(FloatingPointError, match="features' scale .* overflows"):
            ap.solve(ap.Action(ap.PathKernel(big), y, 0.5, ap.Architecture.uniform((2, 2), N=10)))
        with pytest.raises(FloatingPointError, match="features' scale .* overflows"):
            ap.predict(np.eye(4), big, y, 0.5, big)


def test_a_sampler_needs_two_draws_per_chain():
    from attention_paths import sampling

    with pytest.raises(ValueError, match=r"SamplerConfig\.num_samples must be >= 2, got 1"):
        sampling.SamplerConfig(num_chains=1, num_samples=1)
    sampling.SamplerConfig(num_chains=1, num_samples=2)
