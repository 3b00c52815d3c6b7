"""A hang detector for executing notebooks: a kernel that does no work for a long time is stopped.

A cell's wall-clock timeout cannot tell a slow cell on a busy machine from a hung one, and the book's
build must not fail because the machine is slow. So the build (this module as a Sphinx extension) and the
chapter tests (``conftest.py``) run with a wall-clock limit of hours, as a last backstop, and with this
watch: every ``interval`` seconds it reads, from ``/proc``, the CPU time of every Jupyter kernel started by
this process and of the kernel's own child processes. A kernel whose CPU time has not grown for
``quiet_seconds`` (default 1,200 s; ``$BOOK_HANG_SECONDS``) while it lives is hung: waiting on a lock, a
dead pipe or a network that never answers. The watch kills it, and says so on stderr; the notebook client
then reports a dead kernel and the build or test fails at that cell. A slow cell keeps using CPU and is
never stopped, however long it takes.

Linux only (``/proc``); elsewhere the watch does nothing and the wall-clock limit alone applies.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

DEFAULT_QUIET_SECONDS = 1200.0
KERNEL_MARKERS = ("ipykernel_launcher", "ipykernel")


def quiet_seconds(environ=None) -> float:
    """The idle time after which a kernel counts as hung: ``$BOOK_HANG_SECONDS`` or 1,200 s."""
    value = (os.environ if environ is None else environ).get("BOOK_HANG_SECONDS", "").strip()
    if not value:
        return DEFAULT_QUIET_SECONDS
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not seconds > 0:
        raise ValueError(f"BOOK_HANG_SECONDS={value!r} must be a positive number of seconds")
    return seconds


def _stat(pid: int) -> tuple[int, int] | None:
    """``(parent pid, CPU ticks of the process and its reaped children)`` from ``/proc/<pid>/stat``."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()  # after "pid (comm) ": state is fields[0]
    ppid = int(fields[1])
    utime, stime, cutime, cstime = (int(x) for x in fields[11:15])
    return ppid, utime + stime + cutime + cstime


def _processes() -> dict[int, tuple[int, int]]:
    """Every live process: pid -> (parent pid, CPU ticks)."""
    out = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            st = _stat(int(entry.name))
            if st is not None:
                out[int(entry.name)] = st
    return out


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _descendants(pid: int, procs: dict) -> list[int]:
    children: dict[int, list[int]] = {}
    for p, (ppid, _) in procs.items():
        children.setdefault(ppid, []).append(p)
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


class HangWatch(threading.Thread):
    """Kill a kernel (a descendant of ``root`` whose command line names ipykernel) that used no CPU for
    ``quiet`` seconds, counting its own child processes; checks every ``interval`` seconds."""

    def __init__(self, quiet: float | None = None, interval: float = 30.0, root: int | None = None, log=None):
        super().__init__(name="hangwatch", daemon=True)
        self.quiet = quiet_seconds() if quiet is None else float(quiet)
        self.interval = float(interval)
        self.root = os.getpid() if root is None else root
        self.log = log or sys.stderr
        self.killed: list[int] = []
        self._seen: dict[int, tuple[int, float]] = {}  # kernel pid -> (CPU ticks, when they last grew)
        self._stop = threading.Event()

    def check(self, now: float | None = None) -> list[int]:
        """One look: returns the kernels killed now."""
        now = time.monotonic() if now is None else now
        procs = _processes()
        kernels = [p for p in _descendants(self.root, procs) if any(m in _cmdline(p) for m in KERNEL_MARKERS)]
        killed = []
        for k in kernels:
            ticks = sum(procs[p][1] for p in [k, *_descendants(k, procs)] if p in procs)
            last = self._seen.get(k)
            if last is None or ticks != last[0]:
                self._seen[k] = (ticks, now)
            elif now - last[1] >= self.quiet:
                try:
                    os.kill(k, signal.SIGKILL)
                except OSError:
                    continue
                killed.append(k)
                print(
                    f"hangwatch: kernel {k} used no CPU for {now - last[1]:.0f} s: stopped as hung "
                    f"(BOOK_HANG_SECONDS={self.quiet:.0f}; a slow cell keeps using CPU and is never stopped)",
                    file=self.log,
                    flush=True,
                )
        self._seen = {k: v for k, v in self._seen.items() if k in kernels}
        self.killed += killed
        return killed

    def run(self):
        while not self._stop.wait(self.interval):
            try:
                self.check()
            except Exception as err:  # the watch must never break a build; it only reports
                print(f"hangwatch: {type(err).__name__}: {err}", file=self.log, flush=True)

    def stop(self):
        self._stop.set()


_WATCH: HangWatch | None = None


def start() -> HangWatch | None:
    """Start the process's watch once (``None`` where ``/proc`` is missing)."""
    global _WATCH
    if _WATCH is None and Path("/proc/self/stat").exists():
        _WATCH = HangWatch()
        _WATCH.start()
    return _WATCH


def setup(app):
    """Sphinx extension: watch the kernels that execute the book's chapters."""
    start()
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
