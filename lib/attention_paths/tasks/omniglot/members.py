"""The ensemble of networks trained with the paper's recipe (issue 23): names, precise accuracies, commits.

Every member is the paper's recipe (spec §B.6) with its own training seed, which fixes the initial weights,
the frozen label-embedding table and the data order; seed 42 is the book's network ``"paper"``, seed ``k``
the network ``"paper-seed<k>"`` (:func:`attention_paths.tasks.omniglot.recipe.network_config`), committed
in ``data/omniglot-<name>/`` like the first.

**Precise accuracies.**  The training run's own meta-test set has 2,048 episodes (standard error about 0.9
points); the reference's dumps use 1,024 (about 1.2).  :func:`precise_sets` is one fixed set of
:data:`PRECISE_TEST_EPISODES` meta-test episodes (standard error about 0.27 points), the **same episodes for
every network**, so that the networks' accuracies differ by their weights alone, plus the complete MNIST
0/1 and FashionMNIST T-shirt/trouser sets.  :func:`commit_network` records them for the last checkpoint
(the one the theory and pruning use, spec OP-E5) and for the best-validation checkpoint.

This is one of the ensemble's three modules, each in the lowest layer its imports allow (book, Architecture:
"Why the ensemble lives in three modules"): this one is in the ``train`` stage's key
(``runs.stages.TRAIN_CODE``), so it imports nothing of the analysis; :mod:`attention_paths.tasks.ensemble`
builds each member's typed row from its analysis results; :mod:`attention_paths.runs.committed_ensemble`
reads the committed members back for the chapters.
"""

from __future__ import annotations

import math
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from attention_paths.base.io import atomic_write_json
from attention_paths.base.provenance import committed_code_provenance, hardware
from attention_paths.tasks.omniglot.checkpoints import (
    checkpoint_sha256,
    committed_checkpoint,
    export_checkpoint,
    load_trained,
    read_json,
    seal_network_folder,
)
from attention_paths.tasks.omniglot.data import load_ood, load_split
from attention_paths.tasks.omniglot.episodes import fixed_episodes, ood_episodes
from attention_paths.tasks.omniglot.recipe import TRAIN_CONFIGS, network_dir, network_name, register_network
from attention_paths.tasks.omniglot.training import evaluate

__all__ = [
    "ENSEMBLE_SEEDS",
    "PRECISE_TEST_EPISODES",
    "PRECISE_TEST_SEED",
    "PRECISE_SETS",
    "member_name",
    "precise_sets",
    "precise_accuracies",
    "commit_network",
    "record_precise_accuracies",
    "rerecord_precise_accuracies",
    "committed_members",
]

# seed 42 is the book's first paper network; four more seeds make the ensemble of issue 23
ENSEMBLE_SEEDS = (42, 1, 2, 3, 4)
PRECISE_TEST_EPISODES = 20_480  # 160 batches of 128; standard error <= 0.35 points at any accuracy
PRECISE_TEST_SEED = 7_000  # one seed for every network (the training runs' own sets use 2000 + seed)
PRECISE_SETS = ("test", "MNIST", "FashionMNIST")


def member_name(seed: int) -> str:
    """The registered network of the paper's recipe (float32) trained with ``seed`` ("paper" for 42,
    "paper-seed<k>" for the ensemble's others, :data:`~attention_paths.tasks.omniglot.recipe.NETWORKS`); a seed
    no network has yet is registered as ``"paper-seed<k>"``, a new member of the ensemble."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"a training seed is a non-negative integer, got {seed!r}")
    cfg = replace(TRAIN_CONFIGS["paper"], seed=int(seed))
    try:
        return network_name(cfg)
    except ValueError:
        return register_network(f"paper-seed{int(seed)}", cfg).name


def precise_sets(root=None, test_episodes: int = PRECISE_TEST_EPISODES) -> dict:
    """The evaluation sets of the precise accuracies: ``test`` (``test_episodes`` meta-test episodes drawn
    with :data:`PRECISE_TEST_SEED`, the same for every network) and the complete ``MNIST`` and
    ``FashionMNIST`` sets (2,115 and 2,000 episodes)."""
    drawing_seed = TRAIN_CONFIGS["paper"].drawing_seed
    sets = {"test": fixed_episodes(load_split("test", root).images, test_episodes, PRECISE_TEST_SEED, drawing_seed)}
    for name in ("MNIST", "FashionMNIST"):
        sets[name] = ood_episodes(load_ood(name, root))
    return sets


def precise_accuracies(net, sets: dict) -> dict:
    """``{set: {"accuracy", "se", "episodes"}}``: accuracy (%), its binomial standard error and the episode
    count of ``net`` on each of ``sets`` (:func:`precise_sets`)."""
    out = {}
    for name, eps in sets.items():
        r = evaluate(net, eps)
        p = r["accuracy"] / 100.0
        out[name] = {
            "accuracy": r["accuracy"],
            "se": 100.0 * math.sqrt(p * (1.0 - p) / r["n"]),
            "episodes": r["n"],
            "mse": r["mse"],
        }
    return out


def _evaluation_record(test_episodes: int, prov: dict) -> dict:
    return {
        "test": f"{test_episodes} meta-test episodes drawn with seed {PRECISE_TEST_SEED} (the same for every network)",
        "MNIST": "every MNIST 0/1 test image (all episodes)",
        "FashionMNIST": "every FashionMNIST T-shirt/trouser test image (all episodes)",
        "standard_error": "binomial, sqrt(p (1 - p) / episodes), in points",
        "provenance": prov,
        "hardware": hardware(),
        "time_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def commit_network(
    run_dir, dest_dir, *, root=None, test_episodes: int = PRECISE_TEST_EPISODES, allow_dirty: bool = False
) -> dict:
    """Commit a finished training run (``run_dir`` of :func:`~attention_paths.tasks.omniglot.training.train`)
    as ``dest_dir/model.pt`` + ``record.json``: the last checkpoint without optimiser state, its training
    record, and the precise accuracies of the last checkpoint (``accuracies``) and of the best-validation
    one (``accuracies_best``), on the sets of :func:`precise_sets`.

    An unfinished run raises ``ValueError`` (commit its resumable state instead).  The evaluation's
    provenance must name a commit that reproduces it: uncommitted changes to the package's code raise
    :class:`~attention_paths.base.provenance.DirtyTreeError` naming the files, before anything is evaluated,
    unless ``allow_dirty=True``, which records the full ``git diff`` in ``evaluation.provenance``
    (:func:`~attention_paths.base.provenance.committed_code_provenance`).
    """
    run_dir, dest_dir = Path(run_dir), Path(dest_dir)
    summary = read_json(run_dir / "summary.json", "training summary")
    if not summary.get("finished"):
        raise ValueError(
            f"{run_dir} holds an unfinished run ({summary.get('steps_done')} of {summary['config']['steps']} "
            "steps); resume it before committing"
        )
    prov = committed_code_provenance(f"to commit network {dest_dir}", allow_dirty=allow_dirty)
    dest_dir.mkdir(parents=True, exist_ok=True)
    record = export_checkpoint(run_dir, dest_dir)
    sets = precise_sets(root, test_episodes)
    net, _ = load_trained(dest_dir / "model.pt")
    last = precise_accuracies(net, sets)
    record = _with_precise(record, last, test_episodes, prov)
    if (run_dir / "best.pt").exists():
        best, best_ck = load_trained(run_dir / "best.pt")
        record["accuracies_best"] = {
            "step": best_ck["step"],
            # the best step is often the last: its weights are the committed ones, evaluated above
            **(last if best_ck["step"] == summary["steps_done"] else precise_accuracies(best, sets)),
            "note": "best-validation checkpoint (not committed; the theory and pruning use the last, spec OP-E5)",
            "sha256": checkpoint_sha256(run_dir / "best.pt"),
        }
    else:  # a run resumed in another session from its committed last.pt: the best weights were not kept
        best = summary.get("best_validation") or {}
        record["accuracies_best"] = {
            "step": best.get("step"),
            "val": best.get("val"),
            "note": "best-validation weights not kept (the run was resumed from its committed last checkpoint "
            "after the best step); only their training-time validation accuracy is known",
        }
    atomic_write_json(dest_dir / "record.json", record)
    seal_network_folder(dest_dir)
    return record


def _with_precise(record: dict, acc: dict, test_episodes: int, prov: dict) -> dict:
    record = dict(record)
    training_time = record.get("accuracies", {})
    record["accuracies_training"] = {
        **training_time,
        "note": "the last evaluation of the training run (its own seeded sets)",
    }
    val = training_time.get("val")
    record["accuracies"] = ({"val": val} if val else {}) | acc
    record["evaluation"] = _evaluation_record(test_episodes, prov)
    return record


def record_precise_accuracies(
    name: str, *, root=None, data_dir=None, test_episodes: int = PRECISE_TEST_EPISODES, allow_dirty: bool = False
):
    """Add the precise accuracies of an already committed network ``data/omniglot-<name>`` to its
    ``record.json`` (the model file is not touched; its SHA-256 is checked first).  The best-validation
    checkpoint of a network committed before issue 23 was not kept: its record says so.  A dirty tree is
    refused as by :func:`commit_network` (``allow_dirty``)."""
    folder = network_dir(name, data_dir)
    prov = committed_code_provenance(f"to record the accuracies of {folder}", allow_dirty=allow_dirty)
    if committed_checkpoint(name, data_dir) is None:  # the folder checked against its seal and record
        raise FileNotFoundError(f"network {name!r} is not committed: {folder} holds no model.pt")
    record = read_json(folder / "record.json", "network record")
    if "accuracies_training" in record:
        raise ValueError(f"{folder / 'record.json'} already holds precise accuracies")
    net, _ = load_trained(folder / "model.pt")
    record = _with_precise(record, precise_accuracies(net, precise_sets(root, test_episodes)), test_episodes, prov)
    record.setdefault(
        "accuracies_best",
        {
            "step": record["best_validation"]["step"],
            "note": "best-validation checkpoint not kept when this network was committed; its accuracies at "
            "training time are in best_validation",
        },
    )
    atomic_write_json(folder / "record.json", record)
    seal_network_folder(folder)
    return record


def rerecord_precise_accuracies(
    name: str,
    reason: str,
    *,
    root=None,
    data_dir=None,
    note: str | None = None,
    allow_dirty: bool = False,
) -> dict:
    """Evaluate a committed network ``data/omniglot-<name>`` again from a clean checkout and record that
    evaluation (issue 36 §4: a record exported from uncommitted code re-recorded from a commit that
    reproduces it).  The last checkpoint (``model.pt``, not touched) is evaluated on the record's own sets;
    every number must equal the recorded one, or ``ValueError`` lists each difference and nothing is written.
    The best-validation accuracies are re-recorded when the best step is the last (the same weights); those
    of a best checkpoint that was not kept stay as recorded, marked with the provenance they were made with.
    ``record.evaluation`` then holds the new provenance and ``rerecorded`` (``reason``, the previous
    evaluation's provenance and ``note``); the folder is sealed again with ``reason``.  A dirty tree is
    refused as by :func:`commit_network`."""
    folder = network_dir(name, data_dir)
    if committed_checkpoint(name, data_dir) is None:
        raise FileNotFoundError(f"network {name!r} is not committed: {folder} holds no model.pt")
    prov = committed_code_provenance(f"to re-record {folder}", allow_dirty=allow_dirty)
    record = read_json(folder / "record.json", "network record")
    old_eval = record.get("evaluation") or {}
    if "accuracies_training" not in record or "provenance" not in old_eval:
        raise ValueError(f"{folder / 'record.json'} holds no precise accuracies to re-record")
    test_episodes = record["accuracies"]["test"]["episodes"]
    net, _ = load_trained(folder / "model.pt")
    acc = precise_accuracies(net, precise_sets(root, test_episodes))
    diffs = [
        f"{s}.{k}: recorded {record['accuracies'][s].get(k)!r}, now {v!r}"
        for s, values in acc.items()
        for k, v in values.items()
        if record["accuracies"][s].get(k) != v
    ]
    if diffs:
        raise ValueError(f"the evaluation of {folder / 'model.pt'} does not reproduce its record: " + "; ".join(diffs))
    updated = dict(record)
    val = record["accuracies"].get("val")
    updated["accuracies"] = ({"val": val} if val else {}) | acc
    best = dict(record.get("accuracies_best") or {})
    if best.get("step") == record["steps_done"] and "test" in best:
        best.update(acc)  # the best step is the last: the committed weights, just evaluated
    elif "test" in best:
        best["evaluated_with"] = {k: old_eval["provenance"].get(k) for k in ("git_commit", "git_dirty", "time_utc")}
    if best:
        updated["accuracies_best"] = best
    updated["evaluation"] = _evaluation_record(test_episodes, prov) | {
        "rerecorded": {
            "reason": reason,
            "previous_provenance": old_eval["provenance"],
            "previous_hardware": old_eval.get("hardware"),
            "accuracies": "identical to the previous evaluation's, number for number",
            **({"note": note} if note else {}),
        }
    }
    atomic_write_json(folder / "record.json", updated)
    seal_network_folder(folder, reason)
    return updated


def committed_members(data_dir=None) -> list[tuple[int, str]]:
    """``[(seed, name)]`` of the ensemble's networks committed under ``data/`` (``model.pt`` present), in
    :data:`ENSEMBLE_SEEDS` order."""
    return [
        (seed, member_name(seed))
        for seed in ENSEMBLE_SEEDS
        if (network_dir(member_name(seed), data_dir) / "model.pt").exists()
    ]
