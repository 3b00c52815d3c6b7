"""The invariants a result type states about its fields, checked where a results folder is read (issue 37 §2).

A digest record catches damage, not a file rewritten together with its record: these checks are the defence
behind it.  Each function raises :class:`InvariantError` (a ``ValueError``) whose message names the results
folder, the field and the problem, e.g. ``"runs/x: field 'sampled.main_N10_full.accuracy' = 196.3 is not an
accuracy in [0, 100] %"``.  A result type's ``check(folder)`` method calls them on its own fields.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = [
    "InvariantError",
    "violation",
    "finite",
    "shape",
    "accuracy",
    "increasing",
    "order_parameter",
    "converged",
    "symmetric",
    "nonnegative",
    "sorted_by",
    "present",
]


class InvariantError(ValueError):
    """A result's field breaks an invariant its type states (a ``ValueError``)."""


def violation(folder, name: str, problem: str):
    """Raise :class:`InvariantError` ``"<folder>: field '<name>' <problem>"``."""
    raise InvariantError(f"{Path(folder) if folder is not None else 'result'}: field {name!r} {problem}")


def present(folder, name: str, value) -> None:
    """A declared field that must be there (not ``None``)."""
    if value is None:
        violation(folder, name, "is missing")


def shape(folder, name: str, a, expected) -> np.ndarray:
    """``a`` as an array of shape ``expected`` (``None`` entries: any length)."""
    a = np.asarray(a)
    expected = tuple(expected)
    if a.ndim != len(expected) or any(e is not None and s != e for s, e in zip(a.shape, expected, strict=True)):
        violation(folder, name, f"has shape {a.shape}, expected {expected}")
    return a


def finite(folder, name: str, a, expected=None) -> np.ndarray:
    """``a`` as a float array, every entry finite (and, given, of shape ``expected``)."""
    if expected is not None:
        shape(folder, name, a, expected)
    try:
        a = np.asarray(a, dtype=float)
    except (TypeError, ValueError):
        violation(folder, name, "is not numeric")
    if not np.all(np.isfinite(a)):
        violation(folder, name, f"holds non-finite values ({int(np.sum(~np.isfinite(a)))} of {a.size})")
    return a


def accuracy(folder, name: str, a, expected=None) -> np.ndarray:
    """Accuracies in percent: finite and in [0, 100]."""
    a = finite(folder, name, a, expected)
    if a.size and (a.min() < 0 or a.max() > 100):
        bad = a.min() if a.min() < 0 else a.max()
        violation(folder, name, f"= {float(bad):g} is not an accuracy in [0, 100] %")
    return a


def increasing(folder, name: str, a, length: int | None = None) -> np.ndarray:
    """A strictly increasing, finite 1-d sequence (of ``length`` entries, given: the axis it labels)."""
    a = finite(folder, name, a, (length,))
    if np.any(np.diff(a) <= 0):
        violation(folder, name, f"= {a.tolist()} is not strictly increasing")
    return a


def order_parameter(folder, name: str, U, n_paths: int, lead=()) -> np.ndarray:
    """Order parameters ``U`` (``lead`` + (n_paths, n_paths)): finite, symmetric and positive semi-definite,
    both to a tolerance relative to the matrices' scale."""
    U = finite(folder, name, U, tuple(lead) + (n_paths, n_paths))
    scale = max(float(np.abs(U).max(initial=0.0)), 1e-300)
    if not np.allclose(U, np.swapaxes(U, -1, -2), rtol=0.0, atol=1e-8 * scale):
        violation(folder, name, "is not symmetric")
    if U.size:
        low = float(np.linalg.eigvalsh(0.5 * (U + np.swapaxes(U, -1, -2))).min())
        if low < -1e-8 * scale:
            violation(folder, name, f"is not positive semi-definite (smallest eigenvalue {low:.4g})")
    return U


def symmetric(folder, name: str, K) -> np.ndarray:
    """A square matrix (or a stack of them), symmetric to a tolerance relative to its scale (a kernel)."""
    K = finite(folder, name, K)
    scale = max(float(np.abs(K).max(initial=0.0)), 1e-300)
    if (
        K.ndim < 2
        or K.shape[-1] != K.shape[-2]
        or not np.allclose(K, np.swapaxes(K, -1, -2), rtol=0.0, atol=1e-10 * scale)
    ):
        violation(folder, name, "is not a symmetric matrix")
    return K


def nonnegative(folder, name: str, a) -> np.ndarray:
    """Finite and >= 0 everywhere (standard errors, variances)."""
    a = finite(folder, name, a)
    if a.size and a.min() < 0:
        violation(folder, name, f"holds a negative value ({float(a.min()):.4g}), not an error or a variance")
    return a


def converged(folder, name: str, grad_max, tol: float, hessian_min_eig=None) -> None:
    """A solver's convergence report: every final gradient ``grad_max`` finite, >= 0 and at most the solver's
    tolerance ``tol`` (a stored run never holds a solve that did not converge), and every smallest Hessian
    eigenvalue, given, positive (the stability certificate)."""
    g = finite(folder, name, grad_max)
    if g.size and (g.min() < 0 or g.max() > tol):
        violation(folder, name, f"= {float(g.max()):.3g} is not a converged solve's final gradient (tolerance {tol:g})")
    if hessian_min_eig is not None:
        h = finite(folder, f"{name} (Hessian)", hessian_min_eig)
        if h.size and h.min() <= 0:
            violation(folder, name, f"has a smallest Hessian eigenvalue {float(h.min()):.3g} <= 0: no minimum")


def sorted_by(folder, name: str, order, scores: dict) -> None:
    """``order`` lists the keys of ``scores``, each once, by ascending score."""
    if sorted(order) != sorted(scores):
        violation(folder, name, f"= {list(order)} does not name {sorted(scores)} once each")
    values = [scores[k] for k in order]
    if any(b < a for a, b in zip(values, values[1:], strict=False)):
        violation(folder, name, f"= {list(order)} is not sorted by ascending score ({values})")
