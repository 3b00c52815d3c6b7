"""Posterior sampling on the trained transformer's path features (spec §B.10): the sampler settings
(:func:`with_budget`), the runs (:func:`sample_oneshot`) and their agreement with the theory."""

from __future__ import annotations

from dataclasses import fields

import numpy as np

from attention_paths import sampling
from attention_paths.tasks.oneshot.data import EVAL_SETS, OneShotData, _eval_stack
from attention_paths.tasks.oneshot.result import SampledRun
from attention_paths.theory.architecture import Architecture
from attention_paths.theory.predictor import predict

__all__ = ["sample_oneshot", "with_budget", "sampled_run", "sampler_config"]


def with_budget(sampling_cfg: dict, budget: dict) -> dict:
    """A sampling configuration with sampler settings overridden by ``budget`` (``num_chains``,
    ``num_warmup``, ``num_samples``, ...; the key ``kind`` chooses the sampler, any of
    :data:`attention_paths.sampling.SAMPLER_NAMES`: the built-in two or one registered or installed)."""
    budget = dict(budget)
    kind = budget.pop("kind", None)
    if kind is not None and kind not in sampling.SAMPLER_NAMES:
        raise ValueError(f"sampling kind must be one of {tuple(sampling.SAMPLER_NAMES)}, got {kind!r}")
    out = dict(sampling_cfg, sampler=dict(sampling_cfg["sampler"], **budget))
    if kind is not None:
        out["kind"] = kind
    return out


def sample_oneshot(data: OneShotData, cfg: dict, progress: bool = False) -> dict:
    """Posterior sampling at the widths of ``cfg["sampling"]`` (spec §B.9); {N: PosteriorSamples}.

    ``cfg["sampling"]["kind"]``: ``"rao-blackwell"`` (NUTS on the value weights with ``V0`` integrated out; a
    lower-variance conditional predictor) or ``"full"`` (NUTS on all weights, the paper's protocol; faster per
    effective sample at P = 600, :mod:`attention_paths.sampling.full`), or any other sampler of
    :data:`attention_paths.sampling.SAMPLER_NAMES`.  The test outputs of a run are the four evaluation sets
    stacked in :data:`EVAL_SETS` order.
    """
    sc = cfg["sampling"]
    kind = sc.get("kind", "rao-blackwell")  # sampling.sample checks the name
    X_eval, _ = _eval_stack(data)
    X = data.features["train"]
    out = {}
    for N in sc["widths"]:
        arch, config = Architecture.uniform(data.heads, N), sampler_config(kind, sc["sampler"])
        out[N] = sampling.sample(kind, X, data.y["train"], sc["tau"], arch, X_eval, config=config, progress=progress)
    return out


def sampler_config(kind: str, settings: dict):
    """The config of sampler ``kind`` from ``settings``: a plain :class:`attention_paths.sampling.SamplerConfig`
    where they are its fields only, else the kind's own config type (e.g. ``v0_update`` of
    :class:`attention_paths.sampling.full.FullConfig`); a setting the kind does not take is an error naming it."""
    ctype = sampling.get_sampler(kind).config_type
    known = {f.name for f in fields(ctype)}
    unknown = sorted(set(settings) - known)
    if unknown:
        names = ", ".join(map(repr, unknown))
        raise ValueError(f"sampler {kind!r} takes no setting {names} (it takes {sorted(known)})")
    shared = {f.name for f in fields(sampling.SamplerConfig)}
    return sampling.SamplerConfig(**settings) if set(settings) <= shared else ctype(**settings)


def sampled_run(data: OneShotData, U_theory, tau: float, smp) -> SampledRun:
    """A posterior-sampling run ``smp`` against the theory's ``U_theory`` at its width and temperature ``tau``,
    on every evaluation set (:class:`~attention_paths.tasks.oneshot.result.SampledRun`)."""
    X_eval, slices = _eval_stack(data)
    th = predict(U_theory, data.features["train"], data.y["train"], tau, X_eval, return_var=False).mean
    se = smp.mc_standard_error()
    sets = {}
    for s in EVAL_SETS:
        sl = slices[s]
        m = sampling.mean_agreement(smp.predictive_mean[sl], th[sl], data.y[s], se[sl])
        sets[s] = {k: m[k] for k in ("theory", "sampled", "flips", "flips_beyond_mc", "n")}
    return SampledRun(
        sets=sets,
        corr=float(np.corrcoef(smp.predictive_mean, th)[0, 1]),
        diagnostics=smp.diagnostics,
        wall_seconds=smp.wall_seconds,
        settings=smp.settings,
        kind=smp.kind,
        U_hat=smp.U_hat,
        mean=smp.predictive_mean,
        mcse=se,
    )
