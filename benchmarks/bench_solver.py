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
  (e) --architectures (issue 48): the old solver (L-BFGS in Cholesky variables + Newton with the reference
      Hessian, method="lbfgs-newton") and the new one (structured quasi-Newton with the analytic Hessian,
      method="bfgs") side by side at 16, 27 and 64 paths (P=600, N=100 and 10, cold starts): time, peak
      memory, steps, gradients, exact Hessians, final gradient and the certificate's smallest eigenvalue;
      a continuation over the paper's 10 widths at 64 paths (the cost of a theory grid's column); and the
      new solver's growth with the paths (16, 27, 64, 125 = 3 layers x 5 heads) and with P (600 -> 2000).
Peak memory is the peak of Python/numpy allocations (tracemalloc) during the case.
"""

from __future__ import annotations

import argparse
import platform
import time
import tracemalloc
from pathlib import Path

import numpy as np

import attention_paths as ap
from attention_paths.runs import experiments
from attention_paths.tasks import toy
from attention_paths.tasks.omniglot.data import DatasetMissingError
from attention_paths.tasks.omniglot.training import load_network
from attention_paths.tasks.oneshot.data import training_episodes

NETWORK_RUN = Path(__file__).resolve().parents[1] / "data" / "omniglot-theory" / "paper-sizes-paper-2x8-network"


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


def network_features():
    """The committed 2 x 8 network's path features on its theory run's own training episodes, with their labels
    and the committed U* at the panel point (N = 10, tau = 0.5); ``None`` when the Omniglot data are not at hand
    (``ATTENTION_PATHS_DATA``)."""
    res = experiments.load_run(NETWORK_RUN, "omniglot-theory", required=True)
    net, _ = load_network(res.config["network"])
    try:
        episodes = training_episodes(res.network_record, res.config)
    except DatasetMissingError:
        return None
    return ap.from_torch(net, episodes), episodes.y.astype(float), res.panel.U


def _solve_case(feats, y, heads, N, tau, method, init=None, hint=None):
    """One solve (no restarts, Hessian verified) with its time and peak memory."""
    k = ap.PathKernel(feats)
    act = ap.Action(k, y, tau, ap.Architecture.uniform(heads, N))
    res, dt, mem = measure(lambda: ap.solve(act, init=init, hessian_hint=hint, n_restarts=0, method=method))
    return res, dt, mem, k.mode


def _row(label, method, res, dt, mem, note=""):
    print(
        f"{label:<22} {method:<13} {dt:9.2f} {mem:11.1f} {res.n_iter:6d} {res.n_grad:6d} {res.n_hessian:4d} "
        f"{res.grad_max:10.1e} {res.hessian_min_eig:11.3e}  {note}",
        flush=True,
    )


def architectures(with_old: bool = True, growth: bool = True):
    """Issue 48: old and new solvers side by side at 16, 27 and 64 paths (P = 600, N = 100 and N = 10, cold
    starts from the GP point), a continuation over the paper's 10 widths at 64 paths (new solver: what one
    point of a theory grid costs), and how the new solver's cost grows with the paths (16 -> 27 -> 64 -> 125)
    and with P (600 -> 2000)."""
    print(
        f"# solvers side by side on {platform.machine()}, {platform.python_version()}, numpy {np.__version__}: "
        "N0=192, T=48, random query/key heads, tau=0.5, cold starts (GP point), no restarts, Hessian verified"
    )
    head = (
        f"{'case':<22} {'method':<13} {'time [s]':>9} {'peak [MiB]':>11} {'steps':>6} {'grads':>6} {'hess':>4} "
        f"{'max|dS/dU|/N':>10} {'min eig H':>11}  note"
    )
    print(head, flush=True)
    for heads in [(4, 4), (3, 3, 3), (8, 8)]:
        feats, y = make_features(600, 192, 48, heads, "QK", "mean")
        Pi = int(np.prod(heads))
        for N in (100, 10):
            label = f"P=600 {Pi} paths N={N}"
            new, dt_new, mem_new, mode = _solve_case(feats, y, heads, N, 0.5, "bfgs")
            if with_old:
                old, dt_old, mem_old, _ = _solve_case(feats, y, heads, N, 0.5, "lbfgs-newton")
                dU = max(float(np.abs(a - b).max() / np.abs(b).max()) for a, b in zip(new.Us, old.Us, strict=True))
                _row(label, "lbfgs-newton", old, dt_old, mem_old, f"[{mode}]")
                _row(label, "bfgs", new, dt_new, mem_new, f"{dt_old / dt_new:.1f}x faster; max|dU|/|U| {dU:.1e}")
            else:
                _row(label, "bfgs", new, dt_new, mem_new, f"[{mode}]")
    # the 2 x 8 network's own features, where U* lies far from the GP point (the hardest cold start)
    net = network_features()
    if net is None:
        print("P=600 2x8 network N=10  (skipped: no Omniglot data; set ATTENTION_PATHS_DATA)", flush=True)
    else:
        feats, y, U_star = net
        label = f"P={feats.shape[0]} 2x8 network N=10"
        new, dt_new, mem_new, mode = _solve_case(feats, y, (8, 8), 10, 0.5, "bfgs")
        dU = float(np.abs(new.U - U_star).max() / np.abs(U_star).max())
        if with_old:
            old, dt_old, mem_old, _ = _solve_case(feats, y, (8, 8), 10, 0.5, "lbfgs-newton")
            _row(label, "lbfgs-newton", old, dt_old, mem_old, f"[{mode}] the network's features")
            note = f"{dt_old / dt_new:.1f}x faster; max|dU|/|U*| {dU:.1e} (committed)"
            _row(label, "bfgs", new, dt_new, mem_new, note)
        else:
            _row(label, "bfgs", new, dt_new, mem_new, f"[{mode}] max|dU|/|U*| {dU:.1e} (committed U*)")
    # a continuation over the paper's widths at 64 paths: each solve warm-started with its neighbour's Hessian
    feats, y = make_features(600, 192, 48, (8, 8), "QK", "mean")
    widths = [10000, 5000, 2000, 1000, 500, 200, 100, 50, 20, 10]
    k = ap.PathKernel(feats)
    acts = [ap.Action(k, y, 0.5, ap.Architecture.uniform((8, 8), N)) for N in widths]
    res, dt, mem = measure(lambda: ap.solve_continuation(acts, n_restarts=0))
    print(
        f"{'P=600 64 paths 10 N':<22} {'bfgs':<13} {dt:9.2f} {mem:11.1f} {sum(r.n_iter for r in res):6d} "
        f"{sum(r.n_grad for r in res):6d} {sum(r.n_hessian for r in res):4d} {max(r.grad_max for r in res):10.1e} "
        f"{min(r.hessian_min_eig for r in res):11.3e}  continuation N=10^4..10: {dt / len(widths):.1f} s per width",
        flush=True,
    )
    if not growth:
        return
    print("# growth of the new solver's cost (cold start, N=10, tau=0.5)")
    print(head, flush=True)
    for P, heads in [(600, (4, 4)), (600, (3, 3, 3)), (600, (8, 8)), (600, (5, 5, 5)), (1000, (8, 8)), (2000, (8, 8))]:
        feats, y = make_features(P, 192, 48, heads, "QK", "mean")
        res, dt, mem, mode = _solve_case(feats, y, heads, 10, 0.5, "bfgs")
        _row(f"P={P} {int(np.prod(heads))} paths N=10", "bfgs", res, dt, mem, f"[{mode}] {res.Us[0].shape[0]} x U_1")


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
    ap_.add_argument(
        "--architectures", action="store_true", help="old and new solvers at 16, 27 and 64 paths; growth to 125 paths"
    )
    ap_.add_argument("--no-old", action="store_true", help="with --architectures: the new solver only")
    ap_.add_argument("--no-growth", action="store_true", help="with --architectures: skip the growth table")
    args = ap_.parse_args()
    if args.scaling:
        scaling()
        return
    if args.architectures:
        architectures(with_old=not args.no_old, growth=not args.no_growth)
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
