"""Wall time of every chapter at the current ``REPRO_SCALE``, and its slowest cells.

    python benchmarks/bench_chapters.py                      # execute each chapter in a fresh kernel
    python benchmarks/bench_chapters.py hmc omniglot_theory  # only these
    python benchmarks/bench_chapters.py --from-build .       # read the timings of the last `make book`

Executing: each chapter (a MyST notebook under ``book/``) runs top to bottom in its own kernel, from
``book/`` as the book build runs it, one after the other; nothing is cached.  ``--from-build ROOT`` reads
instead what the last ``make book`` recorded (``ROOT`` as given to its ``--path-output``): each chapter's
execution time from the book's execution cache (``ROOT/_build/.jupyter_cache``; the build keeps no per-cell
times), so it times the build that just ran at no cost.  A chapter's time is the sum of its cells' (kernel start-up
excluded).  The goal is at most 2 minutes per chapter at the quick scale on two quiet cores (README).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOAL_SECONDS = 120.0


def _is_chapter(path: Path) -> bool:
    head = path.read_text(encoding="utf-8")[:600]
    return head.startswith("---") and "kernelspec" in head


def chapters() -> list[str]:
    return sorted(p.stem for p in (ROOT / "book").glob("*.md") if _is_chapter(p))


def _stamp(value: str) -> dt.datetime:
    return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))


def cell_seconds(nb: dict) -> list[tuple[float, str]]:
    """``(seconds, first source line)`` of every executed code cell, from the client's timestamps."""
    out = []
    for cell in nb["cells"]:
        meta = cell.get("metadata", {}).get("execution", {})
        if cell.get("cell_type") != "code" or "iopub.execute_input" not in meta:
            continue
        seconds = (_stamp(meta["shell.execute_reply"]) - _stamp(meta["iopub.execute_input"])).total_seconds()
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        lines = [ln for ln in source.splitlines() if ln.strip() and not ln.startswith(("#", ":"))]
        out.append((seconds, (lines[0] if lines else "")[:60]))
    return out


def execute(name: str) -> dict:
    """Run one chapter in a fresh kernel; returns the executed notebook (nbformat JSON)."""
    import jupytext
    import nbformat
    from nbclient import NotebookClient

    nb = jupytext.read(ROOT / "book" / f"{name}.md")
    NotebookClient(
        nb, timeout=21600, kernel_name="python3", resources={"metadata": {"path": str(ROOT / "book")}}
    ).execute()
    return json.loads(nbformat.writes(nb))


def from_build(build_root: Path) -> dict[str, float]:
    """Each chapter's execution time in the build's execution cache (jupyter-cache records it per notebook)."""
    from jupyter_cache import get_cache

    cache = build_root / "_build" / ".jupyter_cache"
    if not cache.is_dir():
        raise SystemExit(f"no execution cache under {cache}: run `make book` first")
    return {
        Path(r.uri).stem: float(r.data["execution_seconds"])
        for r in get_cache(str(cache)).list_cache_records()
        if "execution_seconds" in (r.data or {})
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", help="chapters (default: every chapter)")
    parser.add_argument("--from-build", type=Path, default=None, metavar="ROOT", help="read a build's timings")
    parser.add_argument("--top", type=int, default=3, help="slowest cells listed per chapter")
    args = parser.parse_args()
    names = args.names or chapters()
    unknown = sorted(set(names) - set(chapters()))
    if unknown:
        parser.error(f"not chapters: {', '.join(unknown)}; choose from {', '.join(chapters())}")
    scale = os.environ.get("REPRO_SCALE", "quick")
    print(
        f"# chapters at REPRO_SCALE={scale}, {os.cpu_count()} CPUs"
        + (f", from {args.from_build}" if args.from_build else "")
    )
    print(f"{'chapter':<16} {'cells':>5} {'seconds':>8} {'goal':>5}  slowest cells [s]")
    total = 0.0
    built = from_build(args.from_build) if args.from_build else None
    for name in names:
        if built is not None:
            if name not in built:
                print(f"{name:<16} not in the build's cache")
                continue
            cells, seconds = [], built[name]
        else:
            t0 = time.perf_counter()
            cells = cell_seconds(execute(name))
            seconds = sum(s for s, _ in cells) if cells else time.perf_counter() - t0
        total += seconds
        slow = "; ".join(f"{s:.0f} {src}" for s, src in sorted(cells, reverse=True)[: args.top])
        mark = "ok" if seconds <= GOAL_SECONDS else "over"
        print(f"{name:<16} {len(cells) or '':>5} {seconds:8.1f} {mark:>5}  {slow}", flush=True)
    print(f"{'all':<16} {'':5} {total:8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
