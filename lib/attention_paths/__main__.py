"""Command line: ``python -m attention_paths <experiment> --scale {quick,paper} --out DIR``."""
from __future__ import annotations

import argparse
import json
import sys


def main(argv=None) -> int:
    from .experiments import EXPERIMENTS, run_experiment

    parser = argparse.ArgumentParser(prog="python -m attention_paths", description=__doc__)
    parser.add_argument("experiment", choices=sorted(EXPERIMENTS), help="which experiment to run")
    parser.add_argument("--scale", choices=["quick", "paper"], default=None,
                        help="problem sizes (default: $REPRO_SCALE or quick)")
    parser.add_argument("--out", default=None, help="output folder (default: out/<experiment>-<scale>)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    args = parser.parse_args(argv)
    from .config import get_scale

    scale = get_scale(args.scale)
    out = args.out or f"out/{args.experiment}-{scale}"
    summary = run_experiment(args.experiment, scale, out, progress=not args.quiet)
    print(json.dumps({k: v for k, v in summary.items() if k not in ("per_width", "provenance", "seed_sets", "sampled")}, indent=2))
    print(f"wrote {out}/summary.json and {out}/arrays.npz", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
