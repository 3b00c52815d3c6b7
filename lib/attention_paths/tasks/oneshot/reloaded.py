"""Numbers recomputed from a reloaded results folder of the experiment
(:func:`attention_paths.runs.experiments.load_run`): the ``N = 10`` panel and the paired theory-GP
comparison."""

from __future__ import annotations

import numpy as np

from attention_paths.tasks.oneshot.data import EVAL_SETS
from attention_paths.tasks.oneshot.grid import paired_comparison

__all__ = ["run_panel", "run_paired"]


def run_panel(run: dict) -> dict:
    """The ``N = 10``, ``tau = 0.5`` panel of a reloaded run (:func:`attention_paths.runs.experiments.load_run`):
    theory ``U``, sampled
    ``U_hat`` (``None`` without samples), gradient-descent ``U_gd``, head scores, alignment, the grid index
    of the panel point and the validation-selected grid indices per width."""
    cfg, arrays = run["config"], run["arrays"]
    taus, widths = [float(t) for t in run["taus"]], [float(w) for w in run["widths"]]
    i_t, i_n = taus.index(float(cfg["panel_tau"])), widths.index(float(cfg["panel_N"]))
    N = int(cfg["panel_N"])
    return {
        "U": arrays["U"][i_t, i_n],
        "U_hat": arrays.get(f"sample_N{N}_U_hat"),
        "U_gd": arrays["U_gd"],
        "head_scores": [np.asarray(h) for h in run["panel"]["head_scores"]],
        "index": (i_t, i_n),
        "alignment": {"GP": arrays["align_GP"], "renormalised": arrays["align_renormalised"]},
        "selected_index": [taus.index(float(t)) for t in run["select"]["val"]["theory"]["tau"]],
    }


def run_paired(run: dict) -> dict:
    """Per set, :func:`paired_comparison` of the theory (smallest width, validation-selected temperature)
    and the GP (validation-selected temperature) on the same episodes of a reloaded run."""
    n = int(run["config"]["n_eval"])
    y = np.repeat([1.0, -1.0], n // 2)  # every evaluation set is stored as its +1 block, then its -1 block
    th, gp = run["arrays"]["paired_theory_mean"], run["arrays"]["paired_gp_mean"]
    return {s: paired_comparison(th[k * n : (k + 1) * n], gp[k * n : (k + 1) * n], y) for k, s in enumerate(EVAL_SETS)}
