"""Posterior sampling of the Bayesian network with NUTS, the ground truth for the theory (spec T§13).

Two samplers share one interface:

* **full-weight** (:func:`sample_full`): every weight (input projection ``V0``, value matrices, readout)
  with its Gaussian prior and the Gaussian likelihood of variance ``tau`` -- the paper's protocol.
  The network is evaluated through the path decomposition (T§3.5) with ``xi^pi`` precomputed.
* **Rao-Blackwellised** (:func:`sample_rao_blackwell`): ``V0`` is integrated out exactly.  Given the other
  weights ``Theta'``, the output is a Gaussian process with kernel ``K^{U(Theta')}`` (T§6.3), so NUTS
  samples ``Theta'`` from its exact marginal posterior (T§13.3) and every sample contributes the exact
  conditional predictor.  This isolates the one approximation of the theory, ``U(Theta') -> U*``.

Weights are sampled in standardised form (``V = sigma Z``, ``Z ~ N(0, 1)``), which leaves the posterior
unchanged.  JAX runs in float64.  This module imports JAX, numpyro and arviz; the theory modules do not.
"""
from __future__ import annotations

import json
import math
import time
import warnings
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402

with warnings.catch_warnings():
    # numpyro imports tqdm.auto, which warns inside a Jupyter kernel without ipywidgets; our bars are plain tqdm
    warnings.filterwarnings("ignore", message="IProgress not found")
    import numpyro  # noqa: E402
    import numpyro.distributions as dist  # noqa: E402
    from numpyro.infer import MCMC, NUTS  # noqa: E402

with warnings.catch_warnings():
    warnings.simplefilter("ignore", FutureWarning)
    import arviz as az  # noqa: E402

from .architecture import Architecture  # noqa: E402
from .io import _atomic  # noqa: E402
from .kernels import PathKernel  # noqa: E402
from .predictor import accuracy  # noqa: E402
from .progress import quiet  # noqa: E402
from .validation import check_features, check_targets, check_tau  # noqa: E402

__all__ = ["SamplerConfig", "PosteriorSamples", "sample_full", "sample_rao_blackwell", "load_samples",
           "SamplingWarning"]


class SamplingWarning(RuntimeWarning):
    """Raised (as a warning) when diagnostics indicate an unreliable run: R-hat > 1.05 or divergences."""


@dataclass(frozen=True)
class SamplerConfig:
    """NUTS settings.

    Attributes
    ----------
    num_warmup, num_samples : warm-up (adaptation) steps and kept samples per chain
    num_chains : independent chains
    seed : PRNG seed (runs with equal settings are bit-for-bit reproducible on one machine)
    chain_method : ``'sequential'`` (robust on CPU), ``'vectorized'`` (one device, batched) or ``'parallel'``
    target_accept : dual-averaging target acceptance probability
    max_tree_depth : NUTS tree-depth cap; ``None`` (default): 5 for the Rao-Blackwellised sampler, whose
        low-dimensional, well-conditioned posterior needs no longer trajectories (measured: the same ESS per
        draw as with 10, at 31 instead of 55 leapfrog steps per draw; ``benchmarks/README.md``), and 10 for
        the full-weight sampler
    """

    num_warmup: int = 500
    num_samples: int = 500
    num_chains: int = 4
    seed: int = 0
    chain_method: str = "sequential"
    target_accept: float = 0.8
    max_tree_depth: int | None = None

    def __post_init__(self):
        if self.num_samples < 1 or self.num_chains < 1 or self.num_warmup < 0:
            raise ValueError(f"need num_samples >= 1, num_chains >= 1 and num_warmup >= 0; got {self}")
        if self.chain_method not in ("sequential", "vectorized", "parallel"):
            raise ValueError(f"chain_method must be sequential, vectorized or parallel, got {self.chain_method!r}")
        if self.max_tree_depth is not None and self.max_tree_depth < 1:
            raise ValueError(f"max_tree_depth must be a positive integer or None, got {self.max_tree_depth}")
        if not 0 < self.target_accept < 1:
            raise ValueError(f"target_accept must be in (0, 1), got {self.target_accept}")


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


def _full_model(xi, y, arch: Architecture, sigma0_2: float, tau: float):
    N = [int(n) for n in arch.widths]
    P, Pi, N0 = xi.shape
    V0 = math.sqrt(sigma0_2) * numpyro.sample("V0", dist.Normal(0.0, 1.0).expand([N[0], N0]).to_event(2))
    a, Vs = _weights(arch)
    f = _full_forward(V0, a, Vs, xi, N)
    numpyro.sample("y", dist.Normal(f, math.sqrt(tau)), obs=y)


def _full_forward(V0, a, Vs, xi, N):
    """``f = sum_pi w^pi V0 xi^pi / sqrt(N0 N1 Pi)`` (T§3.5) for a batch xi [P, Pi, N0]."""
    W1 = _effective_weights(a, Vs, N)
    B = W1 @ V0  # [Pi, N0]
    return jnp.einsum("ai,pai->p", B, xi) / math.sqrt(xi.shape[2] * N[0] * xi.shape[1])


class _KernelOps:
    """``U -> K^U`` and ``M -> sum_pq M_pq C^{pi pi'}_pq`` in JAX, in the packed-Gram or the low-rank form.

    The packed form stores the path-Gram tensor reduced by its symmetries (``pi <= pi'`` and ``p <= q``, see
    :class:`attention_paths.kernels.PathKernel`): a quarter of the memory traffic of the full tensor.
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


def _marginal_nll_jax(ops: _KernelOps, y, tau):
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


def _rb_model(nll, arch: Architecture):
    a, Vs = _weights(arch)
    W1 = _effective_weights(a, Vs, [int(n) for n in arch.widths])
    U = W1 @ W1.T / arch.widths[0]
    numpyro.factor("marginal_likelihood", -nll(0.5 * (U + U.T)))


# ------------------------------------------------------------------------------------------ results
@dataclass
class PosteriorSamples:
    """Posterior summaries of one sampling run.

    Attributes
    ----------
    kind : ``'full'`` or ``'rao-blackwell'``
    settings : sampler and problem settings (JSON-serialisable)
    U : [chains, draws, Pi, Pi] order parameter ``U(Theta_s) = W_1 W_1^T / N_1`` of every sample
    mean_samples : [chains, draws, M] per-sample test output (full: ``f(x*; Theta_s)``; RB: conditional mean)
    var_samples : [chains, draws, M] per-sample conditional variance (RB only; zeros for full)
    diagnostics : divergences, acceptance, R-hat and bulk ESS of the ``U`` entries and of test outputs
    wall_seconds : sampling time (compilation included)
    """

    kind: str
    settings: dict
    U: np.ndarray
    mean_samples: np.ndarray
    var_samples: np.ndarray
    diagnostics: dict
    wall_seconds: float
    extra: dict = field(default_factory=dict)

    @property
    def U_hat(self) -> np.ndarray:
        """Sampled order parameter: posterior mean of ``U(Theta)`` (T§13.2)."""
        return self.U.mean(axis=(0, 1))

    @property
    def predictive_mean(self) -> np.ndarray:
        """Posterior mean of the network output at the test inputs, [M]."""
        return self.mean_samples.mean(axis=(0, 1))

    @property
    def predictive_var(self) -> np.ndarray:
        """Posterior variance of the output (law of total variance for the RB sampler), [M]."""
        m = self.mean_samples.reshape(-1, self.mean_samples.shape[-1])
        return self.var_samples.reshape(m.shape).mean(0) + m.var(0, ddof=1)

    def accuracy(self, y) -> float:
        return accuracy(self.predictive_mean, y)

    def accuracy_mcse(self, y) -> float:
        """Monte Carlo standard error of :meth:`accuracy` (percentage points), from the spread of the chains'
        own accuracies (batch means over chains): ``std_c(acc_c) / sqrt(C)``; NaN with a single chain."""
        C = self.mean_samples.shape[0]
        if C < 2:
            return float("nan")
        per_chain = [accuracy(self.mean_samples[c].mean(axis=0), y) for c in range(C)]
        return float(np.std(per_chain, ddof=1) / np.sqrt(C))

    def U_mcse(self) -> np.ndarray:
        """Monte Carlo standard error of :attr:`U_hat`, from the bulk ESS of each entry, [Pi, Pi]."""
        U = self.U
        ess = _ess(U)
        return U.reshape(-1, *U.shape[2:]).std(0, ddof=1) / np.sqrt(np.maximum(ess, 1.0))

    def mc_standard_error(self) -> np.ndarray:
        """Monte Carlo standard error of the predictive mean, from the bulk ESS of each test output, [M]."""
        m = self.mean_samples
        ess = _ess(m)
        return m.reshape(-1, m.shape[-1]).std(0, ddof=1) / np.sqrt(np.maximum(ess, 1.0))

    def save(self, path) -> Path:
        """Write all arrays and settings to one ``.npz`` file, atomically."""
        meta = {"kind": self.kind, "settings": self.settings, "diagnostics": self.diagnostics,
                "wall_seconds": self.wall_seconds, "format": 1}
        arrays = {"U": self.U, "mean_samples": self.mean_samples, "var_samples": self.var_samples,
                  "meta_json": np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)}
        arrays.update({f"extra_{k}": np.asarray(v) for k, v in self.extra.items()})
        return _atomic(Path(path), lambda fh: np.savez_compressed(fh, **arrays))


def load_samples(path) -> PosteriorSamples:
    """Reload a run written by :meth:`PosteriorSamples.save` (e.g. one made on a GPU box)."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as f:
            meta = json.loads(bytes(f["meta_json"]).decode())
            arrays = {k: f[k] for k in f.files}
    except FileNotFoundError:
        raise FileNotFoundError(f"sampling result {path} does not exist") from None
    except Exception as err:  # zip, JSON or key errors all mean a damaged file
        raise ValueError(f"sampling result {path} is corrupted or not a sampling result ({err!r})") from None
    missing = [k for k in ("kind", "settings", "diagnostics", "wall_seconds") if k not in meta] + \
        [k for k in ("U", "mean_samples", "var_samples") if k not in arrays]
    if missing:
        raise ValueError(f"sampling result {path} is incomplete: it lacks {missing} (not written by "
                         "PosteriorSamples.save, or damaged)")
    extra = {k[len("extra_"):]: v for k, v in arrays.items() if k.startswith("extra_")}
    return PosteriorSamples(kind=meta["kind"], settings=meta["settings"], U=arrays["U"],
                            mean_samples=arrays["mean_samples"], var_samples=arrays["var_samples"],
                            diagnostics=meta["diagnostics"], wall_seconds=meta["wall_seconds"], extra=extra)


# ------------------------------------------------------------------------------------------ helpers
def _ess(x) -> np.ndarray:
    """Bulk ESS over the last axis' entries of an array [chains, draws, ...]."""
    x = np.asarray(x)
    flat = x.reshape(x.shape[0], x.shape[1], -1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.array([float(az.ess(flat[:, :, j], method="bulk")) for j in range(flat.shape[2])]).reshape(x.shape[2:])


def _rhat(x) -> np.ndarray:
    x = np.asarray(x)
    flat = x.reshape(x.shape[0], x.shape[1], -1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.array([float(az.rhat(flat[:, :, j])) for j in range(flat.shape[2])]).reshape(x.shape[2:])


def _diagnostics(mcmc: MCMC, U, outputs, n_outputs: int = 5) -> dict:
    extra = mcmc.get_extra_fields(group_by_chain=True)
    div = np.asarray(extra["diverging"])
    acc = np.asarray(extra["accept_prob"])
    steps = np.asarray(extra["num_steps"])
    iu = np.triu_indices(U.shape[-1])
    Uent = U[..., iu[0], iu[1]]  # [chains, draws, n_entries]
    out = outputs[..., :n_outputs]
    d = {"divergences": int(div.sum()), "divergences_per_chain": div.sum(axis=1).tolist(),
         "mean_accept_prob": float(acc.mean()), "mean_tree_steps": float(steps.mean()),
         "ess_bulk_U_min": float(_ess(Uent).min()), "ess_bulk_U_median": float(np.median(_ess(Uent))),
         "ess_bulk_outputs_min": float(_ess(out).min())}
    if U.shape[0] > 1:
        d["rhat_U_max"] = float(np.nanmax(_rhat(Uent)))
        d["rhat_outputs_max"] = float(np.nanmax(_rhat(out)))
    else:
        d["rhat_U_max"] = d["rhat_outputs_max"] = float("nan")  # needs several chains
    return d


def _warn_if_bad(d: dict, kind: str):
    problems = []
    if d["divergences"] > 0:
        problems.append(f"{d['divergences']} divergent transitions")
    for key in ("rhat_U_max", "rhat_outputs_max"):
        if d[key] > 1.05:
            problems.append(f"{key} = {d[key]:.3f} > 1.05")
    if problems:
        warnings.warn(f"{kind} sampler: " + "; ".join(problems) + " -- treat the estimates with care",
                      SamplingWarning, stacklevel=3)


def _check_inputs(xi_or_feats, y, tau, what):
    arr = check_features(xi_or_feats, what, "a 3-d array")
    return arr, check_targets(y, arr.shape[0]), check_tau(tau)


DEFAULT_TREE_DEPTH = {"full": 10, "rao-blackwell": 5}


def _resolved(config: SamplerConfig, kind: str) -> SamplerConfig:
    """``config`` with the sampler's default tree depth filled in (recorded with the samples)."""
    if config.max_tree_depth is not None:
        return config
    return replace(config, max_tree_depth=DEFAULT_TREE_DEPTH[kind])


def _run(model, config: SamplerConfig, progress: bool | None, **kwargs) -> tuple[MCMC, float]:
    kernel = NUTS(model, target_accept_prob=config.target_accept, max_tree_depth=config.max_tree_depth)
    show = (not quiet()) if progress is None else (progress and not quiet())
    mcmc = MCMC(kernel, num_warmup=config.num_warmup, num_samples=config.num_samples,
                num_chains=config.num_chains, chain_method=config.chain_method, progress_bar=show)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*There are not enough devices.*")
        mcmc.run(jax.random.PRNGKey(config.seed), extra_fields=("diverging", "accept_prob", "num_steps"),
                 **kwargs)
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
def sample_full(xi_train, y, tau: float, arch: Architecture, xi_test, *, sigma0_2: float = 1.0,
                config: SamplerConfig = SamplerConfig(), progress: bool | None = None) -> PosteriorSamples:
    """Full-weight NUTS over ``V0``, the value matrices and the readout (the paper's protocol, T§13.1).

    Parameters
    ----------
    xi_train : [P, Pi, N0] path-processed training inputs (:func:`attention_paths.paths.path_inputs`)
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
    xi_train, y, tau = _check_inputs(xi_train, y, tau, "training path inputs")
    xi_test = check_features(xi_test, "test path inputs", f"[M, {xi_train.shape[1]}, {xi_train.shape[2]}]")
    if xi_test.shape[1:] != xi_train.shape[1:]:
        raise ValueError(f"test path inputs must have shape [M, {xi_train.shape[1]}, {xi_train.shape[2]}], "
                         f"got {xi_test.shape}")
    if arch.n_paths != xi_train.shape[1]:
        raise ValueError(f"architecture has {arch.n_paths} paths, inputs have {xi_train.shape[1]}")
    config = _resolved(config, "full")
    mcmc, wall = _run(_full_model, config, progress, xi=jnp.asarray(xi_train), y=jnp.asarray(y), arch=arch,
                      sigma0_2=float(sigma0_2), tau=tau)
    s = mcmc.get_samples(group_by_chain=True)
    N = [int(n) for n in arch.widths]
    s2 = arch.sigma2
    xt = jnp.asarray(xi_test)

    def out(V0, a, *Vs):
        return _full_forward(math.sqrt(sigma0_2) * V0, math.sqrt(s2[-1]) * a,
                             [math.sqrt(s2[l]) * V for l, V in enumerate(Vs)], xt, N)

    names = [f"V{l + 1}" for l in range(arch.n_layers)]
    f_test = np.asarray(jax.vmap(jax.vmap(out))(s["V0"], s["a"], *[s[n] for n in names]))
    U = _sample_U(s, arch)
    diag = _diagnostics(mcmc, U, f_test)
    _warn_if_bad(diag, "full-weight")
    settings = {"sampler": asdict(config), "tau": tau, "sigma0_2": float(sigma0_2),
                "arch": {"heads": arch.heads, "widths": arch.widths, "sigma2": arch.sigma2},
                "P": int(xi_train.shape[0]), "M": int(xi_test.shape[0]),
                "n_parameters": int(N[0] * xi_train.shape[2] + sum(H * N[l + 1] * N[l] for l, H in enumerate(arch.heads))
                                    + N[-1])}
    return PosteriorSamples("full", settings, U, f_test, np.zeros_like(f_test), diag, wall)


def sample_rao_blackwell(features_train, y, tau: float, arch: Architecture, features_test, *,
                         config: SamplerConfig = SamplerConfig(), progress: bool | None = None,
                         max_gram_bytes: float = 2 * 1024**3) -> PosteriorSamples:
    """NUTS on the exact marginal posterior of the value matrices and readout, ``V0`` integrated out (T§13.3).

    Parameters
    ----------
    features_train : [P, N0, Pi] path features (``sigma0`` included; :func:`attention_paths.paths.path_features`)
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
    X, y, tau = _check_inputs(features_train, y, tau, "training path features")
    Xt = check_features(features_test, "test features", f"[M, {X.shape[1]}, {X.shape[2]}]")
    if Xt.shape[1:] != X.shape[1:]:
        raise ValueError(f"test features must have shape [M, {X.shape[1]}, {X.shape[2]}], got {Xt.shape}")
    if arch.n_paths != X.shape[2]:
        raise ValueError(f"architecture has {arch.n_paths} paths, features have {X.shape[2]}")
    P, N0, Pi = X.shape
    ops = _KernelOps(X, max_gram_bytes)
    nll = _marginal_nll_jax(ops, jnp.asarray(y), tau)
    config = _resolved(config, "rao-blackwell")
    mcmc, wall = _run(_rb_model, config, progress, nll=nll, arch=arch)
    s = mcmc.get_samples(group_by_chain=True)
    U = _sample_U(s, arch)
    mean, var = _conditional_predictions(U, ops, jnp.asarray(y), tau, jnp.asarray(Xt))
    diag = _diagnostics(mcmc, U, mean)
    _warn_if_bad(diag, "Rao-Blackwellised")
    N = [int(n) for n in arch.widths]
    settings = {"sampler": asdict(config), "tau": tau,
                "arch": {"heads": arch.heads, "widths": arch.widths, "sigma2": arch.sigma2},
                "P": int(P), "M": int(Xt.shape[0]),
                "n_parameters": int(sum(H * N[l + 1] * N[l] for l, H in enumerate(arch.heads)) + N[-1])}
    return PosteriorSamples("rao-blackwell", settings, U, mean, var, diag, wall)


def _conditional_predictions(U, ops: _KernelOps, y, tau, Xt, batch: int = 64):
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
        m, v = jax.lax.map(one, jnp.asarray(flat[i:i + batch]))
        means.append(np.asarray(m))
        vars_.append(np.asarray(v))
    shape = U.shape[:2] + (M,)
    return np.concatenate(means).reshape(shape), np.concatenate(vars_).reshape(shape)
