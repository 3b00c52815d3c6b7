"""One writer per results folder (issue 37 §3): :class:`results_lock`, taken by every command that writes a
folder (``python -m attention_paths <experiment>``, ``omniglot-train``, and the staged runs).  Standard
library only, so that the command line can take it before loading anything heavy."""

from __future__ import annotations

import fcntl
import os
import platform
import sys
import time
from pathlib import Path

__all__ = ["ResultsFolderLocked", "results_lock", "LOCK"]

LOCK = ".lock"  # the lock file inside the folder (the same name as attention_paths.runs.results.LOCK)


class ResultsFolderLocked(RuntimeError):
    """Another live run holds the results folder."""


def _command() -> str:
    """This process's command line, as typed (``python -m attention_paths ...`` for the package's CLI)."""
    argv = list(sys.argv)
    if argv and argv[0].endswith(os.path.join("attention_paths", "__main__.py")):
        argv[0] = "python -m attention_paths"
    return " ".join(argv) or "python"


class results_lock:
    """Exclusive lock on a results folder for the duration of a run (``with results_lock(out): ...``).

    An ``fcntl`` lock on ``out/.lock``: released by the operating system when the holder exits or crashes, so
    a killed run never leaves the folder locked.  A second run on the same folder fails at once with
    :class:`ResultsFolderLocked`, naming the holder (host, pid, start time, command) written into the lock
    file.  ``command``: what to record as the holder's command (default: this process's command line).
    """

    def __init__(self, out, command: str | None = None):
        self.path = Path(out) / LOCK
        self.command = command
        self.fh = None

    def __enter__(self):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fh = open(self.path, "a+")
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            fh.seek(0)
            holder = fh.read().strip() or "unknown"
            fh.close()
            raise ResultsFolderLocked(
                f"results folder {self.path.parent} is in use by another run ({holder}); "
                "wait for it to finish, or use another --out"
            ) from None
        fh.seek(0)
        fh.truncate()
        since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        command = " ".join((self.command or _command()).split())
        fh.write(f"host {platform.node()}, pid {os.getpid()}, since {since}, command: {command}")
        fh.flush()
        self.fh = fh
        return self

    def __exit__(self, *exc):
        if self.fh is not None:
            self.fh.seek(0)
            self.fh.truncate()
            fcntl.flock(self.fh.fileno(), fcntl.LOCK_UN)
            self.fh.close()
            self.fh = None
        return False
