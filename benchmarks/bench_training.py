"""Benchmark of the Omniglot pipeline: cache build time and training throughput of both forwards.

    python benchmarks/bench_training.py              # CPU, and the GPU too when one is present
    python benchmarks/bench_training.py --steps 20 --no-cache
    python benchmarks/bench_training.py --arch 2x8 3x3 --no-cache   # the other architectures (L x H)

Needs the Omniglot tree under $ATTENTION_PATHS_DATA.  The cache is built into a temporary folder (the real
cache is left alone), then read back.  Training steps use the paper's network (d_model 512, 2 layers x 4
heads, G = 128), batch 128, Adam, after three warm-up steps, with episodes drawn and tokenised in every step
as in training.  Each row runs in a fresh process, so that its peak memory (resident set on a CPU, the
allocator's peak on a GPU) is its own:

* ``layer-wise``: :meth:`InContextTransformer.forward`, the reference (512-wide value activations of all 48
  tokens);
* ``path``: :meth:`InContextTransformer.path_forward`, the path-factorised forward that training uses (the
  same function and gradients);
* precisions: float32; bfloat16 autocast (CPUs with AVX512-BF16, and GPUs); float16 autocast with
  ``torch.compile`` on a GPU (the reference's mixed precision).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

from attention_paths.tasks.omniglot import data as om
from attention_paths.tasks.omniglot.episodes import sample_episodes
from attention_paths.tasks.omniglot.model import InContextTransformer

STEPS_PER_RUN = 41_240  # the paper's 10 epochs
# layers x heads -> (n_layers, n_heads, d_qk) of the reference's three architectures (recipe.ARCHITECTURE_NETWORKS)
ARCHITECTURES = {"2x4": (2, 4, 128), "2x8": (2, 8, 64), "3x3": (3, 3, 128)}


def bench_cache():
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for split in ("train", "val", "test"):
            t0 = time.perf_counter()
            s = om.load_split(split, cache_dir=tmp)
            build = time.perf_counter() - t0
            t0 = time.perf_counter()
            om.load_split(split, cache_dir=tmp)
            rows.append(
                (
                    split,
                    s.images.shape[0],
                    build,
                    time.perf_counter() - t0,
                    os.path.getsize(os.path.join(tmp, f"omniglot32_{split}.npz")) / 2**20,
                )
            )
    return rows


def bench_one(
    device: str, forward: str, precision: str, steps: int, batch: int = 128, compile_: bool = False, arch: str = "2x4"
):
    """Seconds per training step and peak memory (MiB) of one configuration (run in its own process)."""
    images = om.load_split("train").images
    torch.manual_seed(0)
    n_layers, n_heads, d_qk = ARCHITECTURES[arch]
    net = InContextTransformer(n_layers=n_layers, n_heads=n_heads, d_qk=d_qk).to(device)
    opt = torch.optim.Adam(net.parameters(), lr=3e-4, weight_decay=5e-5)
    fwd = net.forward if forward == "layer-wise" else net.path_forward
    model = torch.compile(fwd) if compile_ else fwd
    rng = np.random.default_rng(0)
    dtype = {"float32": None, "bfloat16": torch.bfloat16, "float16": torch.float16}[precision]
    scaler = torch.amp.GradScaler("cuda", enabled=dtype == torch.float16)

    def step():
        ep = sample_episodes(images, batch, rng)
        x0 = net.tokens(ep)
        y = torch.as_tensor(ep.y, device=device)
        with torch.autocast(device, dtype=dtype or torch.float32, enabled=dtype is not None):
            loss = torch.mean((model(x0).float() - y) ** 2)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()

    for _ in range(3):
        step()
    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    if device == "cuda":
        torch.cuda.synchronize()
        peak = torch.cuda.max_memory_allocated() / 2**20
    else:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    return (time.perf_counter() - t0) / steps, peak


def configurations(full: bool = True):
    rows = [("cpu", "layer-wise", "float32", False), ("cpu", "path", "float32", False)]
    if full:
        rows += [("cpu", "path", "float32", True), ("cpu", "path", "bfloat16", False)]
    if torch.cuda.is_available():
        rows += [
            ("cuda", "layer-wise", "float32", False),
            ("cuda", "path", "float32", False),
            ("cuda", "layer-wise", "float16", True),
            ("cuda", "path", "float16", True),
            ("cuda", "path", "bfloat16", True),
        ]
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=10, help="timed steps per configuration (path forward)")
    parser.add_argument("--no-cache", action="store_true", help="skip the cache benchmark")
    parser.add_argument(
        "--arch",
        nargs="+",
        default=["2x4"],
        choices=sorted(ARCHITECTURES),
        help="architectures (layers x heads); other than 2x4, only the float32 forwards on the CPU are timed",
    )
    parser.add_argument("--one", nargs=4, metavar=("DEVICE", "FORWARD", "PRECISION", "COMPILE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:  # a single configuration, in this (fresh) process: print one JSON line
        dev, fwd, prec, comp = args.one
        dt, peak = bench_one(dev, fwd, prec, args.steps, compile_=comp == "1", arch=args.arch[0])
        print(json.dumps({"s_per_step": dt, "peak_mib": peak}))
        return
    print(
        f"# Omniglot training benchmark, {platform.machine()}, torch {torch.__version__}, "
        f"{torch.get_num_threads()} CPU threads"
        + (f", GPU {torch.cuda.get_device_name(0)}" if torch.cuda.is_available() else "")
    )
    if not args.no_cache:
        print(f"{'split':<6} {'chars':>5} {'build [s]':>9} {'cached [s]':>10} {'size [MiB]':>10}")
        for split, n, build, cached, size in bench_cache():
            print(f"{split:<6} {n:5d} {build:9.2f} {cached:10.2f} {size:10.1f}", flush=True)
    print(
        f"{'arch':<4} {'device':<6} {'forward':<11} {'precision':<9} {'compile':>7} {'s/step':>8} {'episodes/s':>10} "
        f"{'peak MiB':>8} {'10 epochs [h]':>13}"
    )
    for arch in args.arch:
        for dev, fwd, prec, comp in configurations(full=arch == "2x4"):
            steps = max(2, args.steps // 4) if fwd == "layer-wise" and dev == "cpu" else args.steps
            cmd = [
                sys.executable,
                __file__,
                "--steps",
                str(steps),
                "--arch",
                arch,
                "--one",
                dev,
                fwd,
                prec,
                str(int(comp)),
            ]
            out = subprocess.run(cmd, capture_output=True, text=True)
            head = f"{arch:<4} {dev:<6} {fwd:<11} {prec:<9} {str(comp):>7}"
            if out.returncode:
                print(f"{head}   failed: {out.stderr.strip().splitlines()[-1]}")
                continue
            r = json.loads(out.stdout.strip().splitlines()[-1])
            dt = r["s_per_step"]
            print(
                f"{head} {dt:8.3f} {128 / dt:10.0f} {r['peak_mib']:8.0f} {STEPS_PER_RUN * dt / 3600:13.2f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
