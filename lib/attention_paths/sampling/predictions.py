"""The Rao-Blackwellised sampler's conditional predictions: for every sampled order parameter ``U``, the exact
GP-regression mean and variance at the test inputs given ``U`` (T§13.3).

Two contractions give the same numbers (to rounding), at different costs for ``D`` draws, ``P`` training and
``M`` test inputs, ``N0`` input dimensions and ``Pi`` paths:

* ``"direct"``: per draw, ``k = Xf (Xt U^T)^T``, about ``D (P M N0 Pi + M N0 Pi^2)`` multiply-adds;
* ``"cross-gram"``: once, the test-train path cross-Gram ``C[p, m, pi, pi'] = sum_n X[p, n, pi] Xt[m, n, pi']``
  (``P M N0 Pi^2``), then per draw ``k = C . vec(U)`` (``P M Pi^2``), batched over all draws.

The cross-Gram form is cheaper when a batch has more draws than there are paths (``D > Pi``): the quick omniglot run
(``D = 300``, ``Pi = 16``, ``N0 = 512``) costs about 20x fewer multiply-adds.  Test inputs are processed in
blocks so that no intermediate exceeds ``max_bytes``.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import lapack

__all__ = ["conditional_predictions"]


def conditional_predictions(
    U, X, y, tau: float, Xt, *, kernels=None, mode: str = "auto", max_bytes: float = 256 * 1024**2
) -> tuple[np.ndarray, np.ndarray]:
    """Conditional predictive means and variances at the test inputs for every sampled ``U``.

    Parameters
    ----------
    U : [chains, draws, Pi, Pi] sampled order parameters
    X : [P, N0, Pi] training path features; ``y`` [P] targets; ``tau`` > 0 likelihood variance
    Xt : [M, N0, Pi] test path features
    kernels : optional ``[D, P, P]`` training kernels ``K^U`` of the ``D = chains * draws`` draws (computed here
        when not given)
    mode : ``"auto"`` (cross-Gram when a batch of draws outnumbers the paths), ``"cross-gram"`` or ``"direct"``
    max_bytes : bound on the size of one block's intermediates

    Returns
    -------
    mean, var : [chains, draws, M] each
    """
    U = np.asarray(U, dtype=np.float64)
    X, Xt, y = (np.asarray(a, dtype=np.float64) for a in (X, Xt, y))
    if U.ndim != 4 or U.shape[2:] != (X.shape[2],) * 2:
        raise ValueError(f"U must have shape [chains, draws, {X.shape[2]}, {X.shape[2]}], got {U.shape}")
    P, N0, Pi = X.shape
    M = Xt.shape[0]
    flat = U.reshape(-1, Pi, Pi)
    D = flat.shape[0]
    if mode not in ("auto", "cross-gram", "direct"):
        raise ValueError(f"mode must be 'auto', 'cross-gram' or 'direct', got {mode!r}")
    # the training kernels K^U from the path-Gram tensor G[p, q, pi, pi'] when it fits in a quarter of max_bytes
    gram = _path_gram(X) if kernels is None and 8.0 * P * P * Pi * Pi <= max_bytes / 4 else None
    kdiag = np.einsum("mni,mnj,dij->dm", Xt, Xt, flat, optimize=True)  # k(x, x) = vec(U) . (Xt^T Xt)[m]
    mean, quad = np.empty((D, M)), np.empty((D, M))
    # draws in batches whose inverse P x P factors take at most half of max_bytes, test inputs in blocks for the rest
    db = max(1, min(D, int(max_bytes / 2 // (8.0 * P * P))))
    if mode == "auto":  # the cross-Gram is made once per batch of draws
        mode = "cross-gram" if min(db, D) > Pi else "direct"
    for d0 in range(0, D, db):
        us = flat[d0 : d0 + db]
        K = _train_kernels(X, us, gram) if kernels is None else np.asarray(kernels[d0 : d0 + db], dtype=np.float64)
        Linv = _inverse_cholesky_factors(K + tau * np.eye(P))
        alpha = np.einsum("dqp,dq->dp", Linv, Linv @ y)  # (K^U + tau)^-1 y
        for m0, k in _test_blocks(X, Xt, us, mode, max_bytes / 2):
            sl = slice(m0, m0 + k.shape[2])
            mean[d0 : d0 + len(us), sl] = np.einsum("dpm,dp->dm", k, alpha)
            v = Linv @ k
            quad[d0 : d0 + len(us), sl] = np.einsum("dpm,dpm->dm", v, v)
    var = np.maximum(kdiag - quad, 0.0)
    shape = U.shape[:2] + (M,)
    return mean.reshape(shape), var.reshape(shape)


def _inverse_cholesky_factors(K) -> np.ndarray:
    """``L_d^-1`` for ``K_d = L_d L_d^T`` [D, P, P] (LAPACK potrf and trtri per matrix: numpy's stacked solve
    is several times slower at these sizes)."""
    out = np.empty_like(K)
    for d, Kd in enumerate(K):
        L, info = lapack.dpotrf(Kd, lower=1, clean=1)
        if info == 0:
            L, info = lapack.dtrtri(L, lower=1)
        if info != 0:
            raise np.linalg.LinAlgError(f"K^U + tau I of draw {d} is not positive definite (LAPACK info {info})")
        out[d] = L
    return out


def _path_gram(X) -> np.ndarray:
    """``G[(p, q), (pi, pi')] = sum_n X[p, n, pi] X[q, n, pi']``, [P * P, Pi * Pi]."""
    P, N0, Pi = X.shape
    A = X.transpose(0, 2, 1).reshape(P * Pi, N0)
    return (A @ A.T).reshape(P, Pi, P, Pi).transpose(0, 2, 1, 3).reshape(P * P, Pi * Pi)


def _train_kernels(X, us, gram) -> np.ndarray:
    """``K^U[d, p, q] = sum_{pi pi'} U_d[pi, pi'] G[p, q, pi, pi']`` for the draws ``us`` [D, Pi, Pi]."""
    P, _, Pi = X.shape
    if gram is not None:
        return (gram @ us.reshape(len(us), Pi * Pi).T).T.reshape(len(us), P, P)
    Xf, Xr = X.reshape(P, -1), X.reshape(-1, Pi)
    return np.stack([Xf @ (Xr @ u.T).reshape(P, -1).T for u in us])


def _test_blocks(X, Xt, us, mode: str, max_bytes: float):
    """``(m0, k)`` for blocks of test inputs: ``k[d, p, m] = k^{U_d}(x_p, xt_{m0 + m})`` [draws, P, block]."""
    P, N0, Pi = X.shape
    M, D = Xt.shape[0], us.shape[0]
    per_m = 8.0 * P * (Pi * Pi + 2 * D) if mode == "cross-gram" else 8.0 * P * (N0 * Pi + 2 * D)
    block = max(1, min(M, int(max_bytes // per_m)))
    A = X.transpose(0, 2, 1).reshape(P * Pi, N0)
    for m0 in range(0, M, block):
        xt = Xt[m0 : m0 + block]
        mb = xt.shape[0]
        if mode == "cross-gram":
            C = (A @ xt.transpose(0, 2, 1).reshape(mb * Pi, N0).T).reshape(P, Pi, mb, Pi)
            C = C.transpose(0, 2, 1, 3).reshape(P * mb, Pi * Pi)
            yield m0, (C @ us.reshape(D, Pi * Pi).T).reshape(P, mb, D).transpose(2, 0, 1)
        else:
            xr = xt.reshape(-1, Pi)
            yield m0, np.stack([X.reshape(P, -1) @ (xr @ u.T).reshape(mb, -1).T for u in us])
