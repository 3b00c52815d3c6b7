"""Benchmark of the posterior samplers: wall time and ESS per second of the order-parameter entries.

    python benchmarks/bench_sampling.py            # Markov-sized and image-sized problems at N=10
    python benchmarks/bench_sampling.py --chains 4 --warmup 500 --samples 500

For each problem both samplers run with the same budget; the table reports wall time (compilation
included), the minimum and median bulk ESS of the entries of U(Theta), ESS per second, divergences and
the largest R-hat.  Problems (issue 3, section 4):
  markov: the paper's hidden-Markov-chain task (4-path network, P=100, N0=231, T=31, tau=0.01), N=10;
  image-sized:  P=600, N0=192, T=48, 4x4 random query/key heads (16 paths), mean readout, tau=0.5, N=10.
"""

from __future__ import annotations

import argparse
import platform

import numpy as np

import attention_paths as ap
from attention_paths import sampling as sp
from attention_paths.tasks.markov import make_markov_task

SHORT_NAMES = {"rb": "rao-blackwell"}


def problem(name):
    if name == "markov":
        task = make_markov_task("main")
        return dict(
            xi_tr=task.xi_train,
            xi_te=task.xi_test[:200],
            f_tr=task.features_train,
            f_te=task.features_test[:200],
            y=task.y_train,
            tau=0.01,
            heads=task.heads,
        )
    P, n0, T, heads, readout, tau = 600, 192, 48, (4, 4), "mean", 0.5
    rng = np.random.default_rng(0)
    layers = [
        ap.QKFormHeads(rng.standard_normal((H, 128, n0)) / np.sqrt(n0), rng.standard_normal((H, 128, n0)) / np.sqrt(n0))
        for H in heads
    ]
    x = rng.standard_normal((P + 200, n0, T))
    r = ap.readout_vector(readout, T)
    xi = ap.path_inputs(x, layers, r).numpy()
    y = np.where(xi[:, 0, :] @ rng.standard_normal(n0) > 0, 1.0, -1.0)
    feats = ap.path_features(xi)
    return dict(xi_tr=xi[:P], xi_te=xi[P:], f_tr=feats[:P], f_te=feats[P:], y=y[:P], tau=tau, heads=heads)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=500)
    parser.add_argument("--samples", type=int, default=500)
    parser.add_argument("--problems", default="markov,image")
    parser.add_argument("--samplers", default="rb,full", help="registered sampler names (rb: rao-blackwell)")
    parser.add_argument(
        "--max-tree-depth",
        type=int,
        default=None,
        help="NUTS tree-depth cap (default: the sampler's own, 5 Rao-Blackwellised, 10 full)",
    )
    parser.add_argument("--target-accept", type=float, default=0.8, help="NUTS target acceptance (default 0.8)")
    args = parser.parse_args()
    cfg = sp.SamplerConfig(
        num_warmup=args.warmup,
        num_samples=args.samples,
        num_chains=args.chains,
        seed=0,
        max_tree_depth=args.max_tree_depth,
        target_accept=args.target_accept,
    )
    print(
        f"# sampler benchmark, {platform.machine()}, {args.chains} chains x ({args.warmup}+{args.samples}), "
        f"max tree depth {args.max_tree_depth}, target acceptance {args.target_accept}"
    )
    print(
        f"{'problem':<8} {'sampler':<14} {'params':>7} {'time [s]':>9} {'ESS min':>8} {'ESS med':>8} "
        f"{'ESS/s min':>9} {'ESS/s med':>9} {'div':>4} {'R-hat':>6} {'steps':>6}",
        flush=True,
    )
    for name in args.problems.split(","):
        pr = problem(name)
        arch = ap.Architecture.uniform(pr["heads"], 10)
        for kind in args.samplers.split(","):
            sampler = sp.get_sampler(SHORT_NAMES.get(kind, kind))  # any registered sampler, by name
            config = sampler.configure(cfg, path_inputs=(pr["xi_tr"], pr["xi_te"]))
            s = sp.sample(sampler.name, pr["f_tr"], pr["y"], pr["tau"], arch, pr["f_te"], config=config, warn="ignore")
            d = s.diagnostics
            print(
                f"{name:<8} {s.kind:<14} {s.settings['n_parameters']:7d} {s.wall_seconds:9.1f} "
                f"{d['ess_bulk_U_min']:8.0f} {d['ess_bulk_U_median']:8.0f} "
                f"{d['ess_bulk_U_min'] / s.wall_seconds:9.2f} {d['ess_bulk_U_median'] / s.wall_seconds:9.2f} "
                f"{d['divergences']:4d} {d['rhat_U_max']:6.3f} {d['mean_tree_steps']:6.1f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
