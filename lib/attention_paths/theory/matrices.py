"""Small matrix helpers shared by the action and its Hessian: the partial trace over a layer's heads, the
closed-form readout overlap, and log-determinants and inverses by Cholesky (spec T§7-9)."""

from __future__ import annotations

import numpy as np
from scipy import linalg
from scipy.linalg import lapack

__all__ = ["NotPositiveDefiniteError", "partial_trace", "closed_form_ua", "logdet_inv"]


class NotPositiveDefiniteError(ValueError):
    """An order parameter or kernel matrix that must be positive definite is not."""


def partial_trace(U, H: int) -> np.ndarray:
    """Partial trace over the slow (first-layer) head index: ``(Tr_h U)_{RR'} = sum_h U_{(h,R),(h,R')}``.

    Parameters
    ----------
    U : [H*D, H*D]
    H : number of heads of the traced layer

    Returns
    -------
    [D, D]
    """
    U = np.asarray(U)
    D = U.shape[0] // H
    if U.shape != (H * D, H * D):
        raise ValueError(f"cannot take the partial trace over H={H} heads of a {U.shape} matrix")
    return np.einsum("hahb->ab", U.reshape(H, D, H, D))


def closed_form_ua(trace_UL: float, H_L: int, N_L: float, N_a: float, sigma2_L: float, sigma2_a: float) -> float:
    """Positive root of ``U_a^2 + b U_a - c = 0`` (spec T§9.1)."""
    b = sigma2_a * (H_L * N_L / N_a - 1.0)
    c = sigma2_a * N_L * trace_UL / (N_a * sigma2_L)
    if not c > 0:
        raise NotPositiveDefiniteError(f"Tr U_L must be positive, got {trace_UL}")
    root = np.sqrt(b * b + 4.0 * c)
    return 2.0 * c / (b + root) if b >= 0 else 0.5 * (root - b)  # stable form of (-b + root)/2


def _chol(U, name: str) -> np.ndarray:
    try:
        return linalg.cholesky(U, lower=True)
    except linalg.LinAlgError:
        raise NotPositiveDefiniteError(f"order parameter {name} is not positive definite") from None


def logdet_inv(U, name: str):
    """Log-determinant and inverse of a symmetric PD matrix via Cholesky."""
    Lc = _chol(U, name)
    inv, info = lapack.dpotri(Lc, lower=1)
    if info != 0:
        raise NotPositiveDefiniteError(f"order parameter {name} is singular")
    inv = np.tril(inv) + np.tril(inv, -1).T
    return 2.0 * np.log(np.diag(Lc)).sum(), inv


_logdet_inv = logdet_inv
