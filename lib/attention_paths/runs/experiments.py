"""The experiments of the command line (``python -m attention_paths <experiment>``) and of the ``reproduce``
stages: for each, the function that runs it and the function that turns its result into the JSON record and
arrays of a results folder (:mod:`attention_paths.runs.results`)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

from attention_paths.base.provenance import provenance
from attention_paths.runs import results
from attention_paths.tasks import markov, oneshot, pruning, toy

__all__ = ["EXPERIMENTS", "run_experiment"]


# name: (run(scale, progress=..., **options) -> result, summarize(result) -> (summary, arrays))
EXPERIMENTS: dict[str, tuple[Callable, Callable]] = {
    "theory": (toy.theory_demo, toy.theory_summary),
    "posterior": (toy.posterior_check, toy.posterior_summary),
    "hmc": (markov.run_hmc, markov.hmc_summary),
    "omniglot-theory": (oneshot.run_oneshot, oneshot.oneshot_summary),
    "pruning": (pruning.run_pruning, pruning.pruning_summary),
}


def run_experiment(
    name: str,
    scale: str | None = None,
    out: str | Path = "out",
    progress: bool = True,
    save_samples: bool = False,
    **options,
) -> dict:
    """Run experiment ``name`` and write its results folder ``out`` (:func:`results.write`); returns the summary.

    With ``save_samples``, every posterior-sampling run is also written whole to
    ``out/samples_<network>_N<width>_<sampler>.npz`` (reload with ``sampling.load_samples``); the summary and
    arrays always hold its posterior means, variances, sampled order parameter and diagnostics.  Other
    keyword ``options`` go to the experiment (``omniglot-theory``: ``network``, ``sample``).
    """
    if name not in EXPERIMENTS:
        raise ValueError(f"unknown experiment {name!r}; choose from {sorted(EXPERIMENTS)}")
    run, summarize = EXPERIMENTS[name]
    prov = provenance()  # the code that runs: recorded before it runs
    t0 = time.perf_counter()
    res = run(scale, progress=progress, **options)
    summary, arrays = summarize(res)
    summary["wall_seconds"] = time.perf_counter() - t0
    summary["provenance"] = prov
    out = Path(out)
    if save_samples:
        for net, per_N in res.get("samples", {}).items():
            if not isinstance(per_N, dict):  # {width: PosteriorSamples} (omniglot-theory)
                per_N.save(out / f"samples_N{net}_{per_N.kind}.npz")
                continue
            for N, entry in per_N.items():
                for kind, smp in entry.items():
                    smp.save(out / f"samples_{net}_N{N}_{kind}.npz")
    results.write(out, summary, arrays)
    return summary
