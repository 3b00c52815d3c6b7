"""The g-d mechanism (spec §A.5): the good path ``g`` and the denoising path ``d`` repeat the same coordinate, and
the order parameter's cross term ``U_gd`` combines them into a denoised one."""

from __future__ import annotations

import numpy as np

from attention_paths.tasks.markov.data import N_FEATURES, embeddings
from attention_paths.tasks.markov.task import MarkovTask, _accuracy_with

__all__ = ["repeat_coordinate", "difference_order_parameter", "cross_weight_ratio", "difference_scan"]


def repeat_coordinate(xi, nf: int = N_FEATURES) -> np.ndarray:
    """Component of each path input along ``e_sum = (v+ + v-)/|v+ + v-|`` (the "how many state tokens" axis).

    For the good path it is ``10/31`` times the number of tokens followed by a repeat (plus in-plane
    noise): the label-carrying coordinate.  ``xi`` is [P, Pi, N0]; returns [P, Pi].
    """
    xi = np.asarray(xi, dtype=np.float64)
    v_plus, v_minus = embeddings(nf)
    e_sum = (v_plus + v_minus) / np.linalg.norm(v_plus + v_minus)
    return xi[..., :nf] @ e_sum


def difference_order_parameter(n_paths: int, g: int, d: int, c: float) -> np.ndarray:
    """Rank-one ``U`` whose kernel is that of the single feature ``xi^g - c xi^d``:
    ``U = u u^T``, ``u = e_g - c e_d``."""
    if g == d or not (0 <= g < n_paths and 0 <= d < n_paths):
        raise ValueError(f"g and d must be two different paths of {n_paths}, got {g} and {d}")
    u = np.zeros(n_paths)
    u[g], u[d] = 1.0, -float(c)
    return np.outer(u, u)


def cross_weight_ratio(U, g: int, d: int) -> float:
    """``c* = -U_gd / U_gg``: under a Gaussian prior with covariance ``U`` the d-weights follow ``-c* w_g``."""
    U = np.asarray(U, dtype=np.float64)
    return float(-U[g, d] / U[g, g])


def difference_scan(task: MarkovTask, cs, tau: float, g: int = 0, d: int | None = None) -> np.ndarray:
    """Test accuracy of kernel regression on the single feature ``xi^g - c xi^d`` for every ``c`` in ``cs``."""
    d = task.path_names.index("d") if d is None else d
    return np.array([_accuracy_with(task, difference_order_parameter(task.n_paths, g, d, c), tau) for c in cs])
