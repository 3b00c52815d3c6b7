"""Start-up time of the command line and of the package (issue 25): each command in a fresh interpreter.

    python benchmarks/bench_import.py                 # this checkout
    python benchmarks/bench_import.py --src OTHER/lib # another checkout's package (e.g. a git worktree of an
                                                      # older commit), for a before/after table
    python benchmarks/bench_import.py --repeat 7

Prints a table: the median and the fastest of ``--repeat`` runs of each command, in seconds, and which of the
heavy libraries (torch, torchvision, JAX, numpy, scipy, dask, matplotlib) each loaded.  Measure on a quiet
machine: a busy one makes every import several times slower.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

HEAVY = ("torch", "torchvision", "jax", "numpy", "scipy", "dask", "matplotlib")
PROBE = "\nimport sys; print('\\nLOADED', *[m for m in {heavy!r} if m in sys.modules])"

# (what, python code run with -c); the command line runs as `python -m attention_paths --help`
COMMANDS = [
    ("python itself (python -c pass)", "pass"),
    (
        "python -m attention_paths --help",
        "import runpy, sys\nsys.argv = ['attention_paths', '--help']\n"
        "try:\n    runpy.run_module('attention_paths', run_name='__main__')\nexcept SystemExit:\n    pass",
    ),
    (
        "an argument error (--scale huge)",
        "import runpy, sys\nsys.argv = ['attention_paths', 'hmc', '--scale', 'huge']\n"
        "try:\n    runpy.run_module('attention_paths', run_name='__main__')\nexcept SystemExit:\n    pass",
    ),
    ("import attention_paths", "import attention_paths"),
    ("import attention_paths; ap.Action (the theory)", "import attention_paths as ap\nap.Action"),
    ("import attention_paths.runs.stages (every task)", "import attention_paths.runs.stages"),
]


def measure(code: str, env: dict) -> tuple[float, list[str]]:
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", code + PROBE.format(heavy=HEAVY)], capture_output=True, text=True, env=env
    )
    seconds = time.perf_counter() - t0
    if out.returncode != 0:
        raise RuntimeError(f"{code!r} failed:\n{out.stderr}")
    return seconds, out.stdout.rsplit("LOADED", 1)[1].split()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5, help="runs of each command (default 5)")
    parser.add_argument("--src", default=None, help="import the package from this folder (PYTHONPATH) instead")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error(f"--repeat must be positive, got {args.repeat}")
    env = dict(os.environ)
    if args.src:
        env["PYTHONPATH"] = os.path.abspath(args.src) + os.pathsep + env.get("PYTHONPATH", "")
    measure("import attention_paths", env)  # warm the file cache once
    print(f"{'command':<48} {'median s':>8} {'best s':>7}  heavy libraries loaded")
    for what, code in COMMANDS:
        runs = [measure(code, env) for _ in range(args.repeat)]
        times = [t for t, _ in runs]
        loaded = ", ".join(runs[-1][1]) or "none"
        print(f"{what:<48} {statistics.median(times):8.2f} {min(times):7.2f}  {loaded}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
