"""The full-weight sampler (registered as ``"full"``): every weight (input projection ``V0``, value
matrices, readout) with its Gaussian prior and the Gaussian likelihood of variance ``tau`` -- the paper's
protocol (T§13.1).  The network is evaluated through the path decomposition (T§3.5) with ``xi^pi`` precomputed.

The output is linear in ``V0``, so given the other weights ``Theta'`` its posterior is Gaussian
(:func:`v0_conditional_draw`).  Three ways to sample (:attr:`FullConfig.v0_update`):

* ``"collapsed"``: NUTS on the exact marginal posterior of ``Theta'`` (``V0`` integrated out, the
  Rao-Blackwellised sampler's target, T§13.3), then ``V0`` drawn exactly from its conditional for every kept
  draw.  Each sample is a draw of the full posterior; the trees are those of the marginal.
* ``"gibbs"``: ``V0`` drawn from its conditional after every NUTS transition of ``Theta'`` given ``V0`` (NUTS
  within Gibbs).  Where the likelihood is tight the two blocks are strongly coupled and it mixes poorly.
* ``"nuts"`` (default): one NUTS over all the weights jointly (the reference's sampler).  Its trajectories must
  resolve the data-constrained directions of ``V0`` (curvature up to the kernel's largest eigenvalue over
  ``tau``) and cross the prior-scale ones: on the hidden-Markov-chain task (``tau = 0.01``) every draw reaches
  the depth cap.

Which is faster depends on the problem (``benchmarks/README.md``, "Samplers"): on the hidden-Markov-chain task
(P = 100) the collapsed sampler gives 10 times the ESS per second of joint NUTS; on an image-sized problem
(P = 600), where each of its gradients needs a P x P Cholesky factorisation, joint NUTS gives 7 times its ESS
per second (its trees do not reach the cap there), so joint NUTS stays the default.
"""

from __future__ import annotations

import math
import time
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
from attention_paths.sampling.rao_blackwell import RaoBlackwellConfig, run_marginal
from attention_paths.sampling.samples import PosteriorSamples, SamplerConfig
from attention_paths.theory.architecture import Architecture
from attention_paths.theory.checks import check_features, check_training_set
from attention_paths.theory.paths import features_to_path_inputs, path_features

__all__ = ["FullConfig", "FullWeightSampler", "sample_full", "full_model", "full_forward", "v0_conditional_draw"]

V0_UPDATES = ("collapsed", "gibbs", "nuts")


@dataclass(frozen=True)
class FullConfig(SamplerConfig):
    """:class:`SamplerConfig` plus the full-weight sampler's own input: ``path_inputs``, the pair
    ``(xi_train, xi_test)`` of path inputs, [P, Pi, N0] and [M, Pi, N0]
    (:func:`attention_paths.theory.paths.path_inputs`).  ``None`` (default): the features' exact inverse with
    ``sigma0_2 = 1`` (:func:`attention_paths.theory.paths.features_to_path_inputs`); pass the path inputs the
    features were made from where you have them, since the inverse is exact only to rounding.  The inputs
    are data, not settings: they are neither compared nor recorded with the samples."""

    path_inputs: tuple | None = field(default=None, compare=False, repr=False)
    # recorded as settings["v0_update"]; samples written before it existed (issue 48) were made with "nuts"
    v0_update: str = "nuts"
    """``"nuts"`` (default): NUTS on every weight jointly; ``"collapsed"``: NUTS on the marginal of the other
    weights, ``V0`` drawn from its conditional for each kept draw; ``"gibbs"``: ``V0`` drawn after every NUTS
    transition of the others (see the module's docstring)."""

    def __post_init__(self):
        xi = self.path_inputs  # checked before the generic field checks, whose message would be less precise
        if xi is not None and (not isinstance(xi, (tuple, list)) or len(xi) != 2):
            raise ValueError(
                "FullConfig.path_inputs must be the pair (xi_train, xi_test) of path inputs, got "
                f"{type(self.path_inputs).__name__}"
            )
        super().__post_init__()
        if self.v0_update not in V0_UPDATES:
            raise ValueError(f"FullConfig.v0_update must be one of {V0_UPDATES}, got {self.v0_update!r}")


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


def v0_conditional_draw(xi, y, tau: float, arch: Architecture, sigma0_2: float):
    """The exact draw of ``V0`` given the other weights in :func:`full_model`: ``draw(rng_key, sites)`` returns
    the standardised ``V0`` [N_0, N0] drawn from its Gaussian conditional given the sample sites ``sites`` of
    the value matrices and readout (``V1``, ..., ``a``, standardised as in the model).

    With ``Z = V0 / sigma0`` the outputs are ``f = A Z`` (T§3.5), ``A Z = sigma0 sum_pi (W_1 Z)_pi xi^pi / c``,
    ``c = sqrt(N0 N_0 Pi)``, and ``A A^T = K`` is the kernel of the effective weights ``W_1`` [Pi, N_0] (T§6.3).
    The draw is Matheron's rule (the sampler of Bhattacharya, Chakraborty and Mallick, 2016): ``u ~ N(0, I)``,
    ``e ~ N(0, tau I)``, ``Z = u + A^T (K + tau I)^{-1} (y - A u - e)``, one ``P x P`` Cholesky factorisation and
    no ``N_0 N0``-sized matrix.  ``K`` is formed as ``G G^T`` with ``G = A`` reshaped [P, N_0 N0] when
    ``N_0 <= Pi``, else through ``W_1 W_1^T`` [Pi, Pi]; either way at most ``P^2 min(N_0, Pi) N0`` products.
    """
    P, Pi, N0 = xi.shape
    N = [int(n) for n in arch.widths]
    s2 = arch.sigma2
    scale = math.sqrt(sigma0_2 / (N0 * N[0] * Pi))  # sigma0 / c
    Xr = xi.reshape(P, Pi * N0)
    eye = jnp.eye(P)

    def draw(rng_key, sites):
        a = math.sqrt(s2[-1]) * sites["a"]
        W1 = effective_weights(a, [math.sqrt(s2[l]) * sites[f"V{l + 1}"] for l in range(len(N) - 1)], N)
        if N[0] <= Pi:
            G = scale * jnp.einsum("ai,pak->pik", W1, xi).reshape(P, -1)
            K = G @ G.T
        else:
            K = scale**2 * jnp.einsum("ab,pbk->pak", W1 @ W1.T, xi).reshape(P, -1) @ Xr.T
        k_u, k_e = jax.random.split(rng_key)
        u = jax.random.normal(k_u, (N[0], N0))
        e = math.sqrt(tau) * jax.random.normal(k_e, (P,))
        L = jnp.linalg.cholesky(K + tau * eye)
        w = jax.scipy.linalg.cho_solve((L, True), y - scale * jnp.einsum("ak,pak->p", W1 @ u, xi) - e)
        return u + scale * (W1.T @ jnp.einsum("p,pak->ak", w, xi))

    return draw


def _collapsed_run(xi, y, tau, arch, sigma0_2, config, progress):
    """NUTS on the marginal of the value weights and readout (V0 integrated out), then one exact ``V0`` per
    kept draw, seeded by ``config.seed``; (the samples with ``V0``, wall time, extra fields)."""
    X = path_features(np.asarray(xi), sigma0_2)
    max_gram_bytes = getattr(config, "max_gram_bytes", RaoBlackwellConfig.max_gram_bytes)
    mcmc, wall, extra = run_marginal(X, y, tau, arch, config, progress, max_gram_bytes)
    t0 = time.perf_counter()
    s = mcmc.get_samples(group_by_chain=True)
    C, D = s["a"].shape[:2]
    flat = {k: v.reshape((C * D,) + v.shape[2:]) for k, v in s.items()}
    keys = jax.random.split(jax.random.fold_in(jax.random.PRNGKey(config.seed), 48), C * D)
    draw = jax.jit(v0_conditional_draw(xi, y, tau, arch, sigma0_2))
    V0 = jax.lax.map(lambda kv: draw(kv[0], kv[1]), (keys, flat))
    s = dict(s, V0=V0.reshape((C, D) + V0.shape[1:]))
    jax.block_until_ready(s["V0"])
    return s, wall + time.perf_counter() - t0, extra


def _joint_run(xi, y, tau, arch, sigma0_2, config, progress):
    """NUTS on every weight (``v0_update="nuts"``) or on the value weights and readout with ``V0`` drawn by
    its Gibbs update after every transition (``"gibbs"``); (the samples, wall time, extra fields)."""
    gibbs = None
    if getattr(config, "v0_update", "nuts") == "gibbs":
        draw = v0_conditional_draw(xi, y, tau, arch, sigma0_2)
        gibbs = (lambda rng_key, gibbs_sites, hmc_sites: {"V0": draw(rng_key, hmc_sites)}), ["V0"]
    model_args = dict(xi=xi, y=y, arch=arch, sigma0_2=sigma0_2, tau=tau)
    mcmc, wall, extra = run_nuts(full_model, config, progress, gibbs=gibbs, **model_args)
    return mcmc.get_samples(group_by_chain=True), wall, extra


def _test_outputs(s, arch, sigma0_2, xt) -> np.ndarray:
    """``f(x*; Theta_s)`` [chains, draws, M] of every sample ``s`` (standardised sites) at the path inputs
    ``xt``."""
    N, s2 = [int(n) for n in arch.widths], arch.sigma2

    def out(V0, a, *Vs):
        scaled = [math.sqrt(s2[l]) * V for l, V in enumerate(Vs)]
        return full_forward(math.sqrt(sigma0_2) * V0, math.sqrt(s2[-1]) * a, scaled, xt, N)

    names = [f"V{l + 1}" for l in range(arch.n_layers)]
    return np.asarray(jax.vmap(jax.vmap(out))(s["V0"], s["a"], *[s[n] for n in names]))


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
    """Posterior samples of ``V0``, the value matrices and the readout (the paper's protocol, T§13.1).

    Parameters
    ----------
    xi_train : [P, Pi, N0] path-processed training inputs (:func:`attention_paths.theory.paths.path_inputs`)
    y : [P] targets
    tau : likelihood variance (temperature), > 0
    arch : heads, widths and value/readout prior variances
    xi_test : [M, Pi, N0] path-processed test inputs
    sigma0_2 : prior variance of ``V0``
    config : :class:`SamplerConfig` or :class:`FullConfig`, whose ``v0_update`` chooses how ``V0`` moves
        (default ``"nuts"``); a :class:`FullConfig`'s ``path_inputs`` are not used here: the path inputs are the
        arguments

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
    v0_update = getattr(config, "v0_update", FullConfig.v0_update)
    config = with_tree_depth(config, "rao-blackwell" if v0_update == "collapsed" else "full")
    xi_j, y_j = jnp.asarray(xi_train), jnp.asarray(y)
    run = _collapsed_run if v0_update == "collapsed" else _joint_run
    s, wall, extra = run(xi_j, y_j, tau, arch, float(sigma0_2), config, progress)
    N = [int(n) for n in arch.widths]
    f_test = _test_outputs(s, arch, float(sigma0_2), jnp.asarray(xi_test))
    U = sample_U(s, arch)
    diag = chain_diagnostics(extra, U, f_test, max_tree_depth=config.max_tree_depth)
    warn_if_bad(diag, "full-weight")
    settings = {
        "sampler": recorded_settings(config),
        "tau": tau,
        "sigma0_2": float(sigma0_2),
        "v0_update": v0_update,
        "arch": {"heads": arch.heads, "widths": arch.widths, "sigma2": arch.sigma2},
        "P": int(xi_train.shape[0]),
        "M": int(xi_test.shape[0]),
        "n_parameters": int(
            N[0] * xi_train.shape[2] + sum(H * N[l + 1] * N[l] for l, H in enumerate(arch.heads)) + N[-1]
        ),
    }
    return PosteriorSamples("full", settings, U, f_test, np.zeros_like(f_test), diag, wall)


class FullWeightSampler(Sampler):
    """Samples of every weight (:func:`sample_full`; by default joint NUTS, see the module's docstring), on the
    path inputs of its :class:`FullConfig` (by default the features' exact inverse).  Its ``V0`` has
    ``N0 x N`` entries, so width sweeps run it only at the widths their config lists for it."""

    name = "full"
    config_type = FullConfig
    every_width = False

    def sample(self, features_train, y, tau, arch, features_test, config, progress=None) -> PosteriorSamples:
        xi = getattr(config, "path_inputs", None)
        if xi is None:
            xi = features_to_path_inputs(features_train), features_to_path_inputs(features_test)
        xi_train, xi_test = xi
        return sample_full(xi_train, y, tau, arch, xi_test, config=config, progress=progress)
