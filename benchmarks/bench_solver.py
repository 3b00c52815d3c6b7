"""Benchmark of the saddle-point solver: time and peak memory (prints a table).

    python benchmarks/bench_solver.py            # all cases (several minutes on 2 cores)
    python benchmarks/bench_solver.py --fast     # skip the largest cases
    python benchmarks/bench_solver.py --scaling  # cost of one action+gradient evaluation up to P=10000,
                                                 # 64 paths and N0=768, with fitted growth exponents

Cases (issue 2, section 5):
  (a) Markov-sized problem (P=100, N0=231, T=31, 4 paths): continuation sweep over
      N in {1000, 500, 300, 100, 50, 30, 10} with full verification (Hessian, one restart);
  (b) image-sized problem (P=600, N0=192, T=48, 16 paths, random query/key heads) at N=10;
  (c) growth with P (100 -> 5000, 16 paths) and with the number of paths (4, 16, 27, 64; P=600).
  (d) --scaling: one kernel set-up plus three evaluations of the action and its gradient at the GP point
      (what every solver iteration costs; a solve takes 25-130 of them, see (c)), growing P up to 10,000
      (low-rank form), the number of paths up to 64 and N0 up to 768, with log-log slopes.
  (e) --architectures: the paper's other networks at P=600, N=100 (issue 36): 2x4 (16 paths), 3x3 (27 paths,
      three nested order parameters) and 2x8 (64 paths): one Hessian of the action (what the solver's Newton
      steps and its verification cost) with the energy Hessian in one block (the form before issue 36: its
      (N0 Pi)^2 feature Gram and a transposed copy, 2.4 GB at 64 paths) and in blocks of at most
      DEFAULT_HESSIAN_BYTES, then a whole solve (continuation-free, no restarts, Hessian verified).
Peak memory is the peak of Python/numpy allocations (tracemalloc) during the case.
"""

from __future__ import annotations

import argparse
import platform
import time
import tracemalloc

import numpy as np

import attention_paths as ap
from attention_paths.tasks import toy


def make_features(P, n0, T, heads, form, readout, seed=0):
    rng = np.random.default_rng(seed)
    if form == "W":
        layers = toy.random_wform_layers(n0, heads, 3.0, rng)
    else:
        G = 128
        layers = [
            ap.QKFormHeads(rng.standard_normal((H, G, n0)) / np.sqrt(n0), rng.standard_normal((H, G, n0)) / np.sqrt(n0))
            for H in heads
        ]
    x = rng.standard_normal((P, n0, T))
    r = ap.readout_vector(readout, T)
    xi = ap.path_inputs(x, layers, r)
    y = np.where(xi[:, 0, :].numpy() @ rng.standard_normal(n0) > 0, 1.0, -1.0)
    return ap.path_features(xi), y


def measure(fn):
    tracemalloc.start()
    t0 = time.perf_counter()
    out = fn()
    dt = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return out, dt, peak / 2**20


def case_sweep():
    feats, y = make_features(100, 231, 31, (2, 2), "W", "last")
    widths = [1000, 500, 300, 100, 50, 30, 10]

    def run():
        k = ap.PathKernel(feats)
        acts = [ap.Action(k, y, 0.01, ap.Architecture.uniform((2, 2), N)) for N in widths]
        return ap.solve_continuation(acts, n_restarts=1)

    res, dt, mem = measure(run)
    return dict(
        case="(a) Markov-sized sweep, 7 widths",
        P=100,
        paths=4,
        seconds=dt,
        peak_MiB=mem,
        iters=sum(r.n_iter for r in res),
        grad=max(r.grad_max for r in res),
        target="< 5 s",
    )


def case_single(P, heads, N=10, tau=0.5, restarts=1, label=None, target=""):
    feats, y = make_features(P, 192, 48, heads, "QK", "mean")

    def run():
        k = ap.PathKernel(feats)
        return ap.solve(ap.Action(k, y, tau, ap.Architecture.uniform(heads, N)), n_restarts=restarts), k.mode

    (res, mode), dt, mem = measure(run)
    Pi = int(np.prod(heads))
    return dict(
        case=label or f"(c) P={P}, {Pi} paths, N={N} [{mode}]",
        P=P,
        paths=Pi,
        seconds=dt,
        peak_MiB=mem,
        iters=res.n_iter,
        grad=res.grad_max,
        target=target,
    )


def case_eval(P, heads, n0=192, N=100, tau=0.5, repeats=2, mode="lowrank"):
    """Set-up (kernel) and per-evaluation cost of the action and gradient at the GP point."""
    feats, y = make_features(P, n0, 48, heads, "QK", "mean")
    arch = ap.Architecture.uniform(heads, N)
    Us, _ = arch.gp_order_parameters()

    def run():
        t0 = time.perf_counter()
        k = ap.PathKernel(feats, mode=mode)
        act = ap.Action(k, y, tau, arch)
        t_setup = time.perf_counter() - t0
        t0 = time.perf_counter()
        for _ in range(repeats):
            act.value_and_gradient(Us)
        return k.mode, t_setup, (time.perf_counter() - t0) / repeats

    (mode, t_setup, t_eval), _, mem = measure(run)
    return dict(P=P, paths=int(np.prod(heads)), n0=n0, mode=mode, setup=t_setup, eval=t_eval, peak_MiB=mem)


def case_hessian(heads, max_bytes, P=600, N=100, tau=0.5):
    """One Hessian of the action at the GP point, its energy block within ``max_bytes``."""
    feats, y = make_features(P, 192, 48, heads, "QK", "mean")
    arch = ap.Architecture.uniform(heads, N)
    act = ap.Action(ap.PathKernel(feats), y, tau, arch)
    Us, _ = arch.gp_order_parameters()
    H, dt, mem = measure(lambda: act.hessian(Us, max_bytes=max_bytes))
    return dict(paths=int(np.prod(heads)), seconds=dt, peak_MiB=mem, n=H.shape[0]), H


def architectures():
    from attention_paths.theory.action import DEFAULT_HESSIAN_BYTES

    print(
        f"# the other architectures on {platform.machine()}, {platform.python_version()}, numpy {np.__version__}: "
        "P=600, N0=192, T=48, N=100, tau=0.5"
    )
    print(f"{'heads':<10} {'paths':>5} {'what':<34} {'time [s]':>9} {'peak [MiB]':>11}  note", flush=True)
    for heads in [(4, 4), (3, 3, 3), (8, 8)]:
        one, H1 = case_hessian(heads, 1e15)
        blocked, H2 = case_hessian(heads, DEFAULT_HESSIAN_BYTES)
        diff = float(np.abs(H1 - H2).max() / np.abs(H1).max())
        del H1, H2
        for what, r, note in (
            ("Hessian, energy block in one piece", one, f"{one['n']} unknowns"),
            (f"Hessian, blocks <= {DEFAULT_HESSIAN_BYTES / 2**20:.0f} MiB", blocked, f"max rel. diff {diff:.1e}"),
        ):
            print(f"{str(heads):<10} {r['paths']:5d} {what:<34} {r['seconds']:9.2f} {r['peak_MiB']:11.1f}  {note}")
        r = case_single(600, heads, N=100, restarts=0)
        print(
            f"{str(heads):<10} {r['paths']:5d} {'solve (' + r['case'].rsplit('[', 1)[-1].rstrip(']') + ' kernel)':<34} "
            f"{r['seconds']:9.2f} {r['peak_MiB']:11.1f}  {r['iters']} iterations, max|dS/dU|/N {r['grad']:.1e}",
            flush=True,
        )


def scaling():
    print(
        f"# solver scaling on {platform.machine()}, {platform.python_version()}, numpy {np.__version__}: "
        "one action+gradient evaluation at the GP point, N=100, tau=0.5"
    )
    print(
        f"{'grow':<6} {'P':>6} {'paths':>5} {'N0':>4} {'form':<8} {'set-up [s]':>10} {'eval [s]':>9} "
        f"{'peak [MiB]':>11}",
        flush=True,
    )
    # each group in one kernel form (the low-rank one, which every size fits), so the slopes are those of
    # the form; the Gram form, faster where it fits in memory, is shown for the smaller P
    groups = {
        "P": [case_eval(P, (4, 4)) for P in (625, 1250, 2500, 5000, 10000)],
        "P/gram": [case_eval(P, (4, 4), mode="gram") for P in (300, 625, 1250)],
        "paths": [case_eval(600, h) for h in ((2, 2), (4, 2), (4, 4), (8, 4), (8, 8))],
        "N0": [case_eval(600, (4, 4), n0=n0) for n0 in (96, 192, 384, 768)],
    }
    for grow, rows in groups.items():
        for r in rows:
            print(
                f"{grow:<6} {r['P']:6d} {r['paths']:5d} {r['n0']:4d} {r['mode']:<8} {r['setup']:10.2f} "
                f"{r['eval']:9.3f} {r['peak_MiB']:11.1f}",
                flush=True,
            )
    print("# log-log slopes (cost ~ x^slope) of one evaluation and of peak memory, fitted over each group")
    key = {"P": "P", "P/gram": "P", "paths": "paths", "N0": "n0"}
    for grow, rows in groups.items():
        x = np.log([r[key[grow]] for r in rows])
        fit = {c: np.polyfit(x, np.log([max(r[c], 1e-9) for r in rows]), 1)[0] for c in ("eval", "peak_MiB")}
        print(f"{grow:<6} eval {fit['eval']:5.2f}   memory {fit['peak_MiB']:5.2f}")


def main():
    ap_ = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap_.add_argument("--fast", action="store_true", help="skip P >= 2000 and 64 paths")
    ap_.add_argument("--scaling", action="store_true", help="per-evaluation cost up to P=10000, 64 paths, N0=768")
    ap_.add_argument("--architectures", action="store_true", help="Hessian and solve at 16, 27 and 64 paths")
    args = ap_.parse_args()
    if args.scaling:
        scaling()
        return
    if args.architectures:
        architectures()
        return
    print(f"# solver benchmark on {platform.machine()}, {platform.python_version()}, numpy {np.__version__}")
    print(f"{'case':<48} {'time [s]':>9} {'peak [MiB]':>11} {'iters':>6} {'max|dS/dU|/N':>13}  target", flush=True)

    def show(r):
        print(
            f"{r['case']:<48} {r['seconds']:9.2f} {r['peak_MiB']:11.1f} {r['iters']:6d} {r['grad']:13.2e}  "
            f"{r['target']}",
            flush=True,
        )

    show(case_sweep())
    show(case_single(600, (4, 4), label="(b) image-sized, 16 paths, N=10 [verified]", target="< 30 s"))
    for P in [100, 300, 1000] + ([] if args.fast else [2000, 5000]):
        show(case_single(P, (4, 4), N=100, restarts=0, target="< 8 GB" if P == 5000 else ""))
    for heads in [(2, 2), (4, 4)] + ([] if args.fast else [(3, 3, 3), (8, 8)]):
        show(case_single(600, heads, N=100, restarts=0))


if __name__ == "__main__":
    main()
