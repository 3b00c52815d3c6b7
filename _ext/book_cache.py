"""Keep the book's execution cache correct; run by ``make book`` before every build.

Jupyter Book re-executes a chapter when its code cells change (``execute_notebooks: cache``), but it cannot
see what else a chapter's outputs depend on. This script clears the cache of a build folder when any of
those inputs changed since the cache was filled:

* the package's source (``lib/**/*.py``), ``requirements.txt`` and ``pyproject.toml``;
* the committed results the chapters reload (every file under ``data/``);
* the environment the chapters read: ``REPRO_SCALE`` (each scale also builds into its own folder),
  ``REPRO_RESULTS`` (and the stage records of that folder) and ``REPRO_FIGURES``.

At ``REPRO_SCALE=paper`` without ``REPRO_RESULTS`` it stops the build at once (:func:`paper_route`): the
paper-size results take hours to compute and are computed by the resumable ``reproduce`` command, which the
book then renders.

It also drops the cached paper-to-book map, which tabulates the claim records the other chapters write when
they execute, so that the map is recomputed in every build (about 3 s).

    python _ext/book_cache.py BUILD_ROOT      # BUILD_ROOT as given to jupyter-book's --path-output
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENVIRONMENT = ("REPRO_SCALE", "REPRO_RESULTS", "REPRO_FIGURES")
ALWAYS_RERUN = ("figure_map.md",)


def state(root: Path = ROOT, environ=None) -> str:
    """SHA-256 of everything outside a chapter's code cells that its outputs depend on."""
    environ = os.environ if environ is None else environ
    h = hashlib.sha256()
    files = sorted((root / "lib").rglob("*.py")) + [root / "requirements.txt", root / "pyproject.toml"]
    files += sorted(p for p in (root / "data").rglob("*") if p.is_file())
    results = environ.get("REPRO_RESULTS", "").strip()
    if results and Path(results).is_dir():
        files += sorted(Path(results).glob("*/_stage.json"))
    for p in files:
        if p.exists() and "__pycache__" not in p.parts:
            h.update(str(p.relative_to(root) if p.is_relative_to(root) else p).encode())
            h.update(p.read_bytes())
    for name in ENVIRONMENT:
        h.update(f"{name}={environ.get(name, '')}".encode())
    return h.hexdigest()


def cache_dir(build_root) -> Path:
    """Where Jupyter Book keeps the execution cache of a build folder (its default location)."""
    return Path(build_root) / "_build" / ".jupyter_cache"


def _remove(path: Path) -> None:
    """Remove a cache entry whatever it is (a folder, or a file where the folder should be)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


PAPER_ROUTE = """REPRO_SCALE=paper renders the paper-size results; the book build does not compute them
(about 1.5 hours on two CPU cores, benchmarks/README.md "Paper scale"). Compute them first, staged and
resumable, then build the book from them:

  .venv/bin/python -m attention_paths reproduce --scale paper --out results/paper
  REPRO_RESULTS=$PWD/results/paper make book REPRO_SCALE=paper

(add --workers K to spread the stages over K cores; --status shows what is done)"""


def paper_route(environ=None) -> str | None:
    """Why this build cannot start (a paper-scale build without ``REPRO_RESULTS``), or ``None``."""
    environ = os.environ if environ is None else environ
    scale = environ.get("REPRO_SCALE", "").strip().lower()
    if scale == "paper" and not environ.get("REPRO_RESULTS", "").strip():
        return PAPER_ROUTE
    return None


def _read_stamp(stamp: Path) -> str | None:
    """The recorded state, or ``None`` when there is none or it is not a state (binary bytes, garbage)."""
    try:
        text = stamp.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return text if len(text) == 64 and all(c in "0123456789abcdef" for c in text) else None


def _drop_always_rerun(cache: Path) -> list[str]:
    """Remove the always-rerun pages from a jupyter-cache database; any failure to read it raises."""
    from jupyter_cache import get_cache

    if not cache.is_dir():
        raise NotADirectoryError(f"{cache} is not a folder")
    dropped = []
    jc = get_cache(str(cache))
    for rec in jc.list_cache_records():
        if Path(rec.uri).name in ALWAYS_RERUN:
            jc.remove_cache(rec.pk)
            dropped.append(Path(rec.uri).name)
    return dropped


def prepare(build_root, root: Path = ROOT, environ=None) -> dict:
    """Clear the cache when :func:`state` changed, drop the always-rerun pages; returns what was done.

    A damaged cache (its path a file, an unreadable state file, a database holding garbage or nothing) is
    cleared with a note (``"damaged"``) and the book rebuilds from scratch."""
    cache = cache_dir(build_root)
    stamp = Path(build_root) / "_build" / ".book_cache_state"
    new = state(root, environ)
    old = _read_stamp(stamp)
    damaged = None
    if stamp.exists() and old is None:
        damaged = f"the state file {stamp} is unreadable"
    present = cache.exists() or cache.is_symlink()
    cleared = present and old != new
    if cleared:
        _remove(cache)
    dropped = []
    if cache.exists():
        try:
            dropped = _drop_always_rerun(cache)
        except Exception as err:  # a damaged database: jupyter-cache and sqlalchemy raise many kinds
            damaged = f"the execution cache {cache} is damaged ({type(err).__name__})"
            _remove(cache)
            cleared = True
    stamp.parent.mkdir(parents=True, exist_ok=True)
    if stamp.is_dir():
        shutil.rmtree(stamp)
    tmp = stamp.with_suffix(".tmp")
    tmp.write_text(new + "\n")
    os.replace(tmp, stamp)
    reason = "first build" if not present and damaged is None else ("inputs changed" if cleared else "unchanged")
    return {"cleared": cleared, "reason": damaged or reason, "dropped": dropped, "damaged": damaged}


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    problem = paper_route()
    if problem:
        print(problem, file=sys.stderr)
        sys.exit(2)
    done = prepare(sys.argv[1])
    if done["damaged"]:
        what = f"{done['damaged']}: cleared it, every chapter re-executes"
    elif done["cleared"]:
        what = "cleared the execution cache (the package, data/ or REPRO_* changed)"
    else:
        what = f"execution cache kept ({done['reason']})"
    print(f"== {what}; re-executing {', '.join(ALWAYS_RERUN)}")
