"""Checks of reloaded result arrays, shared by every experiment's reader: each raises ``ValueError`` naming
the results folder and the array, so that a damaged or foreign folder is refused rather than plotted."""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["refuse", "finite", "accuracies", "order_parameters"]


def refuse(folder, what: str):
    """Raise ``ValueError("<folder>: <what>")``."""
    raise ValueError(f"{Path(folder)}: {what}")


def finite(folder, name: str, a, shape=None) -> np.ndarray:
    """``a`` as a float array, checked finite and (given) of shape ``shape``."""
    a = np.asarray(a, dtype=float)
    if shape is not None and a.shape != tuple(shape):
        refuse(folder, f"{name} has shape {a.shape}, the summary says {tuple(shape)}")
    if not np.all(np.isfinite(a)):
        refuse(folder, f"{name} holds non-finite values")
    return a


def accuracies(folder, name: str, a, shape=None) -> np.ndarray:
    """``a`` checked as :func:`finite` and as accuracies in percent: in [0, 100] and not all zero."""
    a = finite(folder, name, a, shape)
    if a.size and (a.min() < 0 or a.max() > 100 or not a.any()):
        refuse(folder, f"{name} is not a set of accuracies in (0, 100] %")
    return a


def order_parameters(folder, name: str, U, shape) -> None:
    """``U`` [..., Pi, Pi] checked as :func:`finite`, symmetric and with a positive diagonal."""
    U = finite(folder, name, U, shape)
    diag = np.diagonal(U, axis1=-2, axis2=-1)
    if (diag <= 0).any() or not np.allclose(U, np.swapaxes(U, -1, -2), atol=1e-8 * max(1.0, np.abs(U).max())):
        refuse(folder, f"{name} is not a set of symmetric order parameters with a positive diagonal")
