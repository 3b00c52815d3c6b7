"""Wall time of every stage of ``python -m attention_paths reproduce`` on the CPU and, when there is one,
on the GPU (prints a table).

    python benchmarks/bench_stages.py                       # quick scale, every stage
    python benchmarks/bench_stages.py --scale paper --only omniglot-theory --network quick

Each device runs the pipeline from scratch in a subprocess of its own (fresh output folder), so that the
device choice is made before torch and JAX start: the CPU run hides the GPU from both
(``CUDA_VISIBLE_DEVICES=""``, ``JAX_PLATFORMS=cpu``); the GPU run leaves them visible.  Times are the
stages' own records (``_stage.json``: ``wall_seconds``), so process start-up is not counted.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path


def gpu_available() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:  # noqa: BLE001 - no torch, no GPU
        return False


def run(device: str, args) -> dict:
    env = dict(os.environ)
    if device == "cpu":
        env.update(CUDA_VISIBLE_DEVICES="", JAX_PLATFORMS="cpu")
    out = Path(tempfile.mkdtemp(prefix=f"bench-stages-{device}-"))
    cmd = [sys.executable, "-m", "attention_paths", "reproduce", "--scale", args.scale, "--out", str(out), "--quiet"]
    if args.only:
        cmd += ["--only", args.only]
    if args.network:
        cmd += ["--network", args.network]
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
    times = {}
    for rec in out.glob("*/_stage.json"):
        times[rec.parent.name] = json.loads(rec.read_text())["wall_seconds"]
    return times


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", default="quick", choices=["quick", "paper"])
    parser.add_argument("--only", default=None, help="comma-separated stages (and what they need)")
    parser.add_argument("--network", default=None, choices=["quick", "paper"])
    args = parser.parse_args()
    devices = ["cpu"] + (["gpu"] if gpu_available() else [])
    results = {d: run(d, args) for d in devices}
    print(
        f"# reproduce stages, scale {args.scale}; devices: {', '.join(devices)}"
        + ("" if "gpu" in devices else " (no GPU visible: CPU column only)")
    )
    head = (
        f"{'stage':<18}" + "".join(f"{d + ' [s]':>10}" for d in devices) + ("   speed-up" if len(devices) > 1 else "")
    )
    print(head)
    for stage in sorted(results["cpu"], key=lambda s: -results["cpu"][s]):
        row = f"{stage:<18}" + "".join(f"{results[d].get(stage, float('nan')):10.1f}" for d in devices)
        if len(devices) > 1:
            row += f"   {results['cpu'][stage] / max(results['gpu'].get(stage, float('nan')), 1e-9):8.1f}x"
        print(row)
    print(f"{'total':<18}" + "".join(f"{sum(results[d].values()):10.1f}" for d in devices))


if __name__ == "__main__":
    main()
