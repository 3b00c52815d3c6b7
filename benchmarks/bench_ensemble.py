"""Per-network cost of the ensemble (issue 23): training, theory and pruning, from the records of a run.

    python benchmarks/bench_ensemble.py RESULTS            # an `ensemble --out RESULTS` folder
    python benchmarks/bench_ensemble.py RESULTS --data     # also the committed networks' training times

Nothing is timed here: the table reads the wall time every stage recorded (``_stage.json``) and the training
time in each network's record, and says on what machine they were measured.  Stages that ran in parallel
(on a Dask cluster) are summed as if serial: the "all" column is the cost of one network on one machine.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

from attention_paths.base import config
from attention_paths.runs import results
from attention_paths.tasks.omniglot.ensemble import ENSEMBLE_SEEDS, member_name


def stage_times(folder: Path) -> dict[str, dict[str, float]]:
    """``{network: {part: seconds}}`` from the stage records of an ensemble results folder."""
    out = defaultdict(lambda: defaultdict(float))
    for rec_path in sorted(folder.glob(f"*/{results.RECORD}")):
        name = rec_path.parent.name
        if "." not in name:
            continue
        network, stage = name.split(".", 1)
        part = "grid" if stage.startswith("grid-tau") else stage
        out[network][part] += results.read_record(rec_path.parent)["wall_seconds"]
    return out


def training_minutes(name: str) -> float | None:
    """Training time (minutes, evaluations excluded) in a committed network's record, if committed."""
    rec = config.repo_data_dir() / f"omniglot-{name}" / "record.json"
    if not rec.exists():
        return None
    return json.loads(rec.read_text())["history"][-1]["seconds"] / 60


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", type=Path, help="an ensemble results folder")
    parser.add_argument("--data", action="store_true", help="add the committed networks' training times")
    args = parser.parse_args()
    times = stage_times(args.results)
    hosts = {
        results.read_record(p.parent)["provenance"].get("platform") for p in args.results.glob(f"*/{results.RECORD}")
    }
    where = ", ".join(sorted(map(str, hosts)))
    print(f"# per-network cost in minutes, from the stage records of {args.results} ({where})")
    parts = ("train", "export", "grid", "omniglot-theory", "pruning")
    print(f"{'network':<14}" + "".join(f"{p:>17}" for p in parts) + f"{'analysis':>10}{'all':>8}")
    for seed in ENSEMBLE_SEEDS:
        name = member_name(seed)
        if name not in times:
            continue
        t = dict(times[name])
        train = t.get("train", 0.0) / 60
        if args.data and train < 1:  # a committed network: its training time is in its record
            train = training_minutes(name) or train
        cells = [train] + [t.get(p, 0.0) / 60 for p in parts[1:]]
        analysis = sum(cells[1:])
        print(f"{name:<14}" + "".join(f"{c:>17.1f}" for c in cells) + f"{analysis:>10.1f}{train + analysis:>8.1f}")


if __name__ == "__main__":
    main()
