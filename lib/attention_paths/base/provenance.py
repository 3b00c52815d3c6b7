"""Provenance recorded next to every result: code version (git commit, source hash), machine and time, and
the closing "Reproducibility" record of a chapter."""

from __future__ import annotations

import ast
import hashlib
import importlib.metadata
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

from attention_paths.base import citation, config, git
from attention_paths.base.version import __version__

__all__ = [
    "provenance",
    "hardware",
    "code_version",
    "import_closure",
    "PACKAGE_DIR",
    "reproducibility_report",
    "CODE_PATHS",
    "DirtyTreeError",
    "code_changes",
    "committed_code_provenance",
]

PACKAGE_DIR = Path(__file__).resolve().parents[1]
# what a result committed under data/ is made by: the package's source and its declared dependencies
CODE_PATHS = ("lib", "pyproject.toml")


def provenance() -> dict:
    """Code version, platform and time, recorded next to every result."""
    commit, dirty = git.state()
    return {
        "package_version": __version__,
        "git_commit": commit,
        "git_dirty": dirty,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "machine": platform.machine(),
        "platform": platform.platform(),
        "time_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


class DirtyTreeError(RuntimeError):
    """A result was to be committed under ``data/`` from code with uncommitted changes; the message names them."""


def code_changes(paths=CODE_PATHS, *, checkout=None) -> list[str] | None:
    """The files under ``paths`` (relative to the checkout's root) that differ from its commit: modified,
    added, deleted or untracked and not ignored, sorted.  ``checkout``: a folder of the git checkout (default:
    the one the package runs from); ``None`` when it is not a git checkout."""
    try:
        root = Path(git.run("rev-parse", "--show-toplevel", cwd=Path(checkout or PACKAGE_DIR)).strip())
        out = git.run("status", "--porcelain=v1", "-z", "--untracked-files=all", "--", *paths, cwd=root)
    except (OSError, subprocess.SubprocessError):
        return None
    entries = [e for e in out.split("\0") if e]
    names, skip = [], False
    for e in entries:  # "XY path", a rename followed by its old path as a separate entry
        if skip:
            skip = False
            continue
        names.append(e[3:])
        skip = e[0] in "RC"
    return sorted(names)


def _code_diff(paths, checkout) -> str:
    """``git diff HEAD`` of ``paths`` (binary files included), then each untracked file as an added one."""
    root = Path(git.run("rev-parse", "--show-toplevel", cwd=Path(checkout or PACKAGE_DIR)).strip())
    diff = git.run("diff", "HEAD", "--binary", "--", *paths, cwd=root)
    for f in git.run("ls-files", "--others", "--exclude-standard", "-z", "--", *paths, cwd=root).split("\0"):
        if f:  # git diff --no-index exits 1 when the files differ, which they do
            diff += subprocess.run(
                ["git", "diff", "--no-index", "--binary", "--", "/dev/null", f],
                capture_output=True,
                text=True,
                cwd=root,
                timeout=60,
            ).stdout
    return diff


def committed_code_provenance(what: str, *, allow_dirty: bool = False, paths=CODE_PATHS, checkout=None) -> dict:
    """:func:`provenance` for a result ``what`` to be committed under ``data/``, which must name a commit that
    reproduces it: uncommitted changes to the code (``paths``: the package and its dependencies) raise
    :class:`DirtyTreeError` naming the files, as does a copy of the package outside git.  ``allow_dirty=True``
    records the changed files (``git_changes``) and the full ``git diff`` (``git_diff``) instead, so that a
    dirty export is never silent.  ``git_dirty`` is that of ``paths`` (``code_paths``), not of the book's
    files or the data."""
    prov = provenance()
    changes = code_changes(paths, checkout=checkout)
    if changes is not None and checkout is not None:  # the commit of that checkout, not the package's
        prov["git_commit"] = git.run("rev-parse", "HEAD", cwd=Path(checkout)).strip() or None
    if changes is None or not prov.get("git_commit"):
        if not allow_dirty:
            raise DirtyTreeError(
                f"refusing {what}: the code runs from {PACKAGE_DIR}, not a git checkout, so no commit names "
                "it; run it from a checkout, or pass allow_dirty=True to record it without a commit"
            )
        return prov | {"git_dirty": None, "code_paths": list(paths)}
    prov |= {"git_dirty": bool(changes), "code_paths": list(paths)}
    if changes:
        if not allow_dirty:
            raise DirtyTreeError(
                f"refusing {what}: the code has uncommitted changes in {', '.join(changes)}; commit them "
                f"first, or pass allow_dirty=True to record the full git diff with the result"
            )
        prov |= {"git_changes": changes, "git_diff": _code_diff(paths, checkout)}
    return prov


def hardware() -> dict:
    """The machine a run uses: CPU model and core count, torch threads and CUDA device (if any)."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next((line.split(":", 1)[1].strip() for line in fh if line.startswith("model name")), cpu)
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
    }


_CODE_VERSION: str | None = None


def code_version(files: tuple | None = None) -> str:
    """SHA-256 over the package's source files (path and content), so that any code change invalidates;
    ``files``: only these files (paths relative to the package folder, e.g. ``"base/io.py"``)."""
    global _CODE_VERSION
    if files:
        return _hash_files(sorted(PACKAGE_DIR / f for f in files))
    if _CODE_VERSION is None:
        _CODE_VERSION = _hash_files(sorted(PACKAGE_DIR.rglob("*.py")))
    return _CODE_VERSION


def import_closure(*files: str) -> tuple[str, ...]:
    """The package's source files that ``files`` run: themselves and every package module they import at
    module level, transitively (paths relative to the package folder, sorted; e.g. ``"base/io.py"``).

    Parsed, not imported.  Every module brings its packages' ``__init__.py`` files (Python runs them first);
    ``from attention_paths.base import config`` names the module ``base/config.py``.  Stages keyed by part of
    the code use it (:mod:`attention_paths.runs.stages`), so that no file they run is left out by hand.
    """
    seen: set[str] = set()
    todo = list(files)
    while todo:
        rel = todo.pop()
        if rel in seen:
            continue
        path = PACKAGE_DIR / rel
        if not path.is_file():
            raise FileNotFoundError(f"import_closure: no package file {rel!r} under {PACKAGE_DIR}")
        seen.add(rel)
        parts = Path(rel).parts  # importing a module runs its packages' __init__ first
        own = len(parts) - rel.endswith("__init__.py")
        todo.extend(Path(*parts[:i], "__init__.py").as_posix() for i in range(own))
        for node in ast.parse(path.read_text()).body:  # module level only: what importing the file runs
            if isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:  # a submodule by that name, else the module itself
                    found = _package_file(f"{node.module}.{alias.name}") or _package_file(node.module)
                    todo.extend([found] if found else [])
            elif isinstance(node, ast.Import):
                todo.extend(f for f in (_package_file(a.name) for a in node.names) if f)
    return tuple(sorted(seen))


def _package_file(module: str) -> str | None:
    """The package file of a dotted module name (``attention_paths.base.io`` -> ``"base/io.py"``), or None."""
    parts = module.split(".")
    if parts[0] != "attention_paths" or len(parts) == 1:
        return None
    rel = Path(*parts[1:])
    if (PACKAGE_DIR / rel.with_suffix(".py")).is_file():
        return rel.with_suffix(".py").as_posix()
    if (PACKAGE_DIR / rel / "__init__.py").is_file():
        return (rel / "__init__.py").as_posix()
    return None


def _hash_files(paths) -> str:
    h = hashlib.sha256()
    for p in paths:
        h.update(p.relative_to(PACKAGE_DIR).as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def reproducibility_report(scale: str | None = None, seeds: dict | None = None, notes: dict | None = None) -> str:
    """The closing "Reproducibility" record of a chapter: scale, seeds, versions, devices, dtype and commit, then
    the BibTeX entry that cites this version (:func:`attention_paths.base.citation.bibtex`, the paper's entry left
    out).

    ``seeds`` and ``notes`` are printed as given (e.g. ``{"training set": 27}``); package versions are read
    from the installed distributions, devices from torch and (when already imported) JAX.
    """
    p = provenance()
    lines = [
        f"scale              REPRO_SCALE={config.get_scale(scale)}",
        f"version            attention-paths {p['package_version']}, commit {p['git_commit'] or 'unknown'}",
    ]
    if p.get("git_dirty"):
        lines.append(" " * 19 + "(with uncommitted changes)")
    for label, d in (("seeds", seeds), ("notes", notes)):
        for k, v in (d or {}).items():
            lines.append(f"{label:<19}{k}: {v}")
            label = ""
    versions = []
    for dist in ("numpy", "scipy", "torch", "jax", "numpyro", "matplotlib"):
        try:
            versions.append(f"{dist} {importlib.metadata.version(dist)}")
        except importlib.metadata.PackageNotFoundError:
            pass
    lines.append(f"packages           Python {p['python']}, " + ", ".join(versions))
    dev = (
        f"torch: {torch.cuda.get_device_name(0)}"
        if torch.cuda.is_available()
        else f"torch: CPU ({torch.get_num_threads()} threads)"
    )
    jax = sys.modules.get("jax")  # JAX's devices only when a chapter has started it (sampling)
    if jax is not None:
        dev += f"; JAX: {', '.join(sorted({d.platform for d in jax.devices()}))} x {jax.device_count()}"
    lines.append(f"devices            {dev}; {p['machine']}, {p['platform']}")
    lines.append(
        "dtype              float64 for the theory, kernels and sampling; float32 (CPU) or float16 "
        "autocast (GPU) for training"
    )
    try:
        results = config.results_folder()
    except FileNotFoundError as err:
        results = f"unusable ({err})"
    lines.append(
        "results            "
        + (
            f"loaded from REPRO_RESULTS={results} (the stage records printed above "
            "say where and when each was computed)"
            if results
            else "computed in this build"
        )
    )
    lines.append(f"built              {p['time_utc']}")
    lines += ["", "cite this version:", citation.bibtex(p["git_commit"], p["git_dirty"], paper=False)]
    return "\n".join(lines)
