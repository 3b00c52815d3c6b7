"""The git state of the checkout the package runs from: standard library only, so that both
:mod:`attention_paths.base.citation` (which must stay light) and :mod:`attention_paths.base.provenance` read it
without importing each other.

>>> commit, dirty = state()
>>> commit is None or (len(commit) == 40 and isinstance(dirty, bool))
True
"""

from __future__ import annotations

import subprocess
from pathlib import Path

__all__ = ["state", "run"]

PACKAGE_DIR = Path(__file__).resolve().parents[1]


def run(*args: str, cwd: Path, timeout: float = 60) -> str:
    """``git *args`` in ``cwd``; its standard output.  Raises :class:`subprocess.CalledProcessError` when git
    fails and :class:`OSError` when there is no git."""
    return subprocess.run(["git", *args], capture_output=True, text=True, cwd=cwd, timeout=timeout, check=True).stdout


def state(cwd: Path | None = None) -> tuple[str | None, bool | None]:
    """(commit, dirty) of the checkout at ``cwd`` (default: the package's folder): the HEAD commit and whether
    tracked files differ from it; ``(None, None)`` outside a git checkout or without git."""
    here = Path(cwd or PACKAGE_DIR)
    try:
        commit = run("rev-parse", "HEAD", cwd=here, timeout=10).strip() or None
        dirty = bool(run("status", "--porcelain", "--untracked-files=no", cwd=here, timeout=10).strip())
    except (OSError, subprocess.SubprocessError):
        return None, None
    return commit, (dirty if commit else None)
