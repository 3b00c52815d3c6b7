"""Benchmark of the Omniglot pipeline: cache build time and training throughput (episodes per second).

    python benchmarks/bench_training.py              # CPU, and the GPU too when one is present
    python benchmarks/bench_training.py --steps 20

Needs the Omniglot tree and MNIST/FashionMNIST under $ATTENTION_PATHS_DATA.  The cache is built into a
temporary folder (the real cache is left alone), then read back.  Training steps use the paper's network
(d_model 512, 2 layers x 4 heads, G = 128) and batch 128, after two warm-up steps; on a GPU with 16-bit
mixed precision and torch.compile, as in training.
"""
from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time

import numpy as np
import torch

from attention_paths import omniglot as om
from attention_paths.incontext import InContextTransformer, sample_episodes


def bench_cache():
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for split in ("train", "val", "test"):
            t0 = time.perf_counter()
            s = om.load_split(split, cache_dir=tmp)
            build = time.perf_counter() - t0
            t0 = time.perf_counter()
            om.load_split(split, cache_dir=tmp)
            rows.append((split, s.images.shape[0], build, time.perf_counter() - t0,
                         os.path.getsize(os.path.join(tmp, f"omniglot32_{split}.npz")) / 2**20))
    return rows


def bench_steps(device: str, steps: int, batch: int = 128):
    images = om.load_split("train").images
    torch.manual_seed(0)
    net = InContextTransformer().to(device)
    opt = torch.optim.Adam(net.parameters(), lr=3e-4, weight_decay=5e-5)
    model = torch.compile(net) if device == "cuda" else net
    rng = np.random.default_rng(0)
    amp = device == "cuda"

    def step():
        ep = sample_episodes(images, batch, rng)
        x0 = net.tokens(ep)
        y = torch.as_tensor(ep.y, device=device)
        with torch.autocast(device, dtype=torch.float16, enabled=amp):
            loss = torch.mean((model(x0).float() - y) ** 2)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    for _ in range(2):
        step()
    if device == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    if device == "cuda":
        torch.cuda.synchronize()
    dt = (time.perf_counter() - t0) / steps
    return dt, batch / dt


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()
    print(f"# Omniglot pipeline benchmark, {platform.machine()}, torch {torch.__version__}, "
          f"{torch.get_num_threads()} CPU threads")
    print(f"{'split':<6} {'chars':>5} {'build [s]':>9} {'cached [s]':>10} {'size [MiB]':>10}")
    for split, n, build, cached, size in bench_cache():
        print(f"{split:<6} {n:5d} {build:9.2f} {cached:10.2f} {size:10.1f}", flush=True)
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    print(f"{'device':<6} {'s/step':>8} {'episodes/s':>10} {'epoch [h]':>9}")
    for dev in devices:
        dt, eps = bench_steps(dev, args.steps)
        print(f"{dev:<6} {dt:8.3f} {eps:10.1f} {4124 * dt / 3600:9.2f}", flush=True)


if __name__ == "__main__":
    main()
