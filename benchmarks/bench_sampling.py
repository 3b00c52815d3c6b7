"""Benchmark of the posterior samplers: trees, ESS per second and per gradient (prints a table).

    python benchmarks/bench_sampling.py            # Markov-sized and image-sized problems at N=10
    python benchmarks/bench_sampling.py --chains 4 --warmup 500 --samples 500
    python benchmarks/bench_sampling.py --problems image --widths 10,500 --budget 500=2,30,30   # issue 48

Each sampler runs with the same budget at each (problem, width): the Rao-Blackwellised one (``rb``), the
full-weight one with NUTS on every weight (``full``, the default), collapsed (``full-collapsed``: V0 drawn
exactly for every draw of the marginal) and with V0's Gibbs update (``full-gibbs``).  The table
reports wall time (JAX compilation included), leapfrog steps per draw, the median tree depth and the share of
draws at the depth cap, the bulk ESS of U's entries and of test outputs, per second and per 1,000 gradients,
the largest R-hat and the divergences.  Problems (issue 3, section 4):
  markov: the paper's hidden-Markov-chain task (4-path network, P=100, N0=231, T=31, tau=0.01), N=10;
  image-sized:  P=600, N0=192, T=48, 4x4 random query/key heads (16 paths), mean readout, tau=0.5.
"""

from __future__ import annotations

import argparse
import dataclasses
import platform

import numpy as np

import attention_paths as ap
from attention_paths import sampling as sp
from attention_paths.tasks.markov import make_markov_task

SHORT_NAMES = {"rb": "rao-blackwell"}
FULL_UPDATES = {"full": "nuts", "full-collapsed": "collapsed", "full-gibbs": "gibbs"}
"""``full``: the full-weight sampler's default, NUTS on every weight (V0 included; the sampler before issue 48);
``full-collapsed``: NUTS on the marginal, V0 drawn exactly for each draw; ``full-gibbs``: V0 drawn after every
NUTS transition of the other weights.  ``FullConfig.v0_update`` names the three."""


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


def _budget(text):
    """``N=chains,warmup,samples`` -> (N, (chains, warmup, samples))."""
    try:
        n, rest = text.split("=")
        c, w, k = (int(v) for v in rest.split(","))
        return int(n), (c, w, k)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--budget takes N=chains,warmup,samples, got {text!r}") from None


def _row(name, N, label, s):
    d, w = s.diagnostics, s.wall_seconds
    grads = d["leapfrog_steps"]
    draws = np.prod(s.U.shape[:2])
    return (
        f"{name:<7}{N:>5} {label:<10}{s.settings['n_parameters']:>9d}{w:>9.1f}{d['leapfrog_steps'] / draws:>8.1f}"
        f"{d['tree_depth_median']:>6.0f}{d['share_at_depth_limit']:>7.0%}{d['ess_bulk_U_min']:>8.0f}"
        f"{d['ess_bulk_U_median']:>8.0f}{d['ess_bulk_outputs_min']:>8.0f}{d['ess_bulk_U_min'] / w:>8.2f}"
        f"{1e3 * d['ess_bulk_U_min'] / grads:>8.2f}{1e3 * d['ess_bulk_outputs_min'] / grads:>8.2f}"
        f"{max(d['rhat_U_max'], d['rhat_outputs_max']):>7.3f}{d['divergences']:>5d}"
    )


HEADER = (
    f"{'problem':<7}{'N':>5} {'sampler':<10}{'params':>9}{'time [s]':>9}{'steps':>8}{'depth':>6}{'at cap':>7}"
    f"{'ESS U':>8}{'U med':>8}{'ESS f':>8}{'U/s':>8}{'U/kgrad':>8}{'f/kgrad':>8}{'R-hat':>7}{'div':>5}"
)
LEGEND = """# steps: leapfrog steps (gradients) per kept draw; depth: median tree depth; at cap: share of draws
# whose tree reached the depth cap; ESS U / U med: smallest / median bulk ESS over U's entries; ESS f: smallest over the
# first 5 test outputs; U/s: ESS U per second; U/kgrad, f/kgrad: ESS per 1,000 gradients of the kept draws
# (warm-up not counted); R-hat: the largest over U's entries and the 5 outputs; div: divergent transitions"""


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=500)
    parser.add_argument("--samples", type=int, default=500)
    parser.add_argument("--problems", default="markov,image")
    parser.add_argument("--widths", default="10", help="widths N, comma-separated (default 10)")
    parser.add_argument(
        "--budget", type=_budget, action="append", default=[], help="N=chains,warmup,samples: another budget at N"
    )
    parser.add_argument(
        "--samplers",
        default="rb,full,full-collapsed",
        help="rb (rao-blackwell), full (NUTS on every weight, the default), full-collapsed, full-gibbs or any "
        "registered sampler's name",
    )
    parser.add_argument(
        "--max-tree-depth",
        type=int,
        default=None,
        help="NUTS tree-depth cap (default: the sampler's own, 5 Rao-Blackwellised, 10 full)",
    )
    parser.add_argument("--target-accept", type=float, default=0.8, help="NUTS target acceptance (default 0.8)")
    args = parser.parse_args()
    budgets = dict(args.budget)
    print(
        f"# sampler benchmark, {platform.machine()}, {platform.processor() or 'cpu'}, {args.chains} chains x "
        f"({args.warmup}+{args.samples}) unless {budgets or 'none'} (N: chains, warm-up, samples), max tree depth "
        f"{args.max_tree_depth or 'default'}, target acceptance {args.target_accept}\n{LEGEND}"
    )
    print(HEADER, flush=True)
    for name in args.problems.split(","):
        pr = problem(name)
        for N in (int(n) for n in args.widths.split(",")):
            arch = ap.Architecture.uniform(pr["heads"], N)
            chains, warmup, samples = budgets.get(N, (args.chains, args.warmup, args.samples))
            cfg = sp.SamplerConfig(
                num_warmup=warmup,
                num_samples=samples,
                num_chains=chains,
                seed=0,
                max_tree_depth=args.max_tree_depth,
                target_accept=args.target_accept,
            )
            for label in args.samplers.split(","):
                kind = "full" if label in FULL_UPDATES else SHORT_NAMES.get(label, label)
                sampler = sp.get_sampler(kind)  # any registered sampler, by name
                config = sampler.configure(cfg, path_inputs=(pr["xi_tr"], pr["xi_te"]))
                if label in FULL_UPDATES:
                    config = dataclasses.replace(config, v0_update=FULL_UPDATES[label])
                f_tr, f_te = pr["f_tr"], pr["f_te"]
                s = sp.sample(kind, f_tr, pr["y"], pr["tau"], arch, f_te, config=config, warn="ignore")
                print(_row(name, N, label, s), flush=True)


if __name__ == "__main__":
    main()
