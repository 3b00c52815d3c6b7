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
    summary = run_experiment(args.experiment, scale, out, progress=not args.quiet, save_samples=args.save_samples)
    print(json.dumps({k: v for k, v in summary.items() if k not in ("per_width", "provenance", "seed_sets", "sampled")}, indent=2))
    print(f"wrote {out}/summary.json and {out}/arrays.npz", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
