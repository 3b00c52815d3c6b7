"""A small fan-out/merge pipeline for the pipeline's tests: one source, independent stages, one merge."""

import numpy as np

from attention_paths.base.io import atomic_savez, load_npz
from attention_paths.runs.pipeline import Stage, StageContext


def toy_source(ctx: StageContext) -> dict:
    rng = np.random.default_rng(ctx.params["seed"])  # seed None: a nondeterministic stage
    atomic_savez(ctx.out / "x.npz", x=rng.standard_normal(ctx.params["n"]))
    return {"n": ctx.params["n"]}


def toy_square(ctx: StageContext) -> dict:
    x = load_npz(ctx.inputs["source"] / "x.npz")["x"]
    y = x ** ctx.params["power"] + ctx.params["shift"]
    atomic_savez(ctx.out / "y.npz", y=y)
    return {"sum": float(y.sum())}


def toy_merge(ctx: StageContext) -> dict:
    parts = [load_npz(ctx.inputs[d] / "y.npz")["y"] for d in sorted(ctx.inputs)]
    z = np.stack(parts)
    atomic_savez(ctx.out / "z.npz", z=z)
    return {"total": float(z.sum()), "parts": len(parts)}


def toy_stages(n: int = 1000, seed: int = 0, shifts=(0.0, 1.0, 2.0, 3.0), power: int = 2) -> list[Stage]:
    """One source, ``len(shifts)`` independent stages reading it, one merge of them all."""
    fan = [
        Stage(f"part-{i}", toy_square, {"power": power, "shift": float(s)}, deps=("source",))
        for i, s in enumerate(shifts)
    ]
    return [
        Stage("source", toy_source, {"n": n, "seed": seed}),
        *fan,
        Stage("merge", toy_merge, {}, deps=tuple(f.name for f in fan)),
    ]
