"""The full-weight NUTS sampler (registered as ``"full"``): every weight (input projection ``V0``, value
matrices, readout) with its Gaussian prior and the Gaussian likelihood of variance ``tau`` -- the paper's
protocol (T§13.1).  The network is evaluated through the path decomposition (T§3.5) with ``xi^pi`` precomputed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np

from attention_paths.sampling.diagnostics import chain_diagnostics, warn_if_bad
from attention_paths.sampling.interface import Sampler

# numpyro through nuts, which imports it with tqdm.auto's IProgress warning silenced (Jupyter without ipywidgets)
from attention_paths.sampling.nuts import (
    dist,
    effective_weights,
    numpyro,
    recorded_settings,
    run_nuts,
    sample_U,
    weight_sites,
    with_tree_depth,
)
from attention_paths.sampling.samples import PosteriorSamples, SamplerConfig
from attention_paths.theory.architecture import Architecture
from attention_paths.theory.checks import check_features, check_training_set
from attention_paths.theory.paths import features_to_path_inputs

__all__ = ["FullConfig", "FullWeightSampler", "sample_full", "full_model", "full_forward"]


@dataclass(frozen=True)
class FullConfig(SamplerConfig):
    """:class:`SamplerConfig` plus the full-weight sampler's own input: ``path_inputs``, the pair
    ``(xi_train, xi_test)`` of path inputs, [P, Pi, N0] and [M, Pi, N0]
    (:func:`attention_paths.theory.paths.path_inputs`).  ``None`` (default): the features' exact inverse with
    ``sigma0_2 = 1`` (:func:`attention_paths.theory.paths.features_to_path_inputs`); pass the path inputs the
    features were made from where you have them, since the inverse is exact only to rounding.  The inputs
    are data, not settings: they are neither compared nor recorded with the samples."""

    path_inputs: tuple | None = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        super().__post_init__()
        xi = self.path_inputs
        if xi is not None and (not isinstance(xi, (tuple, list)) or len(xi) != 2):
            raise ValueError(
                "FullConfig.path_inputs must be the pair (xi_train, xi_test) of path inputs, got "
                f"{type(self.path_inputs).__name__}"
            )


def full_model(xi, y, arch: Architecture, sigma0_2: float, tau: float):
    """numpyro model of the full-weight posterior: every weight with its prior, Gaussian likelihood of variance
    ``tau`` on the outputs :func:`full_forward` of the path inputs ``xi`` [P, Pi, N0]."""
    N = [int(n) for n in arch.widths]
    P, Pi, N0 = xi.shape
    V0 = math.sqrt(sigma0_2) * numpyro.sample("V0", dist.Normal(0.0, 1.0).expand([N[0], N0]).to_event(2))
    a, Vs = weight_sites(arch)
    f = full_forward(V0, a, Vs, xi, N)
    numpyro.sample("y", dist.Normal(f, math.sqrt(tau)), obs=y)


def full_forward(V0, a, Vs, xi, N):
    """``f = sum_pi w^pi V0 xi^pi / sqrt(N0 N1 Pi)`` (T§3.5) for a batch xi [P, Pi, N0]."""
    W1 = effective_weights(a, Vs, N)
    B = W1 @ V0  # [Pi, N0]
    return jnp.einsum("ai,pai->p", B, xi) / math.sqrt(xi.shape[2] * N[0] * xi.shape[1])


def sample_full(
    xi_train,
    y,
    tau: float,
    arch: Architecture,
    xi_test,
    *,
    sigma0_2: float = 1.0,
    config: SamplerConfig = SamplerConfig(),
    progress: bool | None = None,
) -> PosteriorSamples:
    """Full-weight NUTS over ``V0``, the value matrices and the readout (the paper's protocol, T§13.1).

    Parameters
    ----------
    xi_train : [P, Pi, N0] path-processed training inputs (:func:`attention_paths.theory.paths.path_inputs`)
    y : [P] targets
    tau : likelihood variance (temperature), > 0
    arch : heads, widths and value/readout prior variances
    xi_test : [M, Pi, N0] path-processed test inputs
    sigma0_2 : prior variance of ``V0``
    config : :class:`SamplerConfig` (a :class:`FullConfig`'s ``path_inputs`` are not used here: the path inputs
        are the arguments)

    Returns
    -------
    PosteriorSamples with per-sample test outputs ``f(x*; Theta_s)``
    """
    xi_train, y, tau = check_training_set(xi_train, y, tau, "training path inputs")
    xi_test = check_features(xi_test, "test path inputs", f"[M, {xi_train.shape[1]}, {xi_train.shape[2]}]")
    if xi_test.shape[1:] != xi_train.shape[1:]:
        raise ValueError(
            f"test path inputs must have shape [M, {xi_train.shape[1]}, {xi_train.shape[2]}], got {xi_test.shape}"
        )
    if arch.n_paths != xi_train.shape[1]:
        raise ValueError(f"architecture has {arch.n_paths} paths, inputs have {xi_train.shape[1]}")
    config = with_tree_depth(config, "full")
    mcmc, wall = run_nuts(
        full_model,
        config,
        progress,
        xi=jnp.asarray(xi_train),
        y=jnp.asarray(y),
        arch=arch,
        sigma0_2=float(sigma0_2),
        tau=tau,
    )
    s = mcmc.get_samples(group_by_chain=True)
    N = [int(n) for n in arch.widths]
    s2 = arch.sigma2
    xt = jnp.asarray(xi_test)

    def out(V0, a, *Vs):
        return full_forward(
            math.sqrt(sigma0_2) * V0, math.sqrt(s2[-1]) * a, [math.sqrt(s2[l]) * V for l, V in enumerate(Vs)], xt, N
        )

    names = [f"V{l + 1}" for l in range(arch.n_layers)]
    f_test = np.asarray(jax.vmap(jax.vmap(out))(s["V0"], s["a"], *[s[n] for n in names]))
    U = sample_U(s, arch)
    diag = chain_diagnostics(mcmc.get_extra_fields(group_by_chain=True), U, f_test)
    warn_if_bad(diag, "full-weight")
    settings = {
        "sampler": recorded_settings(config),
        "tau": tau,
        "sigma0_2": float(sigma0_2),
        "arch": {"heads": arch.heads, "widths": arch.widths, "sigma2": arch.sigma2},
        "P": int(xi_train.shape[0]),
        "M": int(xi_test.shape[0]),
        "n_parameters": int(
            N[0] * xi_train.shape[2] + sum(H * N[l + 1] * N[l] for l, H in enumerate(arch.heads)) + N[-1]
        ),
    }
    return PosteriorSamples("full", settings, U, f_test, np.zeros_like(f_test), diag, wall)


class FullWeightSampler(Sampler):
    """NUTS on every weight (:func:`sample_full`), on the path inputs of its :class:`FullConfig` (by default the
    features' exact inverse).  Its ``V0`` has ``N0 x N`` entries, so width sweeps run it only at the widths
    their config lists for it."""

    name = "full"
    config_type = FullConfig
    every_width = False

    def sample(self, features_train, y, tau, arch, features_test, config, progress=None) -> PosteriorSamples:
        xi = getattr(config, "path_inputs", None)
        if xi is None:
            xi = features_to_path_inputs(features_train), features_to_path_inputs(features_test)
        xi_train, xi_test = xi
        return sample_full(xi_train, y, tau, arch, xi_test, config=config, progress=progress)
