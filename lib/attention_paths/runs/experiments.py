"""The experiments of the command line (``python -m attention_paths <experiment>``) and of the ``reproduce``
stages: for each, the function that runs it, the function that turns its result into the JSON record and
arrays of a results folder (:mod:`attention_paths.runs.results`, the format) and the reader that assembles
and checks a reloaded folder (:func:`load_run`); and the trained network a chapter uses
(:func:`trained_network`)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Callable

from attention_paths.base import config
from attention_paths.base.provenance import provenance
from attention_paths.runs import results
from attention_paths.tasks import markov, oneshot, pruning, toy
from attention_paths.tasks.omniglot import checkpoints, training

__all__ = ["EXPERIMENTS", "READERS", "run_experiment", "load_run", "stage_network", "trained_network"]


# name: (run(scale, progress=..., **options) -> result, summarize(result) -> (summary, arrays))
EXPERIMENTS: dict[str, tuple[Callable, Callable]] = {
    "theory": (toy.theory_demo, toy.theory_summary),
    "posterior": (toy.posterior_check, toy.posterior_summary),
    "hmc": (markov.run_hmc, markov.hmc_summary),
    "omniglot-theory": (oneshot.run_oneshot, oneshot.oneshot_summary),
    "pruning": (pruning.run_pruning, pruning.pruning_summary),
}

# name: read(folder, summary, arrays) -> the reloaded result, checked (each beside its experiment's summary)
READERS: dict[str, Callable] = {
    "hmc": markov.read_hmc_run,
    "omniglot-theory": oneshot.read_oneshot_run,
    "pruning": pruning.read_pruning_run,
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
        if isinstance(res, oneshot.OneShotResult):  # {width: PosteriorSamples}
            for N, smp in res.samples.items():
                smp.save(out / f"samples_N{N}_{smp.kind}.npz")
        if isinstance(res, markov.HMCResult):  # {"<network>_N<width>_<sampler>": SampledRun}
            for key, r in res.sampled.items():
                r.samples.save(out / f"samples_{key}.npz")
    results.write(out, summary, arrays)
    return summary


def load_run(folder, experiment: str):
    """An experiment's results folder (``python -m attention_paths <experiment> --out folder``, or committed
    under ``data/``), checked and assembled for the chapters by the experiment's reader (:data:`READERS`);
    ``None`` when ``folder/summary.json`` does not exist.  A damaged run, or one of another experiment,
    raises ``ValueError``.

    * ``hmc``: a :class:`~attention_paths.tasks.markov.HMCResult`;
    * ``omniglot-theory``: a :class:`~attention_paths.tasks.oneshot.OneShotResult`;
    * ``pruning``: a :class:`~attention_paths.tasks.pruning.PruningResult`.
    """
    if experiment not in READERS:
        raise ValueError(f"no reader for experiment {experiment!r}; choose from {sorted(READERS)}")
    loaded = results.read_run(folder, experiment)
    if loaded is None:
        return None
    summary, arrays = loaded
    try:
        return READERS[experiment](Path(folder), summary, arrays)
    except (KeyError, TypeError, AttributeError) as err:
        raise ValueError(f"{experiment} run in {folder} is incomplete or corrupted ({err!r})") from None


def stage_network(folder: Path):
    """``(net, record)`` of a ``train`` stage's folder (``model.pt`` + ``record.json``), its SHA-256 checked."""
    folder = Path(folder)
    record = json.loads((folder / "record.json").read_text())
    net, _ = checkpoints.load_trained(folder / "model.pt")
    sha = checkpoints.checkpoint_sha256(folder / "model.pt")
    # the results folder by name only: the record may be committed, and a path of this machine means nothing elsewhere
    return net, {
        **record,
        "source": f"reproduce stage {folder.name} (results folder {folder.parent.name})",
        "sha256": sha,
    }


def trained_network(scale: str | None = None, network: str | None = None):
    """``(net, record)`` for a chapter: the ``train`` stage's network when ``$REPRO_RESULTS`` is set, else
    :func:`attention_paths.tasks.omniglot.training.load_network` of ``network`` (default: the scale's)."""
    folder = config.results_folder()
    if folder is None:
        return training.load_network(network or scale)
    record = results.load_stage_result("train", folder)
    if record is None:
        raise FileNotFoundError(f"REPRO_RESULTS={folder} has no output of stage 'train'")
    if network is not None and record["params"].get("network") != network:
        raise ValueError(f"REPRO_RESULTS trained network is {record['params'].get('network')!r}, not {network!r}")
    return stage_network(Path(record["folder"]))
