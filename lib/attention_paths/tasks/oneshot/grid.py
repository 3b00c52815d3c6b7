"""The theory over the widths x temperatures grid on the trained transformer's attention (spec §B.9): the
order parameter and accuracies (:func:`theory_grid`), the GP line, the validation-selected temperatures, the
``N = 10`` panel, the scan beyond the grid's edge, and the paired theory-GP comparison."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from attention_paths.base.io import atomic_savez, load_npz
from attention_paths.base.progress import progress_bar
from attention_paths.tasks.oneshot.data import EVAL_SETS, OneShotData, _eval_stack
from attention_paths.theory.action import Action
from attention_paths.theory.architecture import Architecture
from attention_paths.theory.kernels import PathKernel, gp_kernel, renormalized_kernel
from attention_paths.theory.predictor import accuracy, kernel_alignment, predict
from attention_paths.theory.scores import head_scores
from attention_paths.theory.solver import solve, solve_continuation

__all__ = [
    "Grid",
    "theory_grid",
    "gp_line",
    "select_temperatures",
    "panel",
    "edge_scan",
    "paired_comparison",
    "merge_grids",
    "save_grid",
    "load_grid",
]


@dataclass(frozen=True)
class Grid:
    """The theory over a widths x temperatures grid (:func:`theory_grid`).

    Attributes
    ----------
    widths : [nN] ascending
    taus : [nT] ascending
    U : [nT, nN, Pi, Pi] order parameter at each point
    accuracy : {set: [nT, nN]} test accuracy (%) of the renormalised predictor on each evaluation set
    grad_max : [nT, nN] the solver's final ``max |dS/dU| / N``
    n_iter : [nT, nN] the solver's steps
    seconds : the solves' wall time
    """

    widths: np.ndarray
    taus: np.ndarray
    U: np.ndarray
    accuracy: dict
    grad_max: np.ndarray
    n_iter: np.ndarray
    seconds: float


def _accuracies(mean, data: OneShotData, slices) -> dict:
    return {s: accuracy(mean[slices[s]], data.y[s]) for s in EVAL_SETS}


def theory_grid(data: OneShotData, widths, taus, progress: bool = False, kernel: PathKernel | None = None) -> Grid:
    """Order parameter and accuracies on the widths x temperatures grid (spec §B.8).

    At every temperature the widths are solved from the widest down, each warm-started from the previous
    solution (:func:`~attention_paths.theory.solver.solve_continuation`).  The path-Gram tensor of the training
    set is computed once and shared by all solves.

    Returns a :class:`Grid` (``Pi = data.n_paths``).  The architecture is the data's (``data.heads``).
    """
    widths, taus = sorted(widths), sorted(taus)
    kernel = kernel or PathKernel(data.features["train"])
    X_eval, slices = _eval_stack(data)
    U = np.zeros((len(taus), len(widths), data.n_paths, data.n_paths))
    acc = {s: np.zeros((len(taus), len(widths))) for s in EVAL_SETS}
    grad, nit = np.zeros((len(taus), len(widths))), np.zeros((len(taus), len(widths)), dtype=int)
    t0 = time.perf_counter()
    bar = progress_bar(None, desc="theory grid", total=len(taus) * len(widths), disable=not progress)
    for i, tau in enumerate(taus):
        actions = [Action(kernel, data.y["train"], tau, Architecture.uniform(data.heads, N)) for N in reversed(widths)]
        results = solve_continuation(actions, n_restarts=0)[::-1]  # the panel point is verified separately
        for j, r in enumerate(results):
            U[i, j], grad[i, j], nit[i, j] = r.U, r.grad_max, r.n_iter
            mean = predict(r.U, data.features["train"], data.y["train"], tau, X_eval, return_var=False).mean
            for s, a in _accuracies(mean, data, slices).items():
                acc[s][i, j] = a
        bar.update(len(widths))
    bar.close()
    return Grid(np.array(widths), np.array(taus), U, acc, grad, nit, time.perf_counter() - t0)


def gp_line(data: OneShotData, taus) -> dict:
    """Accuracy of the GP limit (``U = I``) at each temperature, {set: [nT]} plus ``taus``."""
    taus = sorted(taus)
    X_eval, slices = _eval_stack(data)
    acc = {s: np.zeros(len(taus)) for s in EVAL_SETS}
    X, y = data.features["train"], data.y["train"]
    for i, tau in enumerate(taus):
        mean = predict(np.eye(data.n_paths), X, y, tau, X_eval, return_var=False).mean
        for s, a in _accuracies(mean, data, slices).items():
            acc[s][i] = a
    return {"taus": np.array(taus), "accuracy": acc}


def select_temperatures(accuracy: dict, taus, on: str) -> dict:
    """Best temperature per width by accuracy on set ``on`` (``"val"``: ours; ``"test"``: the paper's).

    ``accuracy`` maps sets to [nT] (a GP line) or [nT, nN] (a grid) arrays.  Ties keep the lowest temperature
    (the first in the grid).  Returns ``index`` and ``tau`` per width and every set's accuracy at them.
    """
    if on not in accuracy:
        raise ValueError(f"cannot select on {on!r}; sets are {sorted(accuracy)}")
    a = np.asarray(accuracy[on])
    idx = np.argmax(a, axis=0)  # first maximum = lowest temperature
    cols = np.arange(a.shape[1]) if a.ndim == 2 else None
    pick = (lambda m: np.asarray(m)[idx, cols]) if a.ndim == 2 else (lambda m: np.asarray(m)[idx])
    return {"on": on, "index": idx, "tau": np.asarray(taus)[idx], "accuracy": {s: pick(m) for s, m in accuracy.items()}}


def panel(data: OneShotData, U, n_align: int = 50) -> dict:
    """The ``N = 10``, ``tau = 0.5`` panel: head scores and label alignment of the GP and renormalised kernels."""
    X, y = data.features["train"], data.y["train"]
    K_gp, K_rn = gp_kernel(X), renormalized_kernel(U, X)
    return {
        "U": U,
        "U_gd": data.U_gd,
        "head_scores": head_scores(U, data.heads),
        "alignment": {"GP": kernel_alignment(K_gp, y, n_align), "renormalised": kernel_alignment(K_rn, y, n_align)},
    }


def edge_scan(data: OneShotData, N: float, taus, kernel: PathKernel | None = None) -> dict:
    """Theory and GP accuracies at width ``N`` for temperatures beyond the grid (does the validation protocol
    stop at the grid's edge?).  Each solve starts from the GP point; returns ``taus``, ``theory`` and ``gp``
    ({set: [nT]}) and the solver's largest final gradient."""
    taus = sorted(float(t) for t in taus)
    kernel = kernel or PathKernel(data.features["train"])
    X_eval, slices = _eval_stack(data)
    th = {s: [] for s in EVAL_SETS}
    grad = 0.0
    for tau in taus:
        r = solve(Action(kernel, data.y["train"], tau, Architecture.uniform(data.heads, N)), n_restarts=0)
        grad = max(grad, r.grad_max)
        mean = predict(r.U, data.features["train"], data.y["train"], tau, X_eval, return_var=False).mean
        for s, a in _accuracies(mean, data, slices).items():
            th[s].append(a)
    gp = gp_line(data, taus)["accuracy"]
    return {
        "N": float(N),
        "taus": taus,
        "theory": th,
        "gp": {s: list(map(float, v)) for s, v in gp.items()},
        "max_grad": float(grad),
    }


def merge_grids(parts: list[Grid]) -> Grid:
    """One :class:`Grid` from grids over disjoint temperature sets (same widths)."""
    parts = sorted(parts, key=lambda g: float(np.min(g.taus)))
    widths = parts[0].widths
    if any(list(g.widths) != list(widths) for g in parts):
        raise ValueError("grid parts must share their widths")
    taus = np.concatenate([g.taus for g in parts])
    if len(set(taus.tolist())) != len(taus):
        raise ValueError(f"grid parts overlap in temperature: {taus.tolist()}")
    return Grid(
        widths=np.asarray(widths),
        taus=taus,
        U=np.concatenate([g.U for g in parts]),
        accuracy={s: np.concatenate([g.accuracy[s] for g in parts]) for s in parts[0].accuracy},
        grad_max=np.concatenate([g.grad_max for g in parts]),
        n_iter=np.concatenate([g.n_iter for g in parts]),
        seconds=float(sum(g.seconds for g in parts)),
    )


def paired_comparison(theory_mean, gp_mean, y) -> dict:
    """Theory against GP on the same episodes: accuracy difference (points) with its paired standard error,
    and the counts of episodes only the theory / only the GP gets right (McNemar's discordant pairs)."""
    t, g = np.where(np.asarray(theory_mean) > 0, 1.0, -1.0) == y, np.where(np.asarray(gp_mean) > 0, 1.0, -1.0) == y
    d = t.astype(float) - g.astype(float)
    n = len(d)
    return {
        "diff": 100.0 * float(d.mean()),
        "se": 100.0 * float(d.std(ddof=1) / np.sqrt(n)) if n > 1 else float("nan"),
        "only_theory": int((t & ~g).sum()),
        "only_gp": int((g & ~t).sum()),
        "n": int(n),
    }


def save_grid(grid: Grid, path) -> None:
    """Write a :class:`Grid` (e.g. one temperature column, the ``grid-tau<t>`` stage of
    ``python -m attention_paths reproduce``) to ``path`` (``.npz``, atomically); :func:`load_grid` reads it."""
    atomic_savez(
        path,
        widths=grid.widths,
        taus=grid.taus,
        U=grid.U,
        seconds=np.array(grid.seconds),
        grad_max=grid.grad_max,
        n_iter=grid.n_iter,
        **{f"accuracy/{s}": a for s, a in grid.accuracy.items()},
    )


def load_grid(path) -> Grid:
    """The :class:`Grid` :func:`save_grid` wrote to ``path`` (for :func:`merge_grids`)."""
    a = load_npz(path)
    return Grid(
        widths=a["widths"],
        taus=a["taus"],
        U=a["U"],
        accuracy={k.split("/", 1)[1]: v for k, v in a.items() if k.startswith("accuracy/")},
        grad_max=a["grad_max"],
        n_iter=a["n_iter"],
        seconds=float(a["seconds"]),
    )
