"""Predictor statistics at the saddle point: GP regression with the renormalised kernel (spec T§10-11).

``<f(x*)> = k(x*)^T (K + tau I)^{-1} Y`` and ``Var f(x*) = K(x*, x*) - k^T (K + tau I)^{-1} k`` with
``K = K^{U}``.  The variance is that of the network output and excludes the label noise ``tau``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import linalg

from attention_paths.theory.checks import (
    check_features,
    check_kernel_finite,
    check_labels,
    check_order_parameter,
    check_psd,
    check_targets,
    check_tau,
)
from attention_paths.theory.kernels import renormalized_kernel

__all__ = [
    "Prediction",
    "predict",
    "accuracy",
    "generalization_error",
    "kernel_alignment",
    "kernel_target_alignment",
    "class_block_contrast",
]


@dataclass
class Prediction:
    """Posterior mean and variance of the network output at M test inputs (arrays of shape [M])."""

    mean: np.ndarray
    var: np.ndarray

    def accuracy(self, y) -> float:
        return accuracy(self.mean, y)

    def generalization_error(self, y) -> float:
        if np.isnan(self.var).all() and self.var.size:
            raise ValueError(
                "the predictive variance was not computed (predict(..., return_var=False)); the generalisation "
                "error needs it: call predict with return_var=True"
            )
        return generalization_error(self.mean, self.var, y)


def predict(U, train_features, y, tau: float, test_features, *, return_var: bool = True) -> Prediction:
    """Mean and variance of the predictor with kernel ``K^U`` (spec T§10).

    Parameters
    ----------
    U : [Pi, Pi] order parameter (the GP limit is ``U = I`` for unit variances)
    train_features : [P, N0, Pi] path features of the training inputs
    y : [P] training targets
    tau : temperature, > 0
    test_features : [M, N0, Pi] path features of the test inputs

    Returns
    -------
    Prediction with ``mean`` and ``var`` of shape [M]

    Examples
    --------
    GP regression with the renormalised kernel ``K^U = sum U C``: at ``U = I`` and a small temperature the
    mean interpolates the training targets, and the variance vanishes there.

    >>> import numpy as np
    >>> import attention_paths as ap
    >>> X = np.random.default_rng(0).standard_normal((10, 8, 4)) / np.sqrt(32)  # [P, N0, Pi] path features
    >>> y = np.sign(X[:, 0, 0])
    >>> pred = ap.predict(np.eye(4), X, y, 1e-8, X)
    >>> pred.mean.shape, bool(np.allclose(pred.mean, y, atol=1e-5)), bool(pred.var.max() < 1e-5)
    ((10,), True, True)
    """
    Xtr = check_features(train_features, "train features")
    Xte = check_features(test_features, "test features")
    if Xtr.shape[1:] != Xte.shape[1:]:
        raise ValueError(f"train and test features differ in [N0, Pi]: {Xtr.shape[1:]} vs {Xte.shape[1:]}")
    U = check_order_parameter(U, Xtr.shape[2])
    if not np.allclose(U, U.T, atol=1e-12 * max(1.0, np.abs(U).max())):
        raise ValueError("order parameter U must be symmetric")
    check_psd(U)
    y = check_targets(y, Xtr.shape[0])
    tau = check_tau(tau)
    K = check_kernel_finite(renormalized_kernel(U, Xtr), Xtr)
    K[np.diag_indices_from(K)] += tau
    c = linalg.cho_factor(K, lower=True)
    alpha = linalg.cho_solve(c, y)
    # mean_m = sum_p K^U(x_m, x_p) alpha_p = sum_i Xte[m, i, :] U g[i, :] with g = sum_p alpha_p Xtr[p]:
    # O(M N0 Pi) instead of the O(M P N0 Pi) of forming the test kernel
    g = np.tensordot(alpha, Xtr, axes=(0, 0))  # [N0, Pi]
    mean = Xte.reshape(Xte.shape[0], -1) @ (g @ U.T).reshape(-1)
    if not return_var:
        return Prediction(mean=mean, var=np.full_like(mean, np.nan))
    k = renormalized_kernel(U, Xtr, Xte)  # [P, M]
    kdiag = np.einsum("mia,ab,mib->m", Xte, U, Xte, optimize=True)
    v = linalg.solve_triangular(c[0], k, lower=True)
    var = kdiag - np.einsum("pm,pm->m", v, v)
    return Prediction(mean=mean, var=np.maximum(var, 0.0))


def accuracy(mean, y) -> float:
    """Accuracy of the mean predictor in percent; an exactly zero mean counts as wrong (spec T§10).

    ``y`` are labels in the +-1 convention (others, e.g. 0/1, are refused: the sign of the prediction is
    compared with them).
    """
    mean, y = np.asarray(mean, dtype=np.float64), check_labels(y)
    if mean.shape != y.shape:
        raise ValueError(f"predictions {mean.shape} and labels {y.shape} differ in shape")
    if mean.size == 0:
        raise ValueError("no test points: the accuracy of an empty set is undefined")
    return 100.0 * float(np.mean(np.sign(mean) == y))


def generalization_error(mean, var, y) -> float:
    """Squared-loss generalisation error ``mean[(y - <f>)^2 + Var f]`` (spec T§10)."""
    mean, var, y = np.asarray(mean), np.asarray(var), np.asarray(y)
    if not (mean.shape == var.shape == y.shape) or mean.ndim != 1:
        raise ValueError(
            f"mean, variance and targets must be vectors of one shape [M], got {mean.shape}, {var.shape} and {y.shape}"
        )
    if mean.size == 0:
        raise ValueError("no test points: the generalisation error of an empty set is undefined")
    return float(np.mean((y - mean) ** 2 + var))


def kernel_alignment(K, y, k: int | None = None) -> np.ndarray:
    """Label overlaps ``|u_k^T Y| / sqrt(P)`` of the eigenvectors of ``K`` by decreasing eigenvalue.

    Parameters
    ----------
    K : [P, P] symmetric kernel matrix
    y : [P] labels
    k : number of leading eigenvectors to return (default all)

    Returns
    -------
    [k] overlaps; their squares sum to ``|Y|^2 / P`` over all eigenvectors
    """
    K = np.asarray(K, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if K.ndim != 2 or K.shape[0] != K.shape[1] or K.shape[0] != y.shape[0]:
        raise ValueError(f"need a square [P, P] kernel and [P] labels, got {K.shape} and {y.shape}")
    w, V = np.linalg.eigh(0.5 * (K + K.T))
    order = np.argsort(w)[::-1]
    overlaps = np.abs(V[:, order].T @ y) / np.sqrt(len(y))
    return overlaps if k is None else overlaps[:k]


def kernel_target_alignment(K, y) -> float:
    """Kernel-target alignment ``Y^T K Y / (||K||_F ||Y||^2)`` in [-1, 1] (Cristianini et al., 2002)."""
    K = np.asarray(K, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if K.ndim != 2 or K.shape != (y.shape[0], y.shape[0]):
        raise ValueError(f"need a square [P, P] kernel and [P] labels, got {K.shape} and {y.shape}")
    return float(y @ K @ y / (np.linalg.norm(K) * (y @ y)))


def class_block_contrast(K, y) -> float:
    """Two-class block structure of a kernel: mean within-class minus mean between-class off-diagonal entry,
    in units of the standard deviation of all off-diagonal entries (0: no structure)."""
    K = np.asarray(K, dtype=np.float64)
    y = np.asarray(y)
    if K.ndim != 2 or K.shape != (y.shape[0], y.shape[0]):
        raise ValueError(f"need a square [P, P] kernel and [P] labels, got {K.shape} and {y.shape}")
    off = ~np.eye(len(y), dtype=bool)
    same = (y[:, None] == y[None, :]) & off
    between = y[:, None] != y[None, :]
    if not same.any() or not between.any():
        raise ValueError("need at least two examples of each of two classes")
    return float((K[same].mean() - K[between].mean()) / K[off].std())
