"""Running and reading the experiments of :data:`attention_paths.runs.registry.EXPERIMENTS` (the command
line's ``python -m attention_paths <experiment>`` and the ``reproduce`` stages): :func:`run_experiment`
runs one and writes its results folder (:mod:`attention_paths.runs.results`, the format) under the folder's
lock, :func:`load_run` reads one back through the experiment's reader; and the trained network a chapter
uses (:func:`trained_network`)."""

from __future__ import annotations

import contextlib
import difflib
import json
import time
from pathlib import Path

from attention_paths.base import config
from attention_paths.base.provenance import provenance
from attention_paths.runs import results
from attention_paths.runs.lock import results_lock
from attention_paths.runs.registry import EXPERIMENTS, Experiment
from attention_paths.tasks.omniglot import checkpoints, training
from attention_paths.tasks.omniglot.recipe import network_config, network_dir

__all__ = [
    "EXPERIMENTS",
    "experiment",
    "run_experiment",
    "load_run",
    "require_network",
    "stage_network",
    "trained_network",
]


def experiment(name: str) -> Experiment:
    """The record of experiment ``name``; ``ValueError`` naming the known ones when there is none."""
    if name not in EXPERIMENTS:
        raise ValueError(f"unknown experiment {name!r}; choose from {sorted(EXPERIMENTS)}")
    return EXPERIMENTS[name]


def require_network(exp: Experiment, scale: str | None, network: str | None, train_missing: bool = False) -> None:
    """Refuse to run ``exp`` on a trained network that is not committed under ``data/`` (so that
    :func:`~attention_paths.tasks.omniglot.training.load_network` would train it, for hours) unless
    ``train_missing``: ``FileNotFoundError`` naming the network and the command that trains it.  ``network``
    ``None``: the scale's (``exp``'s config).  Inside :func:`~attention_paths.tasks.omniglot.checkpoints.
    verified_once` (as :func:`run_experiment` calls it) the run's own ``load_network`` does not hash the
    network's files again."""
    if train_missing or not exp.takes("--network"):
        return
    name = network or exp.resolve("configs")[config.get_scale(scale)].network
    if checkpoints.committed_checkpoint(name) is not None:
        return
    steps = network_config(name).steps
    raise FileNotFoundError(
        f"network {name!r} is not committed (no {network_dir(name)}/model.pt), and "
        f"training it takes {steps:,} steps: train it with `python -m attention_paths omniglot-train --network "
        f"{name} --out DIR` and commit it, or pass --train-missing to train it here"
    )


def run_experiment(
    name: str,
    scale: str | None = None,
    out: str | Path = "out",
    progress: bool = True,
    save_samples: bool = False,
    train_missing: bool = True,
    lock: bool = True,
    **options,
) -> dict:
    """Run experiment ``name`` and write its results folder ``out`` (:func:`results.write`) under the folder's
    lock (:class:`~attention_paths.runs.lock.results_lock`: a second run on ``out`` stops at once); returns the
    summary.

    With ``save_samples``, every posterior-sampling run is also written whole to ``out/samples_<name>.npz``
    (the experiment's ``samples`` function names them; reload with ``sampling.load_samples``); the summary and
    arrays always hold its posterior means, variances, sampled order parameter and diagnostics.  Other
    keyword ``options`` go to the experiment's run function (``omniglot-theory``: ``network``, ``sample``,
    ``budget``).  ``train_missing=False`` refuses a network that is not committed (:func:`require_network`);
    ``lock=False``: the caller holds ``out``'s lock already (the command line takes it before loading the tasks).
    """
    exp = experiment(name)
    with checkpoints.verified_once():  # the network require_network verifies is not hashed again by the run
        require_network(exp, scale, options.get("network"), train_missing)
        return _run(exp, scale, Path(out), progress, save_samples, lock, options)


def _run(exp: Experiment, scale, out: Path, progress: bool, save_samples: bool, lock: bool, options: dict) -> dict:
    """:func:`run_experiment` once its network is checked."""
    with results_lock(out) if lock else contextlib.nullcontext():
        prov = provenance()  # the code that runs: recorded before it runs
        t0 = time.perf_counter()
        res = exp.resolve("run")(scale, progress=progress, **options)
        summary, arrays = exp.resolve("summary")(res)
        summary["wall_seconds"] = time.perf_counter() - t0
        summary["provenance"] = prov
        if save_samples and exp.samples is not None:
            for key, smp in exp.resolve("samples")(res).items():
                smp.save(out / f"samples_{key}.npz")
        results.write(out, summary, arrays)
    return summary


def oneshot_samples(res) -> dict:
    """The posterior samples of an ``omniglot-theory`` result by file name (``N<width>_<sampler>``)."""
    return {f"N{N}_{smp.kind}": smp for N, smp in (res.samples or {}).items()}


def hmc_samples(res) -> dict:
    """The posterior samples of an ``hmc`` result by file name (``<network>_N<width>_<sampler>``)."""
    return {key: r.samples for key, r in res.sampled.items()}


def load_run(folder, experiment: str, *, required: bool = False):
    """An experiment's results folder (``python -m attention_paths <experiment> --out folder``, or committed
    under ``data/``), checked and assembled for the chapters by the experiment's reader (its record's
    ``reader``); ``None`` when ``folder/summary.json`` does not exist ("not computed"), unless ``required``:
    then a ``FileNotFoundError`` naming the folder (and the folders beside it of similar names).  A damaged
    run, or one of another experiment, raises ``ValueError``.

    * ``hmc``: a :class:`~attention_paths.tasks.markov.MarkovResult`;
    * ``omniglot-theory``: a :class:`~attention_paths.tasks.oneshot.OneShotResult`;
    * ``pruning``: a :class:`~attention_paths.tasks.pruning.PruningResult`.
    """
    readable = sorted(n for n, e in EXPERIMENTS.items() if e.reader is not None)
    if experiment not in readable:
        raise ValueError(f"no reader for experiment {experiment!r}; choose from {readable}")
    loaded = results.read_run(folder, experiment)
    if loaded is None:
        if required:
            raise FileNotFoundError(_missing_run(Path(folder), experiment))
        return None
    summary, arrays = loaded
    try:
        return EXPERIMENTS[experiment].resolve("reader")(Path(folder), summary, arrays)
    except (KeyError, TypeError, AttributeError) as err:
        raise ValueError(f"{experiment} run in {folder} is incomplete or corrupted ({err!r})") from None


def _missing_run(folder: Path, experiment: str) -> str:
    """Why a required run was not found: no folder (misspelt? with the nearest names beside it) or no summary."""
    if folder.is_dir():
        return f"{folder} holds no {experiment} run (no {results.SUMMARY})"
    near = difflib.get_close_matches(folder.name, [p.name for p in folder.parent.glob("*")], n=3)
    hint = f"; did you mean {', '.join(near)}?" if near else ""
    return f"no {experiment} run: the folder {folder} does not exist{hint}"


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
