"""Sampler diagnostics: bulk ESS and R-hat (arviz), per-run summaries and the warning for unreliable runs."""

from __future__ import annotations

import warnings

import numpy as np

with warnings.catch_warnings():
    warnings.simplefilter("ignore", FutureWarning)
    import arviz as az

__all__ = ["SamplingWarning", "ess_bulk", "rhat", "chain_diagnostics", "warn_if_bad"]


class SamplingWarning(RuntimeWarning):
    """Raised (as a warning) when diagnostics indicate an unreliable run: R-hat > 1.05 or divergences."""


def _per_entry(statistic, x, **kwargs) -> np.ndarray:
    x = np.asarray(x)
    flat = x.reshape(x.shape[0], x.shape[1], -1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.array([float(statistic(flat[:, :, j], **kwargs)) for j in range(flat.shape[2])]).reshape(x.shape[2:])


def ess_bulk(x) -> np.ndarray:
    """Bulk effective sample size (arviz) of every entry of an array [chains, draws, ...] -> [...]."""
    return _per_entry(az.ess, x, method="bulk")


def rhat(x) -> np.ndarray:
    """Rank-normalised split R-hat (arviz) of every entry of an array [chains, draws, ...] -> [...]."""
    return _per_entry(az.rhat, x)


def chain_diagnostics(extra: dict, U, outputs, n_outputs: int = 5, max_tree_depth: int | None = None) -> dict:
    """Divergences, acceptance, leapfrog steps, bulk ESS and R-hat of a run, from NUTS' extra fields
    (``diverging``, ``accept_prob``, ``num_steps``, each [chains, draws]), the sampled ``U`` [chains, draws, Pi, Pi]
    and test outputs [chains, draws, M] (the first ``n_outputs``).

    With ``max_tree_depth`` (the run's cap) it adds the trees' shape: ``tree_depth_median`` (a draw of ``s``
    leapfrog steps has depth ``ceil(log2(s + 1))``), ``share_at_depth_limit`` (the draws whose tree reached
    ``2**max_tree_depth - 1`` steps, NUTS' cap) and ``leapfrog_steps`` (all the kept draws' steps, i.e. the
    gradients the sampling phase cost: ESS per gradient is an ESS over it)."""
    div = np.asarray(extra["diverging"])
    acc = np.asarray(extra["accept_prob"])
    steps = np.asarray(extra["num_steps"])
    iu = np.triu_indices(U.shape[-1])
    Uent = U[..., iu[0], iu[1]]  # [chains, draws, n_entries]
    out = outputs[..., :n_outputs]
    d = {
        "divergences": int(div.sum()),
        "divergences_per_chain": div.sum(axis=1).tolist(),
        "mean_accept_prob": float(acc.mean()),
        "mean_tree_steps": float(steps.mean()),
        "ess_bulk_U_min": float(ess_bulk(Uent).min()),
        "ess_bulk_U_median": float(np.median(ess_bulk(Uent))),
        "ess_bulk_outputs_min": float(ess_bulk(out).min()),
    }
    if max_tree_depth is not None:
        d["tree_depth_median"] = float(np.median(np.ceil(np.log2(steps + 1.0))))
        d["share_at_depth_limit"] = float(np.mean(steps >= 2**max_tree_depth - 1))
        d["leapfrog_steps"] = int(steps.sum())
    if U.shape[0] > 1:
        d["rhat_U_max"] = float(np.nanmax(rhat(Uent)))
        d["rhat_outputs_max"] = float(np.nanmax(rhat(out)))
    else:
        d["rhat_U_max"] = d["rhat_outputs_max"] = float("nan")  # needs several chains
    return d


def warn_if_bad(d: dict, kind: str) -> None:
    """A :class:`SamplingWarning` when a run has divergences or R-hat above 1.05."""
    problems = []
    if d["divergences"] > 0:
        problems.append(f"{d['divergences']} divergent transitions")
    for key in ("rhat_U_max", "rhat_outputs_max"):
        if d[key] > 1.05:
            problems.append(f"{key} = {d[key]:.3f} > 1.05")
    if problems:
        warnings.warn(
            f"{kind} sampler: " + "; ".join(problems) + " -- treat the estimates with care",
            SamplingWarning,
            stacklevel=3,
        )
