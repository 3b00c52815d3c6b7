"""How closely posterior samples agree with the theory: predictor means and the order parameter.

The thresholds of "agree" belong to the claims of each task (:mod:`attention_paths.tasks`); these functions
compute the numbers they are judged on.
"""

from __future__ import annotations

import numpy as np

from attention_paths.theory.predictor import accuracy

__all__ = ["mean_agreement", "order_parameter_agreement"]


def mean_agreement(sampled_mean, theory_mean, y, mcse=None) -> dict:
    """Sampled against theory predictor means [M] on targets ``y`` (+-1).

    Returns ``theory`` and ``sampled`` accuracy (%), ``corr`` (correlation of the means), ``flips`` (test
    points whose signs differ) and, with the Monte Carlo standard errors ``mcse`` [M] of the sampled means,
    ``flips_beyond_mc`` (flips where the theory mean lies more than 3 standard errors from zero), and ``n``.
    """
    ms, th = np.asarray(sampled_mean, dtype=np.float64), np.asarray(theory_mean, dtype=np.float64)
    if ms.shape != th.shape:
        raise ValueError(f"sampled and theory means differ in shape: {ms.shape} vs {th.shape}")
    flips = np.sign(ms) != np.sign(th)
    out = {
        "theory": accuracy(th, y),
        "sampled": accuracy(ms, y),
        "corr": float(np.corrcoef(ms, th)[0, 1]),
        "flips": int(flips.sum()),
        "n": int(len(ms)),
    }
    if mcse is not None:
        out["flips_beyond_mc"] = int((flips & (np.abs(th) > 3 * np.asarray(mcse))).sum())
    return out


def order_parameter_agreement(U_hat, U_theory, big: float = 0.1, top: float = 0.3) -> dict:
    """Sampled ``U_hat`` against the theory's ``U*``: ``signs_equal`` (the signs of every entry with
    ``|U*| >= big * max|U*|`` agree) and ``max_rel_error`` (largest ``|U_hat - U*| / |U*|`` over the entries
    with ``|U*| >= top * max|U*|``)."""
    Uh, Ut = np.asarray(U_hat, dtype=np.float64), np.asarray(U_theory, dtype=np.float64)
    if Uh.shape != Ut.shape:
        raise ValueError(f"U_hat and U* differ in shape: {Uh.shape} vs {Ut.shape}")
    scale = np.abs(Ut).max()
    large, largest = np.abs(Ut) >= big * scale, np.abs(Ut) >= top * scale
    return {
        "signs_equal": bool(np.all(np.sign(Uh[large]) == np.sign(Ut[large]))),
        "max_rel_error": float(np.max(np.abs(Uh[largest] - Ut[largest]) / np.abs(Ut[largest]))),
    }
