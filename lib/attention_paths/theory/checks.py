"""Every input check of the theory, the predictor and the samplers, in one place (clear errors naming the problem)."""

from __future__ import annotations

import warnings

import numpy as np
import torch

__all__ = [
    "check_kernel_finite",
    "check_targets",
    "check_tau",
    "check_features",
    "check_labels",
    "check_count",
    "check_tolerance",
    "check_positive",
    "check_order_parameter",
    "check_psd",
    "check_heads",
    "check_tokens",
    "check_training_set",
]


def check_features(X, name: str = "features", layout: str = "[P, N0, Pi]") -> np.ndarray:
    """A real, finite, non-empty 3-d array (features or path inputs) as float64; errors name ``name``."""
    if np.iscomplexobj(X):
        raise ValueError(f"{name} are complex; the theory needs real arrays of shape {layout}")
    try:
        X = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a real array of shape {layout} ({err})") from None
    if X.ndim != 3:
        raise ValueError(f"{name} must have shape {layout}, got {X.shape}")
    if 0 in X.shape:
        raise ValueError(f"{name} are empty (shape {X.shape}); need at least one example")
    if not np.isfinite(X).all():
        raise ValueError(f"{name} contain non-finite values")
    return X


def check_labels(y, name: str = "labels") -> np.ndarray:
    """Binary labels in the +-1 convention (every accuracy in this package compares signs with them)."""
    y = np.asarray(y, dtype=np.float64)
    bad = ~np.isin(y, (-1.0, 1.0))
    if bad.any():
        values = np.unique(y[bad])[:5]
        raise ValueError(
            f"{name} must be +1 or -1 (the package's convention for two classes); found "
            f"{values.tolist()}{'...' if bad.sum() > 5 else ''} -- map 0/1 labels with 2 * y - 1"
        )
    return y


def check_count(value, name: str, minimum: int = 0) -> int:
    """An integer count >= ``minimum`` (iterations, restarts, steps); a float with a fraction is refused."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float, np.integer, np.floating))
        or not float(value).is_integer()
        or value < minimum
    ):
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def check_positive(value, name: str) -> float:
    """A positive finite number (a tolerance, a temperature); errors name ``name``."""
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a positive number, got {value!r}") from None
    if not (np.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be positive and finite, got {value}")
    return value


def check_tolerance(tol, name: str = "tol") -> float:
    """A positive finite tolerance."""
    return check_positive(tol, name)


def check_kernel_finite(K, features, U=None) -> np.ndarray:
    """``K`` itself when all its entries are finite; else ``FloatingPointError`` naming the cause: the
    features' scale overflows the kernels (or, with finite features products, ``U``'s)."""
    K = np.asarray(K)
    if np.isfinite(K).all():
        return K
    big = float(np.abs(np.asarray(features)).max())
    u = "" if U is None else f", largest |U| entry {float(np.abs(np.asarray(U)).max()):.3g}"
    raise FloatingPointError(
        f"the kernel has non-finite entries: the features' scale (largest |feature| {big:.3g}{u}) overflows "
        "products of features in float64; rescale the features (e.g. divide the inputs by their norm)"
    )


def check_targets(y, P: int) -> np.ndarray:
    """Training targets as a float64 vector of length ``P`` with finite entries; 0/1 targets (the labels of
    a ±1 problem written the other way) give a warning, since the theory's classifiers take ±1."""
    if np.iscomplexobj(y):
        raise ValueError("targets are complex; they must be real")
    y = np.asarray(y, dtype=np.float64)
    if P < 1:
        raise ValueError("the training set is empty (P = 0)")
    if y.shape != (P,):
        raise ValueError(f"targets must have shape [P={P}], got {y.shape}")
    if not np.isfinite(y).all():
        raise ValueError("targets contain non-finite values")
    if set(np.unique(y)) == {0.0, 1.0}:
        warnings.warn(
            "training targets are 0/1; the theory's classification convention is ±1 (the accuracy compares the "
            "sign of the predictor with the label): convert them with y = 2 y - 1",
            UserWarning,
            stacklevel=3,
        )
    return y


def check_tau(tau) -> float:
    """The temperature (likelihood variance) as a positive finite float."""
    return check_positive(tau, "temperature tau")


def check_order_parameter(U, n_paths: int, name: str = "order parameter U") -> np.ndarray:
    """A finite ``[n_paths, n_paths]`` float64 matrix."""
    U = np.asarray(U, dtype=np.float64)
    if U.shape != (n_paths, n_paths):
        raise ValueError(f"{name} must have shape [{n_paths}, {n_paths}], got {U.shape}")
    if not np.isfinite(U).all():
        raise ValueError(f"{name} contains non-finite values")
    return U


def check_psd(U, name: str = "order parameter U") -> np.ndarray:
    """``U`` itself, after checking that its symmetric part is positive semidefinite (to rounding)."""
    w = np.linalg.eigvalsh(0.5 * (U + U.T))
    if w.min() < -1e-10 * max(1.0, np.abs(w).max()):
        raise ValueError(f"{name} must be positive semidefinite (smallest eigenvalue {w.min():.3e})")
    return U


def check_heads(heads) -> tuple[int, ...]:
    """Heads per layer as a non-empty tuple of positive integers."""
    heads = tuple(int(h) for h in heads)
    if len(heads) == 0 or any(h < 1 for h in heads):
        raise ValueError(f"heads per layer must be a non-empty sequence of positive integers, got {heads}")
    return heads


def check_tokens(x, n0: int):
    """Token inputs as a torch tensor ``[P, N0, T]`` (a single ``[N0, T]`` input gains a batch axis), finite."""
    if x.ndim == 2:
        x = x[None]
    if x.ndim != 3 or x.shape[1] != n0:
        raise ValueError(f"input must have shape [P, N0={n0}, T], got {tuple(x.shape)}")
    if not torch.isfinite(x).all():
        raise ValueError("input contains non-finite values")
    return x


def check_training_set(inputs, y, tau, what: str):
    """``(inputs, y, tau)`` of a training set: a finite 3-d array, targets of its length, a temperature."""
    arr = check_features(inputs, what, "a 3-d array")
    return arr, check_targets(y, arr.shape[0]), check_tau(tau)
