"""The Rao-Blackwellised sampler's conditional predictions (sampling.predictions): both contractions, any
blocking, equal the theory's GP-regression predictor given each sampled U (issue 34: the quick omniglot run's
predictions from the test-train cross-Gram instead of one low-rank product per draw)."""

import numpy as np
import pytest

import attention_paths as ap
from attention_paths.sampling.predictions import conditional_predictions

TAU = 0.3


def _problem(P=9, N0=7, Pi=4, M=11, chains=2, draws=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((P, N0, Pi)) / np.sqrt(N0 * Pi)
    Xt = rng.standard_normal((M, N0, Pi)) / np.sqrt(N0 * Pi)
    y = rng.standard_normal(P)
    W = rng.standard_normal((chains, draws, Pi, Pi + 2))
    return np.einsum("cdik,cdjk->cdij", W, W) / Pi, X, y, Xt


def test_equal_to_the_theory_predictor_for_every_draw():
    U, X, y, Xt = _problem()
    mean, var = conditional_predictions(U, X, y, TAU, Xt)
    assert mean.shape == var.shape == (2, 5, 11)
    for c in range(2):
        for d in range(5):
            ref = ap.predict(U[c, d], X, y, TAU, Xt)
            np.testing.assert_allclose(mean[c, d], ref.mean, rtol=1e-11, atol=1e-13)
            np.testing.assert_allclose(var[c, d], ref.var, rtol=1e-11, atol=1e-13)


@pytest.mark.parametrize("max_bytes", [1, 4000, 60_000, 2**30])
def test_contractions_and_blocks_agree(max_bytes):
    """cross-Gram = direct, one block = many blocks of draws and of test inputs (max_bytes=1: one of each)."""
    U, X, y, Xt = _problem(draws=7)
    ref = conditional_predictions(U, X, y, TAU, Xt, mode="direct", max_bytes=2**30)
    for mode in ("cross-gram", "direct", "auto"):
        m, v = conditional_predictions(U, X, y, TAU, Xt, mode=mode, max_bytes=max_bytes)
        np.testing.assert_allclose(m, ref[0], rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(v, ref[1], rtol=1e-12, atol=1e-14)


def test_given_kernels_are_used_and_bad_input_refused():
    U, X, y, Xt = _problem()
    K = np.einsum("pni,qnj,dij->dpq", X, X, U.reshape(-1, 4, 4))
    m0, v0 = conditional_predictions(U, X, y, TAU, Xt)
    m1, v1 = conditional_predictions(U, X, y, TAU, Xt, kernels=K)
    np.testing.assert_allclose(m1, m0, rtol=1e-12)
    m2, _ = conditional_predictions(U, X, y, TAU, Xt, kernels=2 * K)  # the kernels given are the ones used
    assert np.abs(m2 - m0).max() > 1e-3
    with pytest.raises(ValueError, match=r"U must have shape \[chains, draws, 4, 4\]"):
        conditional_predictions(U[0], X, y, TAU, Xt)
    with pytest.raises(ValueError, match="mode must be"):
        conditional_predictions(U, X, y, TAU, Xt, mode="lowrank")
