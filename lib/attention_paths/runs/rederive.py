"""Re-deriving a committed run's derived numbers with today's code (issue 49 §3).

A results folder stores measured numbers (accuracies, per-path outputs, order parameters) and numbers derived
from them (the claims' verdicts; a pruning run's cumulative curves).  When the rule behind a derived number
changes (the book's one tie rule) or a derived field is added (the cumulative curves), :func:`rederive` rewrites
the folder from its own stored numbers: it loads the run, recomputes the derived fields, refuses if anything
else would change, and writes the folder again, keeping the record's every entry and adding one to its
``rederived`` list (what, the clean commit, the time).  Nothing is re-measured.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np

from attention_paths.base.provenance import committed_code_provenance
from attention_paths.runs import experiments, results
from attention_paths.tasks.pruning.cumulative import RANDOM_ORDERS, cumulative_pruning

__all__ = ["rederive", "DERIVED"]

# the summary entries each experiment's re-derivation may change
DERIVED = {"omniglot-theory": ("claims",), "omniglot-sampling": ("claims",), "pruning": ("claims", "cumulative")}


def _derive(experiment: str, run):
    """The run with its derived fields recomputed (its summary function recomputes the claims)."""
    if experiment == "pruning":
        return replace(run, cumulative=cumulative_pruning(run, RANDOM_ORDERS, run.config["seed"]))
    return run


def rederive(folder, experiment: str, what: str, *, allow_dirty: bool = False) -> dict:
    """Rewrite the results ``folder`` of ``experiment`` (a key of :data:`DERIVED`) with its derived fields
    recomputed from its stored numbers by this code; ``what`` says what changed and why (recorded).  Returns
    ``{"changed": [summary keys whose value changed], "added_arrays": [...]}``.

    Refuses (``ValueError``) an experiment it does not know, a summary entry other than :data:`DERIVED`'s that
    would change, an array that would change or go, and (without ``allow_dirty``) code with uncommitted
    changes (:func:`~attention_paths.base.provenance.committed_code_provenance`)."""
    if experiment not in DERIVED:
        raise ValueError(f"cannot re-derive {experiment!r} runs; choose from {sorted(DERIVED)}")
    folder = Path(folder)
    prov = committed_code_provenance(f"the re-derived run {folder}", allow_dirty=allow_dirty)
    old_summary, old_arrays = results.read_run(folder, experiment)
    # read without its stored claims, which may follow an earlier rule (the reader would refuse them): they are
    # what is recomputed here
    reader = experiments.EXPERIMENTS[experiment].resolve("reader")
    run = reader(folder, {k: v for k, v in old_summary.items() if k != "claims"}, old_arrays)
    summary_of = experiments.EXPERIMENTS[experiment].resolve("summary")
    summary, arrays = summary_of(_derive(experiment, run))
    old = {k: v for k, v in old_summary.items() if k != "format"}
    as_json = json.loads(json.dumps(summary, default=lambda a: a.tolist()))  # as summary.json will hold it
    moved = sorted(k for k in set(old) | set(as_json) if old.get(k) != as_json.get(k))
    outside = [k for k in moved if k not in DERIVED[experiment]]
    if outside:
        raise ValueError(f"re-deriving {folder} would change {outside}, which are not derived fields")
    for k, a in old_arrays.items():
        if k not in arrays or not np.array_equal(arrays[k], a):
            raise ValueError(f"re-deriving {folder} would change or drop its array {k!r}")
    record = {k: v for k, v in results.verify_files(folder).items() if k not in ("format", "files_sha256")}
    entry = {"what": what, **{k: prov.get(k) for k in ("git_commit", "git_dirty", "time_utc")}}
    record["rederived"] = [*record.get("rederived", []), entry]
    results.write(folder, summary, arrays, record=record)
    return {"changed": moved, "added_arrays": sorted(set(arrays) - set(old_arrays))}
