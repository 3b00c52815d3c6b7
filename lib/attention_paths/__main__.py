"""Command line: ``python -m attention_paths <experiment> --scale {quick,paper} --out DIR``."""
from __future__ import annotations

import argparse
import json
import os
import sys


def main(argv=None) -> int:
    from .experiments import EXPERIMENTS, run_experiment

    parser = argparse.ArgumentParser(prog="python -m attention_paths", description=__doc__)
    parser.add_argument("experiment", choices=sorted(EXPERIMENTS) + ["omniglot-train"],
                        help="which experiment to run")
    parser.add_argument("--scale", choices=["quick", "paper"], default=None,
                        help="problem sizes (default: $REPRO_SCALE or quick)")
    parser.add_argument("--out", default=None, help="output folder (default: out/<experiment>-<scale>)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    parser.add_argument("--save-samples", action="store_true",
                        help="also write every posterior-sampling run whole (large files)")
    parser.add_argument("--cpu-devices", type=int, default=None,
                        help="expose this many CPU devices to JAX so that sampling chains run in parallel "
                             "(default: min(number of CPUs, 8); must be set before JAX starts)")
    parser.add_argument("--max-steps", type=int, default=None,
                        help="omniglot-train: stop after this many steps (resume later with the same --out)")
    parser.add_argument("--network", choices=["quick", "paper"], default=None,
                        help="omniglot-theory, pruning: which trained network (default: the one of --scale)")
    parser.add_argument("--no-sample", action="store_true", help="omniglot-theory: skip posterior sampling")
    parser.add_argument("--sampling", default=None, metavar="CHAINS,WARMUP,SAMPLES",
                        help="omniglot-theory: override the scale's sampling budget, e.g. 2,100,100")
    args = parser.parse_args(argv)
    n_dev = args.cpu_devices or min(os.cpu_count() or 1, 8)
    if "jax" not in sys.modules and "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                                   f" --xla_force_host_platform_device_count={n_dev}").strip()
    from .config import get_scale

    scale = get_scale(args.scale)
    out = args.out or f"out/{args.experiment}-{scale}"
    if args.experiment == "omniglot-train":
        from .training import config_for, summary_table, train

        summary = train(config_for(scale), out, progress=not args.quiet, max_steps=args.max_steps)
        print(summary_table(summary))
        print(f"wrote {out}/summary.json, {out}/last.pt and {out}/best.pt", file=sys.stderr)
        return 0
    budget = None
    if args.sampling:
        try:
            budget = dict(zip(("num_chains", "num_warmup", "num_samples"), (int(v) for v in args.sampling.split(","))))
        except ValueError:
            parser.error(f"--sampling must be CHAINS,WARMUP,SAMPLES (integers), got {args.sampling!r}")
        if len(budget) != 3:
            parser.error(f"--sampling must be CHAINS,WARMUP,SAMPLES, got {args.sampling!r}")
    options = {"omniglot-theory": {"network": args.network, "sample": not args.no_sample, "budget": budget},
               "pruning": {"network": args.network}}.get(args.experiment, {})
    summary = run_experiment(args.experiment, scale, out, progress=not args.quiet, save_samples=args.save_samples,
                             **options)
    skip = ("per_width", "provenance", "seed_sets", "sampled", "grid_accuracy", "solver", "data", "config", "pairs",
            "stability", "singles", "combinations", "reference_combinations", "theory_side")
    print(json.dumps({k: v for k, v in summary.items() if k not in skip}, indent=2, default=str))
    print(f"wrote {out}/summary.json and {out}/arrays.npz", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
