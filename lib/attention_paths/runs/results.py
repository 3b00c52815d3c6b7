"""Results folders: the one module that writes and reads them.

A **results folder** holds

* ``summary.json``: the JSON record of an experiment (its settings, numbers, claims and provenance),
* ``arrays.npz``: its arrays,
* ``result.pkl`` (written by the ``reproduce`` stages only): the chapter's in-memory result,

and, when a stage of ``python -m attention_paths reproduce`` wrote it, ``_stage.json`` (:data:`RECORD`): the
stage's record (key, settings, code version, SHA-256 of every file, provenance), written last.  Every file is
written atomically.  The command line (``python -m attention_paths <experiment> --out``), the stages and the
chapters all go through :func:`write`, :func:`read`, :func:`read_run` and :func:`result_or_compute`.  This
module is the format only: what a folder of each experiment holds, and how it is checked, is the
experiment's (its summary and reader, registered in :mod:`attention_paths.runs.experiments`).
"""

from __future__ import annotations

import hashlib
import json
import pickle
import zipfile
from pathlib import Path

import numpy as np

from attention_paths.base import config
from attention_paths.base.io import atomic_write, atomic_write_json, load_json, load_npz
from attention_paths.base.provenance import code_version
from attention_paths.base.serialise import check_arrays

__all__ = [
    "SUMMARY",
    "ARRAYS",
    "RESULT",
    "RECORD",
    "FILES",
    "FORMAT",
    "write",
    "write_result",
    "write_files_record",
    "verify_files",
    "read",
    "read_run",
    "write_record",
    "read_record",
    "file_hashes",
    "stage_state",
    "load_stage_result",
    "result_or_compute",
]

SUMMARY, ARRAYS, RESULT, RECORD = "summary.json", "arrays.npz", "result.pkl", "_stage.json"
FILES = "record.json"  # the SHA-256 of every file of a results folder, written last by :func:`write`
FORMAT = 1  # the results format this code writes; a folder of a newer format is refused
LOCK = ".lock"  # held by a running pipeline (:class:`attention_paths.runs.pipeline.results_lock`)


# ------------------------------------------------------------------------------------------ writing
def write(folder, summary: dict, arrays: dict, result=None, record: dict | None = None) -> Path:
    """Write a results folder: ``arrays.npz``, then (given) ``result.pkl``, then ``summary.json`` (with the
    format version), then ``record.json``: the format version, the SHA-256 of every other file (checked by
    :func:`read`) and ``record``'s entries (e.g. the command that made the run).  Each file atomically.
    Only the files this call wrote are sealed: a ``result.pkl`` left in ``folder`` by another run (when
    ``result`` is not given) is removed first, so that it is neither sealed nor read as this run's.
    Returns the folder."""
    folder = Path(folder)
    if result is None:
        (folder / RESULT).unlink(missing_ok=True)  # another run's: not this run's result
    atomic_write(folder / ARRAYS, lambda fh: _savez(fh, arrays))
    written = [SUMMARY, ARRAYS]
    if result is not None:
        write_result(folder, result)
        written.append(RESULT)
    atomic_write_json(folder / SUMMARY, {"format": FORMAT, **summary})
    write_files_record(folder, record, names=written)
    return folder


def _savez(fh, arrays: dict) -> None:
    """``arrays`` as a compressed ``.npz`` (read by ``numpy.load``) whose bytes depend on the arrays only: every
    member is dated 1980-01-01, so that the same result always writes the same file."""
    with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, a in arrays.items():
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            with zf.open(info, "w", force_zip64=True) as out:
                np.lib.format.write_array(out, np.asanyarray(a), allow_pickle=False)


def write_files_record(folder, extra: dict | None = None, names=None) -> Path:
    """``folder/record.json``: ``extra``, the format version and ``files_sha256`` of the files ``names``
    (default: the folder's summary, arrays and, when present, result files)."""
    folder = Path(folder)
    if names is None:
        names = [n for n in (SUMMARY, ARRAYS, RESULT) if (folder / n).exists()]
    if ARRAYS in names:  # a digest never blesses arrays no result stores (complex, strings, NaN)
        check_arrays(load_npz(folder / ARRAYS), folder)
    record = {**(extra or {}), "format": FORMAT, "files_sha256": {n: _sha256(folder / n) for n in names}}
    return atomic_write_json(folder / FILES, record)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _check_format(path: Path, value) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{path} has an invalid results format {value!r}")
    if value > FORMAT:
        raise ValueError(
            f"{path} is in results format {value}, newer than this code reads (up to {FORMAT}); "
            "update attention_paths to read it"
        )


def verify_files(folder) -> dict:
    """Check every file of a results folder against the SHA-256 in its ``record.json``; returns the record.

    A missing record, a record that does not cover the summary and arrays, a missing file or a mismatch
    raises ``ValueError`` naming the file."""
    folder = Path(folder)
    path = folder / FILES
    if not path.exists():
        raise ValueError(
            f"results folder {folder} has no {FILES} with the SHA-256 of its files, so damage cannot be "
            "detected; recompute it with this version of the package"
        )
    try:
        record = json.loads(path.read_text())
        hashes = record["files_sha256"]
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as err:
        raise ValueError(f"{path} is unreadable or lacks files_sha256 ({err!r})") from None
    _check_format(path, record.get("format", 1))
    missing = [n for n in (SUMMARY, ARRAYS) if n not in hashes]
    if missing:
        raise ValueError(f"{path} does not cover {missing}")
    for name, sha in hashes.items():
        if not (folder / name).exists():
            raise ValueError(f"{folder / name} is missing (listed in {path})")
        if _sha256(folder / name) != sha:
            raise ValueError(f"{folder / name} does not match the SHA-256 in {path}: the file was changed or damaged")
    return record


def write_result(folder, result) -> Path:
    """The chapter's in-memory result, pickled into ``folder/result.pkl`` (read by :func:`result_or_compute`)."""
    return atomic_write(Path(folder) / RESULT, lambda fh: pickle.dump(result, fh, protocol=pickle.HIGHEST_PROTOCOL))


def write_record(folder, record: dict) -> Path:
    """A stage's record ``folder/_stage.json`` (written by the pipeline after the stage's files)."""
    return atomic_write_json(Path(folder) / RECORD, record)


# ------------------------------------------------------------------------------------------ reading
def read(folder) -> tuple[dict, dict] | None:
    """``(summary, arrays)`` of a results folder; ``None`` when it has no ``summary.json``.  Damaged or
    missing files raise ``ValueError``."""
    folder = Path(folder)
    if not (folder / SUMMARY).exists():
        return None
    verify_files(folder)
    try:
        summary = load_json(folder / SUMMARY)
        arrays = load_npz(folder / ARRAYS)
    except (OSError, KeyError, ValueError) as err:
        raise ValueError(f"results folder {folder} is incomplete or corrupted ({err!r})") from None
    if not isinstance(summary, dict):
        raise ValueError(f"{folder / SUMMARY} is not a results summary")
    _check_format(folder / SUMMARY, summary.get("format", 1))
    return summary, arrays


def read_record(folder) -> dict:
    """The stage record ``folder/_stage.json`` as a dict (``ValueError`` when unreadable)."""
    path = Path(folder) / RECORD
    try:
        return json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"stage record {path} is unreadable ({err})") from None


def read_run(folder, experiment: str) -> tuple[dict, dict] | None:
    """``(summary, arrays)`` of experiment ``experiment``'s results folder (``python -m attention_paths
    <experiment> --out folder``, or committed under ``data/``), every file checked against its record;
    ``None`` when ``folder/summary.json`` does not exist.  A damaged folder, or one of another experiment,
    raises ``ValueError``.  Each experiment's reader (``runs.experiments.load_run``) assembles and checks
    the contents."""
    folder = Path(folder)
    if not (folder / SUMMARY).exists():
        return None
    verify_files(folder)
    try:
        kind = load_json(folder / SUMMARY).get("experiment")
    except (OSError, ValueError, AttributeError) as err:
        raise ValueError(f"results folder {folder} is incomplete or corrupted ({err!r})") from None
    if kind != experiment:
        article = "an" if experiment[0] in "aeiou" else "a"
        raise ValueError(f"{folder}/summary.json is not {article} {experiment} run (it is {kind!r})")
    return read(folder)


# ------------------------------------------------------------------------------------------ stage folders
def file_hashes(folder: Path) -> dict:
    """``{relative path: {"size", "sha256"}}`` of every file in a folder but its stage record."""
    files = {}
    for p in sorted(folder.rglob("*")):
        if p.is_file() and p.name != RECORD:
            h = hashlib.sha256()
            with open(p, "rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    h.update(chunk)
            files[str(p.relative_to(folder))] = {"size": p.stat().st_size, "sha256": h.hexdigest()}
    return files


def stage_state(folder, key: str | None = None) -> tuple[str, str]:
    """State of a stage's output folder: ``("done"|"missing"|"stale"|"corrupt", reason)``.

    ``done``: the record exists, its key equals ``key`` (when given), and every file it lists exists with
    the recorded size and SHA-256.  ``corrupt``: the record is unreadable, or a file is missing, truncated
    or changed.  ``stale``: a valid output made with other settings or code.
    """
    folder = Path(folder)
    rec_path = folder / RECORD
    if not folder.exists():
        return "missing", "no output folder"
    if not rec_path.exists():
        return "corrupt", f"{rec_path} is missing"
    try:
        rec = json.loads(rec_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        return "corrupt", f"{rec_path} is unreadable ({err})"
    problem = _record_problem(rec)
    if problem:
        return "corrupt", f"{rec_path} is ill-formed ({problem})"
    files = rec["files"]
    actual = file_hashes(folder)
    for rel, meta in files.items():
        if rel not in actual:
            return "corrupt", f"{folder / rel} is missing"
        if actual[rel]["size"] != meta["size"]:
            return "corrupt", f"{folder / rel} has {actual[rel]['size']} bytes, its record says {meta['size']}"
        if actual[rel]["sha256"] != meta["sha256"]:
            return "corrupt", f"{folder / rel} does not match the SHA-256 in its record"
    if key is not None and rec.get("key") != key:
        return "stale", "settings, code or an upstream stage changed"
    return "done", "up to date"


def _record_problem(rec) -> str | None:
    """What is wrong with a stage record's structure (its schema), or ``None``."""
    if not isinstance(rec, dict):
        return f"a {type(rec).__name__}, not an object"
    for name, kind in (("stage", str), ("key", str), ("files", dict)):
        if not isinstance(rec.get(name), kind):
            return f"'{name}' must be a {kind.__name__}, found {rec.get(name)!r}"[:200]
    if not rec["files"]:
        return "it lists no output files"
    for rel, meta in rec["files"].items():
        if not (
            isinstance(meta, dict)
            and isinstance(meta.get("size"), int)
            and isinstance(meta.get("sha256"), str)
            and len(meta["sha256"]) == 64
        ):
            return f"the entry of {rel!r} needs an integer size and a SHA-256"
        if Path(rel).is_absolute() or ".." in Path(rel).parts:
            return f"the file name {rel!r} points outside the stage folder"
    if not isinstance(rec.get("upstream_content", {}), dict):
        return "'upstream_content' must be an object"
    return None


# ------------------------------------------------------------------------------------------ a reproduce output
def load_stage_result(stage: str, folder=None) -> dict | None:
    """The record of stage ``stage`` in a results folder (default: ``$REPRO_RESULTS``,
    :func:`attention_paths.base.config.results_folder`), after checking that every file still matches it;
    ``None`` when there is no results folder or the stage has not run.
    A damaged stage output raises ``ValueError``."""
    folder = Path(folder) if folder is not None else config.results_folder()
    if folder is None or not (folder / stage).exists():
        return None
    state, reason = stage_state(folder / stage)
    if state != "done":
        raise ValueError(
            f"results of stage {stage!r} in {folder} are {state}: {reason}; rerun "
            f"`python -m attention_paths reproduce --out {folder}`"
        )
    record = read_record(folder / stage)
    record["folder"] = str(folder / stage)
    return record


def _describe(record: dict) -> str:
    prov, proc = record.get("provenance", {}), record.get("process", {})
    commit = (prov.get("git_commit") or "unknown")[:10] + (" (uncommitted changes)" if prov.get("git_dirty") else "")
    return (
        f"{record['folder']} (stage computed {prov.get('time_utc', '?')} on {proc.get('host', '?')}, "
        f"commit {commit}, {record.get('wall_seconds', float('nan')):.0f} s)"
    )


def result_or_compute(stage: str, compute, scale: str | None = None):
    """A chapter's main result: ``compute()`` in this build, or, when ``$REPRO_RESULTS`` names a results
    folder, the result that stage ``stage`` of ``python -m attention_paths reproduce`` stored there.

    Prints where the result comes from (the figures of the chapter are drawn from it).  A stored result
    must have been made at the chapter's scale and by this version of the code (same :func:`code_version`);
    otherwise this raises rather than show figures of other code or another scale.
    """
    folder = config.results_folder()
    if folder is None:
        print("Results: computed in this build.")
        return compute()
    record = load_stage_result(stage, folder)
    if record is None:
        raise FileNotFoundError(
            f"REPRO_RESULTS={folder} has no output of stage {stage!r}; run `python -m "
            f"attention_paths reproduce --out {folder} --only {stage}`"
        )
    scale = config.get_scale(scale)
    if record["params"].get("scale") != scale:
        raise ValueError(
            f"REPRO_RESULTS stage {stage!r} was computed at scale {record['params'].get('scale')!r}, "
            f"this build is at REPRO_SCALE={scale!r}; set REPRO_SCALE to match"
        )
    files = record.get("code_files")
    if record["code_version"] != code_version(tuple(files) if isinstance(files, list) else None):
        raise ValueError(
            f"REPRO_RESULTS stage {stage!r} was computed by other code (code version "
            f"{record['code_version'][:12]}, this is {code_version()[:12]}); rerun the stage with "
            "this code or check out the commit that made it"
        )
    with open(Path(record["folder"]) / RESULT, "rb") as fh:
        result = pickle.load(fh)
    print(f"Results: loaded from {_describe(record)}.")
    return result
