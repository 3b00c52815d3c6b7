"""The two NUTS samplers of the Bayesian network, the ground truth for the theory (spec T§13).

Two samplers share one interface:

* **full-weight** (:func:`sample_full`): every weight (input projection ``V0``, value matrices, readout)
  with its Gaussian prior and the Gaussian likelihood of variance ``tau`` -- the paper's protocol.
  The network is evaluated through the path decomposition (T§3.5) with ``xi^pi`` precomputed.
* **Rao-Blackwellised** (:func:`sample_rao_blackwell`): ``V0`` is integrated out exactly.  Given the other
  weights ``Theta'``, the output is a Gaussian process with kernel ``K^{U(Theta')}`` (T§6.3), so NUTS
  samples ``Theta'`` from its exact marginal posterior (T§13.3) and every sample contributes the exact
  conditional predictor.  This isolates the one approximation of the theory, ``U(Theta') -> U*``.

Weights are sampled in standardised form (``V = sigma Z``, ``Z ~ N(0, 1)``), which leaves the posterior
unchanged.  JAX runs in float64.  This module imports JAX and numpyro; nothing else in the package does.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import asdict, replace

import jax
import jax.numpy as jnp
import numpy as np

with warnings.catch_warnings():
    # numpyro imports tqdm.auto, which warns inside a Jupyter kernel without ipywidgets; our bars are plain tqdm
    warnings.filterwarnings("ignore", message="IProgress not found")
    import numpyro
    import numpyro.distributions as dist
    from numpyro.infer import MCMC, NUTS

from attention_paths.base.progress import quiet
from attention_paths.sampling import SAMPLER_KINDS
from attention_paths.sampling.diagnostics import chain_diagnostics, warn_if_bad
from attention_paths.sampling.samples import PosteriorSamples, SamplerConfig
from attention_paths.theory.architecture import Architecture
from attention_paths.theory.checks import check_features, check_training_set
from attention_paths.theory.kernels import PathKernel
from attention_paths.theory.paths import features_to_path_inputs

# float64 before the first array: importing jax and numpyro creates none (checked in tests/sampling)
jax.config.update("jax_enable_x64", True)

__all__ = [
    "sample",
    "sample_full",
    "sample_rao_blackwell",
    "DEFAULT_TREE_DEPTH",
    "full_model",
    "full_forward",
    "rb_model",
    "marginal_nll",
    "KernelOps",
]


# ------------------------------------------------------------------------------------------ models
def _effective_weights(a, Vs, widths):
    """Stacked effective path weights ``W_1`` [Pi, N_1] from the readout and value matrices (jax)."""
    W = a[None, :]
    for l in reversed(range(len(Vs))):
        W = jnp.einsum("rj,hjk->hrk", W, Vs[l]).reshape(-1, widths[l]) / math.sqrt(widths[l + 1])
    return W


def _weights(arch: Architecture):
    """numpyro sample sites for the value matrices and readout; returns (a, Vs) in physical units."""
    heads, N, s2 = arch.heads, [int(n) for n in arch.widths], arch.sigma2
    Vs = []
    for l, H in enumerate(heads):
        Z = numpyro.sample(f"V{l + 1}", dist.Normal(0.0, 1.0).expand([H, N[l + 1], N[l]]).to_event(3))
        Vs.append(math.sqrt(s2[l]) * Z)
    a = math.sqrt(s2[-1]) * numpyro.sample("a", dist.Normal(0.0, 1.0).expand([N[-1]]).to_event(1))
    return a, Vs


def full_model(xi, y, arch: Architecture, sigma0_2: float, tau: float):
    """numpyro model of the full-weight posterior: every weight with its prior, Gaussian likelihood of variance
    ``tau`` on the outputs :func:`full_forward` of the path inputs ``xi`` [P, Pi, N0]."""
    N = [int(n) for n in arch.widths]
    P, Pi, N0 = xi.shape
    V0 = math.sqrt(sigma0_2) * numpyro.sample("V0", dist.Normal(0.0, 1.0).expand([N[0], N0]).to_event(2))
    a, Vs = _weights(arch)
    f = full_forward(V0, a, Vs, xi, N)
    numpyro.sample("y", dist.Normal(f, math.sqrt(tau)), obs=y)


def full_forward(V0, a, Vs, xi, N):
    """``f = sum_pi w^pi V0 xi^pi / sqrt(N0 N1 Pi)`` (T§3.5) for a batch xi [P, Pi, N0]."""
    W1 = _effective_weights(a, Vs, N)
    B = W1 @ V0  # [Pi, N0]
    return jnp.einsum("ai,pai->p", B, xi) / math.sqrt(xi.shape[2] * N[0] * xi.shape[1])


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
    a, Vs = _weights(arch)
    W1 = _effective_weights(a, Vs, [int(n) for n in arch.widths])
    U = W1 @ W1.T / arch.widths[0]
    numpyro.factor("marginal_likelihood", -nll(0.5 * (U + U.T)))


DEFAULT_TREE_DEPTH = {"full": 10, "rao-blackwell": 5}


def _resolved(config: SamplerConfig, kind: str) -> SamplerConfig:
    """``config`` with the sampler's default tree depth filled in (recorded with the samples)."""
    if config.max_tree_depth is not None:
        return config
    return replace(config, max_tree_depth=DEFAULT_TREE_DEPTH[kind])


def _run(model, config: SamplerConfig, progress: bool | None, **kwargs) -> tuple[MCMC, float]:
    kernel = NUTS(model, target_accept_prob=config.target_accept, max_tree_depth=config.max_tree_depth)
    show = (not quiet()) if progress is None else (progress and not quiet())
    mcmc = MCMC(
        kernel,
        num_warmup=config.num_warmup,
        num_samples=config.num_samples,
        num_chains=config.num_chains,
        chain_method=config.chain_method,
        progress_bar=show,
    )
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*There are not enough devices.*")
        mcmc.run(jax.random.PRNGKey(config.seed), extra_fields=("diverging", "accept_prob", "num_steps"), **kwargs)
    samples = mcmc.get_samples(group_by_chain=True)
    jax.block_until_ready(samples)
    return mcmc, time.perf_counter() - t0


def _sample_U(samples, arch: Architecture) -> np.ndarray:
    """``U(Theta_s)`` for every sample, [chains, draws, Pi, Pi]."""
    N = [int(n) for n in arch.widths]
    s2 = arch.sigma2

    def one(a, *Vs):
        W1 = _effective_weights(math.sqrt(s2[-1]) * a, [math.sqrt(s2[l]) * V for l, V in enumerate(Vs)], N)
        return W1 @ W1.T / N[0]

    names = [f"V{l + 1}" for l in range(arch.n_layers)]
    f = jax.vmap(jax.vmap(one))
    return np.asarray(f(samples["a"], *[samples[n] for n in names]))


# ------------------------------------------------------------------------------------------ samplers
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
    config : :class:`SamplerConfig`

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
    config = _resolved(config, "full")
    mcmc, wall = _run(
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
    U = _sample_U(s, arch)
    diag = chain_diagnostics(mcmc.get_extra_fields(group_by_chain=True), U, f_test)
    warn_if_bad(diag, "full-weight")
    settings = {
        "sampler": asdict(config),
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


def sample_rao_blackwell(
    features_train,
    y,
    tau: float,
    arch: Architecture,
    features_test,
    *,
    config: SamplerConfig = SamplerConfig(),
    progress: bool | None = None,
    max_gram_bytes: float = 2 * 1024**3,
) -> PosteriorSamples:
    """NUTS on the exact marginal posterior of the value matrices and readout, ``V0`` integrated out (T§13.3).

    Parameters
    ----------
    features_train : [P, N0, Pi] path features (``sigma0`` included; :func:`attention_paths.theory.paths.path_features`)
    y : [P] targets
    tau : likelihood variance, > 0
    arch : heads, widths and value/readout prior variances
    features_test : [M, N0, Pi] path features of the test inputs
    config : :class:`SamplerConfig`
    max_gram_bytes : use the precomputed (packed) path-Gram tensor when it fits, else the low-rank kernel form

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
    P, N0, Pi = X.shape
    ops = KernelOps(X, max_gram_bytes)
    nll = marginal_nll(ops, jnp.asarray(y), tau)
    config = _resolved(config, "rao-blackwell")
    mcmc, wall = _run(rb_model, config, progress, nll=nll, arch=arch)
    s = mcmc.get_samples(group_by_chain=True)
    U = _sample_U(s, arch)
    mean, var = _conditional_predictions(U, ops, jnp.asarray(y), tau, jnp.asarray(Xt))
    diag = chain_diagnostics(mcmc.get_extra_fields(group_by_chain=True), U, mean)
    warn_if_bad(diag, "Rao-Blackwellised")
    N = [int(n) for n in arch.widths]
    settings = {
        "sampler": asdict(config),
        "tau": tau,
        "arch": {"heads": arch.heads, "widths": arch.widths, "sigma2": arch.sigma2},
        "P": int(P),
        "M": int(Xt.shape[0]),
        "n_parameters": int(sum(H * N[l + 1] * N[l] for l, H in enumerate(arch.heads)) + N[-1]),
    }
    return PosteriorSamples("rao-blackwell", settings, U, mean, var, diag, wall)


def _conditional_predictions(U, ops: KernelOps, y, tau, Xt, batch: int = 64):
    """Exact GP-regression mean and variance at the test inputs for every sampled ``U``."""
    M, N0, Pi = Xt.shape
    Xtf = Xt.reshape(M, -1)
    Xtr = Xt.reshape(-1, Pi)
    Xf, P = ops.Xf, ops.P

    @jax.jit
    def one(Us):
        K = ops.kernel(Us) + tau * jnp.eye(P)
        Lc = jnp.linalg.cholesky(K)
        k = Xf @ (Xtr @ Us.T).reshape(M, -1).T  # [P, M]
        alpha = jax.scipy.linalg.cho_solve((Lc, True), y)
        v = jax.scipy.linalg.solve_triangular(Lc, k, lower=True)
        kdiag = jnp.einsum("mj,mj->m", Xtf, (Xtr @ Us.T).reshape(M, -1))
        return k.T @ alpha, jnp.maximum(kdiag - jnp.sum(v * v, axis=0), 0.0)

    flat = U.reshape(-1, Pi, Pi)
    means, vars_ = [], []
    for i in range(0, flat.shape[0], batch):
        m, v = jax.lax.map(one, jnp.asarray(flat[i : i + batch]))
        means.append(np.asarray(m))
        vars_.append(np.asarray(v))
    shape = U.shape[:2] + (M,)
    return np.concatenate(means).reshape(shape), np.concatenate(vars_).reshape(shape)


def sample(
    kind: str,
    features_train,
    y,
    tau: float,
    arch: Architecture,
    features_test,
    *,
    path_inputs=None,
    config: SamplerConfig = SamplerConfig(),
    progress: bool | None = None,
) -> PosteriorSamples:
    """Posterior samples by the sampler named ``kind`` (one of :data:`SAMPLER_KINDS`), on one set of inputs.

    Parameters
    ----------
    kind : ``"rao-blackwell"`` (:func:`sample_rao_blackwell`) or ``"full"`` (:func:`sample_full`)
    features_train, features_test : [P, N0, Pi], [M, N0, Pi] path features
        (:func:`attention_paths.theory.paths.path_features`)
    y : [P] targets
    tau : likelihood variance, > 0
    arch : heads, widths and value/readout prior variances
    path_inputs : ``(xi_train, xi_test)``, [P, Pi, N0] and [M, Pi, N0], for the full-weight sampler; by
        default the features' exact inverse with ``sigma0_2 = 1``
        (:func:`attention_paths.theory.paths.features_to_path_inputs`).  Pass the path inputs the features
        were made from where you have them: the inverse is exact only to rounding.
    config, progress : as for the two samplers

    Returns
    -------
    PosteriorSamples with ``kind`` as given
    """
    if kind not in SAMPLER_KINDS:
        raise ValueError(f"sampler kind must be one of {SAMPLER_KINDS}, got {kind!r}")
    if kind == "rao-blackwell":
        return sample_rao_blackwell(features_train, y, tau, arch, features_test, config=config, progress=progress)
    if path_inputs is None:
        path_inputs = features_to_path_inputs(features_train), features_to_path_inputs(features_test)
    xi_train, xi_test = path_inputs
    return sample_full(xi_train, y, tau, arch, xi_test, config=config, progress=progress)
