"""The Rao-Blackwellised NUTS sampler (registered as ``"rao-blackwell"``).

``V0`` is integrated out exactly.  Given the other weights ``Theta'``, the output is a Gaussian process with
kernel ``K^{U(Theta')}`` (T§6.3), so NUTS samples ``Theta'`` from its exact marginal posterior (T§13.3) and
every sample contributes the exact conditional predictor.  This isolates the one approximation of the theory,
``U(Theta') -> U*``.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from attention_paths.sampling.diagnostics import chain_diagnostics, warn_if_bad
from attention_paths.sampling.interface import Sampler

# numpyro through nuts, which imports it with tqdm.auto's IProgress warning silenced (Jupyter without ipywidgets)
from attention_paths.sampling.nuts import (
    effective_weights,
    numpyro,  # noqa: I001
    order_parameter_of,
    recorded_settings,
    run_nuts,
    weight_sites,
    with_tree_depth,
)
from attention_paths.sampling.predictions import conditional_predictions
from attention_paths.sampling.samples import PosteriorSamples, SamplerConfig
from attention_paths.theory.architecture import Architecture
from attention_paths.theory.checks import check_features, check_training_set
from attention_paths.theory.kernels import PathKernel

__all__ = [
    "RaoBlackwellConfig",
    "RaoBlackwellSampler",
    "sample_rao_blackwell",
    "rb_model",
    "marginal_nll",
    "KernelOps",
    "run_marginal",
]


@dataclass(frozen=True)
class RaoBlackwellConfig(SamplerConfig):
    """:class:`SamplerConfig` plus the Rao-Blackwellised sampler's own setting: ``max_gram_bytes``, the size
    up to which the precomputed (packed) path-Gram tensor is used, else the low-rank kernel form."""

    RANGES = SamplerConfig.RANGES | {"max_gram_bytes": "> 0"}

    max_gram_bytes: float = 2 * 1024**3


class KernelOps:
    """``U -> K^U`` and ``M -> sum_pq M_pq C^{pi pi'}_pq`` in JAX, in the packed-Gram or the low-rank form.

    The packed form stores the path-Gram tensor reduced by its symmetries (``pi <= pi'`` and ``p <= q``, see
    :class:`attention_paths.theory.kernels.PathKernel`): a quarter of the memory traffic of the full tensor.
    """

    def __init__(self, X, max_gram_bytes: float = 2 * 1024**3, mode: str = "auto"):
        P, N0, Pi = X.shape
        self.P, self.Pi = P, Pi
        self.Xf, self.Xr = jnp.asarray(X.reshape(P, -1)), jnp.asarray(X.reshape(-1, Pi))
        if mode == "auto":
            mode = "packed" if 8.0 * P * (P + 1) * Pi * (Pi + 1) / 4 <= max_gram_bytes else "lowrank"
        self.mode = mode
        if mode == "packed":
            pk = PathKernel(X, mode="gram")
            self.packed = jnp.asarray(pk._packed)
            self.pairs = tuple(jnp.asarray(i) for i in pk._pairs)
            self.tri = tuple(jnp.asarray(i) for i in pk._tri)
            self.w_tri = jnp.where(self.tri[0] == self.tri[1], 1.0, 2.0)
            self.w_pairs = jnp.where(self.pairs[0] == self.pairs[1], 1.0, 0.5)

    def kernel(self, U):
        if self.mode == "packed":
            Us = 0.5 * (U + U.T)
            K = jnp.zeros((self.P, self.P)).at[self.tri].set(Us[self.pairs] @ self.packed)
            return K + K.T - jnp.diag(jnp.diag(K))
        return self.Xf @ (self.Xr @ U.T).reshape(self.P, -1).T

    def contract(self, M):
        """For a symmetric ``M`` [P, P] -> [Pi, Pi]."""
        if self.mode == "packed":
            g = self.packed @ (M[self.tri] * self.w_tri)
            G = jnp.zeros((self.Pi, self.Pi)).at[self.pairs].set(g * self.w_pairs)
            return G + G.T - jnp.diag(jnp.diag(G))
        return self.Xr.T @ (M @ self.Xf).reshape(-1, self.Pi)


def marginal_nll(ops: KernelOps, y, tau):
    """``U -> (ln det(K^U + tau I) + Y^T (K^U + tau I)^{-1} Y) / 2`` in JAX, with the analytic gradient.

    The gradient ``(A - alpha alpha^T) / 2`` with respect to ``K`` (T§8) replaces autodiff through the
    Cholesky factorisation, which is an order of magnitude slower on CPUs.
    """
    P = y.shape[0]

    @jax.custom_vjp
    def nll(U):
        return _fwd(U)[0]

    def _fwd(U):
        K = ops.kernel(U) + tau * jnp.eye(P)
        Lc = jnp.linalg.cholesky(K)
        alpha = jax.scipy.linalg.cho_solve((Lc, True), y)
        return jnp.sum(jnp.log(jnp.diag(Lc))) + 0.5 * y @ alpha, (Lc, alpha)

    def _bwd(res, g):
        Lc, alpha = res
        M = 0.5 * (jax.scipy.linalg.cho_solve((Lc, True), jnp.eye(P)) - jnp.outer(alpha, alpha))
        return (g * ops.contract(0.5 * (M + M.T)),)

    nll.defvjp(_fwd, _bwd)
    return nll


def rb_model(nll, arch: Architecture):
    """numpyro model of the Rao-Blackwellised posterior: the weights but ``V0`` with their priors, and the exact
    marginal likelihood ``-nll(U(Theta'))`` of the integrated-out input projection (T§13.3)."""
    a, Vs = weight_sites(arch)
    W1 = effective_weights(a, Vs, [int(n) for n in arch.widths])
    U = W1 @ W1.T / arch.widths[0]
    numpyro.factor("marginal_likelihood", -nll(0.5 * (U + U.T)))


def run_marginal(
    X, y, tau: float, arch: Architecture, config: SamplerConfig, progress, max_gram_bytes: float, keep=None
):
    """NUTS on the exact marginal posterior of the value weights and readout (``V0`` integrated out, T§13.3) for
    path features ``X`` [P, N0, Pi]; returns what :func:`~attention_paths.sampling.nuts.run_nuts` returns (MCMC
    object, wall time, extra fields).  The Rao-Blackwellised sampler and the collapsed full-weight one
    (:mod:`.full`) both run it; ``keep``: what is stored of each draw (:func:`~.nuts.run_nuts`)."""
    nll = marginal_nll(KernelOps(X, max_gram_bytes), jnp.asarray(y), tau)
    return run_nuts(rb_model, config, progress, keep=keep, nll=nll, arch=arch)


def sample_rao_blackwell(
    features_train,
    y,
    tau: float,
    arch: Architecture,
    features_test,
    *,
    config: SamplerConfig = SamplerConfig(),
    progress: bool | None = None,
    max_gram_bytes: float | None = None,
) -> PosteriorSamples:
    """NUTS on the exact marginal posterior of the value matrices and readout, ``V0`` integrated out (T§13.3).

    Parameters
    ----------
    features_train : [P, N0, Pi] path features (``sigma0`` included; :func:`attention_paths.theory.paths.path_features`)
    y : [P] targets
    tau : likelihood variance, > 0
    arch : heads, widths and value/readout prior variances
    features_test : [M, N0, Pi] path features of the test inputs
    config : :class:`SamplerConfig` or :class:`RaoBlackwellConfig`
    max_gram_bytes : use the precomputed (packed) path-Gram tensor when it fits, else the low-rank kernel form;
        by default the config's (:class:`RaoBlackwellConfig`, 2 GiB)

    Returns
    -------
    PosteriorSamples with the per-sample conditional predictive mean and variance at the test inputs
    """
    X, y, tau = check_training_set(features_train, y, tau, "training path features")
    Xt = check_features(features_test, "test features", f"[M, {X.shape[1]}, {X.shape[2]}]")
    if Xt.shape[1:] != X.shape[1:]:
        raise ValueError(f"test features must have shape [M, {X.shape[1]}, {X.shape[2]}], got {Xt.shape}")
    if arch.n_paths != X.shape[2]:
        raise ValueError(f"architecture has {arch.n_paths} paths, features have {X.shape[2]}")
    if max_gram_bytes is None:
        max_gram_bytes = getattr(config, "max_gram_bytes", RaoBlackwellConfig.max_gram_bytes)
    P, N0, Pi = X.shape
    config = with_tree_depth(config, "rao-blackwell")
    # each draw kept as its order parameter only, [Pi, Pi] instead of the value matrices (8 MB a head at N = 500)
    keep = order_parameter_of(arch)
    mcmc, wall, extra = run_marginal(X, y, tau, arch, config, progress, max_gram_bytes, keep=keep)
    U = np.asarray(mcmc.get_samples(group_by_chain=True)["U"], dtype=np.float64)
    mean, var = conditional_predictions(U, X, y, tau, Xt)
    diag = chain_diagnostics(extra, U, mean, max_tree_depth=config.max_tree_depth)
    warn_if_bad(diag, "Rao-Blackwellised")
    N = [int(n) for n in arch.widths]
    settings = {
        "sampler": recorded_settings(config),
        "tau": tau,
        "arch": {"heads": arch.heads, "widths": arch.widths, "sigma2": arch.sigma2},
        "P": int(P),
        "M": int(Xt.shape[0]),
        "n_parameters": int(sum(H * N[l + 1] * N[l] for l, H in enumerate(arch.heads)) + N[-1]),
    }
    return PosteriorSamples("rao-blackwell", settings, U, mean, var, diag, wall)


class RaoBlackwellSampler(Sampler):
    """NUTS on the value matrices and readout with ``V0`` integrated out (:func:`sample_rao_blackwell`); its
    cost per draw does not depend on ``N0``, so width sweeps run it at every width."""

    name = "rao-blackwell"
    config_type = RaoBlackwellConfig
    every_width = True

    def sample(self, features_train, y, tau, arch, features_test, config, progress=None) -> PosteriorSamples:
        return sample_rao_blackwell(features_train, y, tau, arch, features_test, config=config, progress=progress)
