"""Staged, resumable, parallel runs (issue 9): named stages with explicit inputs and outputs.

A :class:`Stage` is a function that writes files into a folder, with its settings (``params``) and the
names of the stages whose outputs it reads (``deps``).  :func:`run_pipeline` runs a list of stages into
``out/<stage>/``:

* **Skipping.**  Each stage has a *key*: the SHA-256 of its name, settings, the code version of the
  package (:func:`code_version`, a hash of every source file, so an uncommitted edit counts) and the keys
  of the stages it depends on.  A stage whose folder holds a record with the same key, whose files all
  match the sizes and SHA-256 in that record, and whose inputs are still the outputs it was computed from
  (their content hashes are recorded), is skipped; any change upstream — of settings, code or, after a
  forced or nondeterministic recomputation, of the output itself — reruns the stages below it.
* **Atomic outputs.**  A stage writes into a temporary folder next to its final one; the record
  (``_stage.json``: key, settings, code version, file hashes, provenance, wall time) is written last,
  and the folder is renamed into place.  An interrupted run leaves no final folder, only a temporary one
  that the next run removes.
* **Corruption.**  A truncated, edited or missing output file no longer matches its record: the stage is
  reported ``corrupt`` and recomputed, never silently reused.
* **Resumption** inside a long stage (training): the stage gets a persistent ``work`` folder
  (``out/_work/<stage>``) where it may keep checkpoints between interrupted runs.
* **Parallelism** is Dask's (:mod:`dask.distributed`): the stages become a ``dask.delayed`` graph whose
  edges are the ``deps``; with no client it runs on Dask's synchronous scheduler (serially, in this
  process), with a :class:`distributed.Client` it runs on that client's workers — a
  :class:`distributed.LocalCluster` on a laptop or a GPU box, or a cluster started with
  ``dask scheduler`` / ``dask worker`` under SLURM or Kubernetes.  Independent stages run at once.
  Stages that need a GPU ask for the worker resource ``GPU`` (workers started with
  ``--resources GPU=1`` take them; without any such worker the stage runs on any worker).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

import dask

from attention_paths.base.provenance import PACKAGE_DIR, code_version, provenance
from attention_paths.runs import results
from attention_paths.runs.lock import ResultsFolderLocked, results_lock  # noqa: F401 (the lock was defined here)
from attention_paths.runs.results import stage_state

__all__ = ["Stage", "StageContext", "stage_keys", "run_pipeline", "status_table"]


def _clean_leftovers(out: Path) -> list[str]:
    """Remove the temporary (``.<stage>.tmp-*``) and superseded (``.<stage>.old-*``) folders that killed runs
    left behind; only under the folder's lock, when no other run can be writing into them."""
    removed = []
    for p in list(out.glob(".*.tmp-*")) + list(out.glob(".*.old-*")):
        if p.is_dir():
            shutil.rmtree(p, ignore_errors=True)
            removed.append(p.name)
    return removed


@dataclass(frozen=True)
class Stage:
    """One named step.

    Attributes
    ----------
    name : str
        folder name of the output, ``[A-Za-z0-9._-]+``
    func : callable
        ``func(ctx: StageContext) -> dict | None``; a module-level function (workers import it); it
        writes its files under ``ctx.out`` and may return a small JSON-able summary kept in the record
    params : dict
        settings (JSON-able); they enter the key and reach ``func`` as ``ctx.params``
    deps : tuple of str
        names of the stages whose outputs ``func`` reads (``ctx.inputs[name]`` is that folder)
    gpu : bool
        True when the stage should run on a worker with a GPU, where there is one
    code : tuple of str
        the package's source files (e.g. ``("tasks/omniglot/training.py",)``) whose content enters the
        key; empty (default): every file, so that any code change reruns the stage.  Give a list only for
        expensive stages whose code is stable (training), and list everything they import from the package.
    options : dict
        run-time settings that do not change the result (e.g. CPU threads); they reach ``func`` as
        ``ctx.options`` and, unlike ``params``, do not enter the key
    prefix : str
        the name's group prefix (e.g. ``"paper-seed1."`` for one network of an ensemble): the stage's
        inputs are handed to ``func`` under the dependencies' names without it (``ctx.inputs["train"]`` for
        ``"paper-seed1.train"``), so one stage function serves every group
    """

    name: str
    func: Callable
    params: dict = field(default_factory=dict)
    deps: tuple = ()
    gpu: bool = False
    code: tuple = ()
    options: dict = field(default_factory=dict)
    prefix: str = ""

    def local(self, dep: str) -> str:
        """The name under which dependency ``dep`` reaches the stage function (its prefix removed)."""
        return dep[len(self.prefix) :] if self.prefix and dep.startswith(self.prefix) else dep

    def __post_init__(self):
        ok = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
        if not self.name or not set(self.name) <= ok or self.name.startswith((".", "_")):
            raise ValueError(
                f"bad stage name {self.name!r}: use letters, digits, '.', '_', '-' (not starting with '.' or '_')"
            )
        object.__setattr__(self, "deps", tuple(self.deps))
        object.__setattr__(self, "code", tuple(self.code))
        missing = [m for m in self.code if not (PACKAGE_DIR / m).is_file()]
        if missing:
            raise ValueError(f"stage {self.name!r} names source files that do not exist: {missing}")
        if self.prefix and not self.name.startswith(self.prefix):
            raise ValueError(f"stage {self.name!r} does not start with its prefix {self.prefix!r}")
        local = [self.local(d) for d in self.deps]
        if len(set(local)) != len(local):
            raise ValueError(f"stage {self.name!r}: two dependencies reach it under one name ({local})")


@dataclass
class StageContext:
    """What a stage function gets: its output folder, its inputs, a persistent work folder and settings."""

    name: str
    out: Path
    inputs: dict
    work: Path
    params: dict
    progress: bool = False
    options: dict = field(default_factory=dict)

    def input_record(self, name: str) -> dict:
        """The record of upstream stage ``name`` (its summary is under ``"summary"``)."""
        return results.read_record(self.inputs[name])


# ------------------------------------------------------------------------------------------ keys
def _canonical(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def _toposort(stages: list[Stage]) -> list[Stage]:
    by_name = {}
    for s in stages:
        if s.name in by_name:
            raise ValueError(f"two stages are named {s.name!r}")
        by_name[s.name] = s
    for s in stages:
        missing = [d for d in s.deps if d not in by_name]
        if missing:
            raise ValueError(f"stage {s.name!r} depends on unknown stage(s) {missing}")
    order, state = [], {}

    def visit(s, chain):
        if state.get(s.name) == "done":
            return
        if state.get(s.name) == "visiting":
            raise ValueError(f"stages form a cycle: {' -> '.join(chain + [s.name])}")
        state[s.name] = "visiting"
        for d in s.deps:
            visit(by_name[d], chain + [s.name])
        state[s.name] = "done"
        order.append(s)

    for s in stages:
        visit(s, [])
    return order


def stage_keys(stages: list[Stage]) -> dict[str, str]:
    """The key of every stage: SHA-256 of (name, params, code version, keys of its dependencies)."""
    keys = {}
    for s in _toposort(stages):
        payload = {
            "name": s.name,
            "params": s.params,
            "code": code_version(s.code),
            "deps": {d: keys[d] for d in s.deps},
        }
        keys[s.name] = hashlib.sha256(_canonical(payload).encode()).hexdigest()
    return keys


# ------------------------------------------------------------------------------------------ state
# ------------------------------------------------------------------------------------------ running
def _log(msg: str, progress: bool):
    if progress:
        print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def _execute(stage: Stage, out: str, key: str, upstream: dict, force: bool, progress: bool) -> dict:
    """Run one stage (or skip it); ``upstream`` holds the dependencies' results, so Dask orders the calls.

    Long: one stage's life in order (done, stale or corrupt; a temporary folder; the run; its record; the rename
    into place, or the temporary folder removed on failure), each step guarded by the previous one's outcome.
    """
    out = Path(out)
    final = out / stage.name
    inputs = {d: upstream[d]["content"] for d in stage.deps}  # what the upstream stages hold now
    state, reason = stage_state(final, key)
    if state == "done":
        recorded = results.read_record(final).get("upstream_content")
        if (recorded or {}) != inputs:  # an upstream stage was recomputed with other results (forced, nondeterministic)
            state, reason = "stale", "an upstream stage's output changed"
    if state == "done" and not force:
        _log(f"{stage.name}: skipped ({reason})", progress)
        return {"name": stage.name, "key": key, "status": "skipped", "content": _content(final)}
    if state in ("stale", "corrupt"):
        _log(f"{stage.name}: {state} ({reason}); recomputing", progress)
    tmp = out / f".{stage.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    tmp.mkdir(parents=True)
    work = out / "_work" / stage.name
    work.mkdir(parents=True, exist_ok=True)
    ctx = StageContext(
        stage.name,
        tmp,
        {stage.local(d): out / d for d in stage.deps},
        work,
        dict(stage.params),
        progress,
        dict(stage.options),
    )
    prov = provenance()
    _log(f"{stage.name}: running", progress)
    t0 = time.perf_counter()
    try:
        summary = stage.func(ctx)
        record = {
            "stage": stage.name,
            "key": key,
            "params": stage.params,
            "deps": list(stage.deps),
            "upstream_keys": {d: upstream[d]["key"] for d in stage.deps},
            "upstream_content": inputs,
            "code_version": code_version(stage.code),
            "code_files": list(stage.code) or "all",
            "provenance": prov,
            "process": {"host": platform.node(), "pid": os.getpid()},
            "wall_seconds": time.perf_counter() - t0,
            "summary": summary or {},
            "files": results.file_hashes(tmp),
        }
        results.write_record(tmp, record)
        old = out / f".{stage.name}.old-{uuid.uuid4().hex[:8]}"
        if final.exists():
            final.rename(old)
        tmp.rename(final)
        shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _log(f"{stage.name}: done in {record['wall_seconds']:.1f} s", progress)
    return {
        "name": stage.name,
        "key": key,
        "status": "ran",
        "wall_seconds": record["wall_seconds"],
        "content": _content(final),
    }


def _content(folder: Path) -> str:
    """SHA-256 of a finished stage's file list (names, sizes and hashes from its record)."""
    files = results.read_record(folder)["files"]
    return hashlib.sha256(_canonical(files).encode()).hexdigest()


def run_pipeline(
    stages: Iterable[Stage],
    out,
    *,
    client=None,
    force: Iterable[str] = (),
    only: Iterable[str] | None = None,
    progress: bool = True,
) -> dict[str, dict]:
    """Run ``stages`` into ``out/<stage>/``, skipping those already done; returns {name: result}.

    Parameters
    ----------
    client : distributed.Client, optional
        runs the stages on its workers; ``None`` runs serially on Dask's synchronous scheduler in this
        process
    force : iterable of str
        names of stages to recompute even when done; their dependants rerun when the recomputed output
        differs (each record holds the content hashes of the outputs it was computed from)
    only : iterable of str, optional
        run just these stages and what they need (default: all)

    Each result is a dict with ``name``, ``key`` and ``status`` (``"ran"`` or ``"skipped"``).  A failing stage
    raises (its
    dependants do not run; finished stages stay on disk and are skipped next time).
    """
    stages = _toposort(list(stages))
    by_name = {s.name: s for s in stages}
    force = set(force)
    for name in force | set(only or ()):
        if name not in by_name:
            raise ValueError(f"unknown stage {name!r}; stages are {[s.name for s in stages]}")
    if only is not None:
        need, todo = set(), list(only)
        while todo:
            n = todo.pop()
            if n not in need:
                need.add(n)
                todo.extend(by_name[n].deps)
        stages = [s for s in stages if s.name in need]
    keys = stage_keys(stages)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    with results_lock(out):  # one run per results folder; leftovers of killed runs are removed under it
        removed = _clean_leftovers(out)
        if removed:
            _log(f"removed leftovers of interrupted runs: {', '.join(sorted(removed))}", progress)
        return _run_graph(stages, out, keys, client, force, progress)


def _run_graph(stages, out: Path, keys: dict, client, force: set, progress: bool) -> dict[str, dict]:
    tasks = {}
    for s in stages:
        upstream = {d: tasks[d] for d in s.deps}
        annotations = {"resources": {"GPU": 1}} if (s.gpu and client is not None and _has_gpu_workers(client)) else {}
        with dask.annotate(**annotations):
            tasks[s.name] = dask.delayed(_execute, pure=False, name=f"stage-{s.name}-{keys[s.name][:12]}")(
                s, str(out), keys[s.name], upstream, s.name in force, progress
            )
    names = list(tasks)
    if client is None:
        results = dask.compute(*[tasks[n] for n in names], scheduler="synchronous")
    else:
        futures = client.compute([tasks[n] for n in names], optimize_graph=False)
        results = client.gather(futures)
    return dict(zip(names, results, strict=True))


def _has_gpu_workers(client) -> bool:
    info = client.scheduler_info().get("workers", {})
    return any(w.get("resources", {}).get("GPU", 0) > 0 for w in info.values())


def status_table(stages: Iterable[Stage], out) -> str:
    """One line per stage: its state in ``out`` and why."""
    stages = _toposort(list(stages))
    keys = stage_keys(stages)
    width = max(len(s.name) for s in stages)
    lines = [f"{'stage':<{width}}  {'state':<8} {'gpu':<4} reason"]
    for s in stages:
        state, reason = stage_state(Path(out) / s.name, keys[s.name])
        lines.append(f"{s.name:<{width}}  {state:<8} {'yes' if s.gpu else '':<4} {reason}")
    return "\n".join(lines)
