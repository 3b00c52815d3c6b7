"""The invariants of a :class:`~.result.OneShotResult` (its ``check`` method), checked by its reader: widths and
temperatures increasing and matching the grid's axes, ``U`` finite, symmetric and positive semi-definite over the
paths of the stored architecture (its heads per layer: one head score per head), the panel's head scores those of
its ``U``, accuracies in [0, 100], predictions finite and of one stacked length."""

from __future__ import annotations

import numpy as np

from attention_paths.base import invariants as inv
from attention_paths.tasks.oneshot.data import EVAL_SETS
from attention_paths.tasks.oneshot.grid import select_temperatures
from attention_paths.theory.scores import head_scores
from attention_paths.theory.solver import TOLERANCE

__all__ = ["check_oneshot"]


def _accuracies(folder, name: str, per_set: dict, expected) -> None:
    for s, a in per_set.items():
        inv.accuracy(folder, f"{name}[{s}]", a, expected)


def _panel(folder, res, n_paths: int, heads) -> int:
    """The panel's ``U`` is the grid's at its index, its head scores are those of that ``U``; returns the
    stacked predictions' length."""
    p = res.panel
    i_t, i_n = p.index
    if float(res.widths[i_n]) != float(res.config["panel_N"]) or float(res.taus[i_t]) != float(res.config["panel_tau"]):
        inv.violation(folder, "panel.index", f"= {p.index} is not the grid point of the panel's N and tau")
    inv.order_parameter(folder, "panel.U", p.U, n_paths)
    inv.order_parameter(folder, "panel.U_gd", p.U_gd, n_paths)
    got = [np.asarray(h, float) for h in p.head_scores]
    want = head_scores(p.U, heads)
    if len(got) != len(want) or any(
        g.shape != w.shape or not np.allclose(g, w, rtol=1e-9, atol=1e-12) for g, w in zip(got, want, strict=True)
    ):
        inv.violation(folder, "panel.head_scores", "are not the head scores of the panel's U (paths or layers moved?)")
    for k, a in p.alignment.items():
        inv.finite(folder, f"panel.alignment[{k}]", a, (None,))
    n_eval = (res.data_info or {}).get("n_eval")  # the stacked evaluation sets, n_eval episodes each
    n_stack = len(EVAL_SETS) * int(n_eval) if n_eval else None
    if p.mean is not None:
        n_stack = len(inv.finite(folder, "panel.mean", p.mean, (n_stack,)))
        var = inv.finite(folder, "panel.var", p.var, (n_stack,))
        if (var < 0).any():
            inv.violation(folder, "panel.var", "holds negative variances")
    return n_stack


def _heads(folder, res) -> tuple:
    """The heads per layer of the panel's scores, checked against the network record's."""
    heads = tuple(len(h) for h in res.panel.head_scores)
    if not heads or min(heads) < 1:
        inv.violation(folder, "panel.head_scores", f"name no heads per layer ({heads})")
    rec = (res.network_record or {}).get("config") or {}
    if {"n_heads", "n_layers"} <= set(rec) and heads != (int(rec["n_heads"]),) * int(rec["n_layers"]):
        inv.violation(folder, "panel.head_scores", f"are for heads {heads}, the network record's are {rec}")
    return heads


def _selections(folder, res, taus, gp_taus) -> None:
    """Each selected temperature is the one at its index, and the first best on its set (recomputed)."""
    for on, d in res.select.items():
        for who, c in d.items():
            axis = taus if who == "theory" else gp_taus
            if not np.allclose(np.asarray(axis)[np.asarray(c.index)], c.tau):
                inv.violation(folder, f"select[{on}][{who}].tau", "is not the temperature at its index")
            _accuracies(folder, f"select[{on}][{who}].accuracy", c.accuracy, np.shape(c.tau))
            grid = res.grid_accuracy if who == "theory" else res.gp_accuracy
            if on not in grid:
                continue
            again = select_temperatures(grid, axis, on)
            if not np.array_equal(np.asarray(again["index"]), np.asarray(c.index)):
                inv.violation(
                    folder,
                    f"select[{on}][{who}].index",
                    f"= {np.asarray(c.index).tolist()} is not the best "
                    f"temperature on {on}, {np.asarray(again['index']).tolist()}",
                )


def _sampled(folder, res, widths, n_paths: int, n_stack) -> None:
    """The sampled points: on the grid's widths, finite, with non-negative Monte Carlo errors."""
    for N, r in res.sampled.items():
        if float(N) not in [float(w) for w in widths]:
            inv.violation(folder, f"sampled[{N}]", f"is at a width not on the grid {widths.tolist()}")
        inv.order_parameter(folder, f"sampled[{N}].U_hat", r.U_hat, n_paths)
        inv.finite(folder, f"sampled[{N}].mean", r.mean, (n_stack,))
        if np.min(inv.finite(folder, f"sampled[{N}].mcse", r.mcse, (n_stack,))) < 0:
            inv.violation(folder, f"sampled[{N}].mcse", "holds a negative Monte Carlo standard error")
        for s, e in r.sets.items():
            inv.accuracy(folder, f"sampled[{N}].sets[{s}]", [e["theory"], e["sampled"]])


def check_oneshot(res, folder=None) -> None:
    """Raise :class:`~attention_paths.base.invariants.InvariantError` naming ``folder``, the field and the problem
    when ``res`` breaks an invariant of its type."""
    for name in ("panel", "select", "network_accuracy", "grid_accuracy", "gp_accuracy", "gp_grid_accuracy"):
        inv.present(folder, name, getattr(res, name))
    widths = inv.increasing(folder, "widths", res.widths)
    taus = inv.increasing(folder, "taus", res.taus)
    n_t, n_w = len(taus), len(widths)
    heads = _heads(folder, res)
    n_paths = int(np.prod(heads))
    inv.order_parameter(folder, "U", res.U, n_paths, (n_t, n_w))
    inv.converged(folder, "solver.max_grad", (res.solver or {}).get("max_grad"), TOLERANCE)
    if not np.array_equal(res.panel.U, res.U[res.panel.index]):
        inv.violation(folder, "panel.U", "is not the grid's U at the panel's index")
    inv.accuracy(folder, "network_accuracy", list(res.network_accuracy.values()))
    _accuracies(folder, "grid_accuracy", res.grid_accuracy, (n_t, n_w))
    for s, a in res.grid_accuracy.items():
        if not np.any(a):
            inv.violation(folder, f"grid_accuracy[{s}]", "is zero everywhere: not a grid of accuracies")
    gp_taus = inv.finite(folder, "gp_taus", res.gp_taus, (None,))
    _accuracies(folder, "gp_accuracy", res.gp_accuracy, (len(gp_taus),))
    _accuracies(folder, "gp_grid_accuracy", res.gp_grid_accuracy, (n_t,))
    _selections(folder, res, taus, gp_taus)
    n_stack = _panel(folder, res, n_paths, heads)
    if res.paired is not None:
        n_stack = len(inv.finite(folder, "paired.theory", res.paired.theory, (n_stack,)))
        inv.finite(folder, "paired.gp", res.paired.gp, (n_stack,))
    _sampled(folder, res, widths, n_paths, n_stack)
