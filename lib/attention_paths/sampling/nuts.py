"""The NUTS machinery shared by the package's two samplers (spec T§13): the weight priors, the order parameter
of every draw and one seeded NUTS run.

The samplers themselves are :mod:`.rao_blackwell` and :mod:`.full`; :func:`attention_paths.sampling.sample`
dispatches to them by name (:mod:`.dispatch`).  Weights are sampled in standardised form (``V = sigma Z``,
``Z ~ N(0, 1)``), which leaves the posterior unchanged.  JAX runs in float64.  This module and the two
sampler modules import JAX and numpyro; nothing else in the package does.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import fields, replace

import jax
import jax.numpy as jnp
import numpy as np

with warnings.catch_warnings():
    # numpyro imports tqdm.auto, which warns inside a Jupyter kernel without ipywidgets; our bars are plain tqdm
    warnings.filterwarnings("ignore", message="IProgress not found")
    import numpyro
    import numpyro.distributions as dist
    from numpyro.infer import MCMC, NUTS, HMCGibbs

from attention_paths.base.progress import quiet
from attention_paths.sampling.samples import SamplerConfig
from attention_paths.theory.architecture import Architecture

# float64 before the first array: importing jax and numpyro creates none (checked in tests/sampling)
jax.config.update("jax_enable_x64", True)

__all__ = [
    "order_parameter_of",
    "DEFAULT_TREE_DEPTH",
    "run_nuts",
    "sample_U",
    "recorded_settings",
    "with_tree_depth",
    "weight_sites",
    "effective_weights",
]

DEFAULT_TREE_DEPTH = {"full": 10, "rao-blackwell": 5}
"""Each built-in sampler's NUTS tree-depth cap when :attr:`SamplerConfig.max_tree_depth` is ``None``."""


def effective_weights(a, Vs, widths):
    """Stacked effective path weights ``W_1`` [Pi, N_1] from the readout and value matrices (jax)."""
    W = a[None, :]
    for l in reversed(range(len(Vs))):
        W = jnp.einsum("rj,hjk->hrk", W, Vs[l]).reshape(-1, widths[l]) / math.sqrt(widths[l + 1])
    return W


def weight_sites(arch: Architecture):
    """numpyro sample sites for the value matrices and readout; returns (a, Vs) in physical units."""
    heads, N, s2 = arch.heads, [int(n) for n in arch.widths], arch.sigma2
    Vs = []
    for l, H in enumerate(heads):
        Z = numpyro.sample(f"V{l + 1}", dist.Normal(0.0, 1.0).expand([H, N[l + 1], N[l]]).to_event(3))
        Vs.append(math.sqrt(s2[l]) * Z)
    a = math.sqrt(s2[-1]) * numpyro.sample("a", dist.Normal(0.0, 1.0).expand([N[-1]]).to_event(1))
    return a, Vs


def with_tree_depth(config: SamplerConfig, kind: str) -> SamplerConfig:
    """``config`` with the sampler's default tree depth filled in (recorded with the samples)."""
    if config.max_tree_depth is not None:
        return config
    return replace(config, max_tree_depth=DEFAULT_TREE_DEPTH[kind])


def recorded_settings(config: SamplerConfig) -> dict:
    """The NUTS settings of ``config`` as recorded in ``PosteriorSamples.settings["sampler"]``: the fields of
    :class:`SamplerConfig` only, whatever sampler-specific inputs a subclass adds."""
    return {f.name: getattr(config, f.name) for f in fields(SamplerConfig)}


_EXTRA = ("diverging", "accept_prob", "num_steps")


def run_nuts(
    model, config: SamplerConfig, progress: bool | None, gibbs=None, keep=None, **kwargs
) -> tuple[MCMC, float, dict]:
    """One seeded NUTS run of ``model(**kwargs)`` with the settings of ``config``.

    ``gibbs = (update, sites)``: NUTS within Gibbs (numpyro's ``HMCGibbs``): the sample sites ``sites`` are not
    moved by NUTS but drawn by ``update(rng_key, gibbs_sites, hmc_sites) -> gibbs_sites`` after every NUTS
    transition, which moves the other sites with the Gibbs sites held fixed.

    ``keep``: a function of one draw's sample sites returning what is stored of it (numpyro's
    ``postprocess_fn``, applied as each draw is collected); ``None`` keeps every site.  The Rao-Blackwellised
    sampler keeps only the draw's order parameter: at ``N = 500`` a draw's value matrices take 8 MB a head
    and layer, which for hundreds of draws exceeds the memory of a laptop.

    Returns (the MCMC object, wall time, NUTS' extra fields ``diverging``, ``accept_prob`` and ``num_steps``,
    each [chains, draws]).
    """
    kernel = NUTS(model, target_accept_prob=config.target_accept, max_tree_depth=config.max_tree_depth)
    extra = _EXTRA
    if gibbs is not None:
        kernel = HMCGibbs(kernel, gibbs_fn=gibbs[0], gibbs_sites=list(gibbs[1]))
        extra = tuple(f"hmc_state.{name}" for name in _EXTRA)
    show = (not quiet()) if progress is None else (progress and not quiet())
    mcmc = MCMC(
        kernel,
        num_warmup=config.num_warmup,
        num_samples=config.num_samples,
        num_chains=config.num_chains,
        chain_method=config.chain_method,
        progress_bar=show,
        postprocess_fn=keep,
    )
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*There are not enough devices.*")
        mcmc.run(jax.random.PRNGKey(config.seed), extra_fields=extra, **kwargs)
    samples = mcmc.get_samples(group_by_chain=True)
    jax.block_until_ready(samples)
    wall = time.perf_counter() - t0
    fields_ = mcmc.get_extra_fields(group_by_chain=True)
    return mcmc, wall, {name: fields_[key] for name, key in zip(_EXTRA, extra, strict=True)}


def order_parameter_of(arch: Architecture):
    """The function ``sites -> {"U": U(Theta)}`` of one draw's sample sites (readout ``a``, value matrices
    ``V1``, ...), ``U = W_1 W_1^T / N_1`` with the effective weights of the prior-scaled sites: what
    :func:`run_nuts` keeps of a draw (``keep``) when only the order parameter is needed."""
    N = [int(n) for n in arch.widths]
    s2 = arch.sigma2
    names = [f"V{l + 1}" for l in range(arch.n_layers)]

    def keep(sites):
        Vs = [math.sqrt(s2[l]) * sites[n] for l, n in enumerate(names)]
        W1 = effective_weights(math.sqrt(s2[-1]) * sites["a"], Vs, N)
        return {"U": W1 @ W1.T / N[0]}

    return keep


def sample_U(samples, arch: Architecture, max_bytes: float = 256 * 1024**2) -> np.ndarray:
    """``U(Theta_s)`` for every sample, [chains, draws, Pi, Pi], in batches of draws whose intermediates (the
    path products of the value matrices, about ``Pi * max(N)^2`` numbers a draw) take at most ``max_bytes``: at
    ``N = 500`` all draws at once would need 32 MB a draw (20 GB for 640 draws)."""
    N = [int(n) for n in arch.widths]
    keep = order_parameter_of(arch)
    names = [f"V{l + 1}" for l in range(arch.n_layers)]

    def one(a, *Vs):
        return keep({"a": a, **dict(zip(names, Vs, strict=True))})["U"]

    a = samples["a"]
    chains, draws = a.shape[:2]
    batch = max(1, min(chains * draws, int(max_bytes // (8.0 * arch.n_paths * max(N) ** 2))))
    flat = [jnp.reshape(x, (chains * draws, *x.shape[2:])) for x in (a, *[samples[n] for n in names])]
    f = jax.jit(jax.vmap(one))
    out = [np.asarray(f(*[x[i : i + batch] for x in flat])) for i in range(0, chains * draws, batch)]
    return np.concatenate(out).reshape(chains, draws, arch.n_paths, arch.n_paths)
