"""Benchmark of the Omniglot theory grid: the widths x temperatures solves at P = 600 with warm starts.

    python benchmarks/bench_oneshot_grid.py                 # the paper's 10 x 10 grid (about 7 min on 2 cores)
    python benchmarks/bench_oneshot_grid.py --widths 10,100 --taus 0.1,0.5 --cold

Extracts the paper-size training set (P = 600) and evaluation sets from the committed CPU-trained network,
then solves every grid point with continuation from the widest network down (as ``oneshot.theory_grid``).
With ``--cold`` it also solves each point from the GP point, for comparison.  Target (issue 6): the 100-point
grid at P = 600 in under 10 minutes on 2 CPU cores.
"""

from __future__ import annotations

import argparse
import dataclasses
import platform
import time

import numpy as np

import attention_paths as ap
from attention_paths.tasks import oneshot
from attention_paths.tasks.omniglot.training import load_network


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    cfg = dataclasses.asdict(oneshot.ONESHOT_EXPERIMENT["paper"])
    parser.add_argument("--widths", default=",".join(map(str, cfg["widths"])))
    parser.add_argument("--taus", default=",".join(map(str, cfg["taus"])))
    parser.add_argument("--P", type=int, default=cfg["P"])
    parser.add_argument("--cold", action="store_true", help="also solve every point from the GP point")
    args = parser.parse_args()
    widths = [int(v) for v in args.widths.split(",")]
    taus = [float(v) for v in args.taus.split(",")]
    net, rec = load_network("quick", train_if_missing=False)
    t0 = time.perf_counter()
    data = oneshot.extract(net, dict(cfg, P=args.P), record=rec)
    t_extract = time.perf_counter() - t0
    t0 = time.perf_counter()
    kernel = ap.PathKernel(data.features["train"])
    t_gram = time.perf_counter() - t0
    grid = oneshot.theory_grid(data, widths, taus, kernel=kernel)
    n = len(widths) * len(taus)
    print(f"# Omniglot theory grid, {platform.machine()}, P={args.P}, {len(taus)} temperatures x {len(widths)} widths")
    print(f"{'case':<34}{'time [s]':>9}{'per solve [s]':>14}{'iters (mean)':>13}{'max grad':>10}")
    print(f"{'extraction (P + 4 x 1000 episodes)':<34}{t_extract:9.1f}")
    print(f"{'packed path-Gram tensor':<34}{t_gram:9.1f}")
    print(
        f"{'grid, continuation':<34}{grid.seconds:9.1f}{grid.seconds / n:14.2f}"
        f"{grid.n_iter.mean():13.1f}{grid.grad_max.max():10.1e}"
    )
    if args.cold:
        t0, iters = time.perf_counter(), []
        for tau in taus:
            for N in widths:
                r = ap.solve(ap.Action(kernel, data.y["train"], tau, ap.Architecture.uniform((4, 4), N)), n_restarts=0)
                iters.append(r.n_iter)
        t = time.perf_counter() - t0
        print(f"{'grid, cold starts':<34}{t:9.1f}{t / n:14.2f}{np.mean(iters):13.1f}")


if __name__ == "__main__":
    main()
