"""The Hessian of the reduced action in packed coordinates, analytic in both parts (spec T§7-9, T§12.2).

The solver needs it twice: as the metric of its quasi-Newton steps and as the stability certificate of the
point it returns (positive definite on symmetric directions).  Both parts are closed forms:

* the **entropy** part (:func:`entropy_hessian`): ``-ln det U``, ``ln det U``, ``Tr(U_{l+1}^{-1} Tr_h U_l)``
  and the readout overlap ``U_a`` eliminated through its own stationarity (a Schur complement, T§9.1);
* the **energy** part (:func:`energy_hessian_packed`):
  ``H_abcd = -Tr(A C^cd A C^ab) + beta^T C^ab A C^cd beta + beta^T C^cd A C^ab beta``.  With
  ``Z_a = L^{-1} X_a`` (``K + tau I = L L^T``, ``X_a`` the [P, N0] features of path ``a``) the first term is
  ``<Q_bc, Q_ad>`` over the [N0, N0] blocks ``Q_bc = Z_b^T Z_c``; since ``Q_cb = Q_bc^T`` it splits into the
  Gram matrices of the blocks' symmetric and antisymmetric parts, one per unordered pair of paths, which is a
  quarter of the products of the 4-index form (:meth:`Action.energy_hessian`, kept as the reference).

Cost at ``Pi`` paths, ``N0`` features and ``P`` inputs: ``P N0^2 Pi^2 / 2`` for the blocks plus
``Pi^4 N0^2 / 8`` for the two Gram matrices, against ``Pi^4 N0^2`` (and a ``(N0 Pi)^2`` temporary with its
transposed copy) for the reference form; memory ``Pi^2 N0^2 / 2`` floats (0.6 GB at 64 paths, N0 = 192).
"""

from __future__ import annotations

import numpy as np
from scipy import linalg
from scipy.linalg import blas

from attention_paths.base.threads import blas_threads_for_work
from attention_paths.theory.matrices import NotPositiveDefiniteError, logdet_inv, partial_trace

__all__ = ["entropy_hessian", "energy_hessian_packed", "energy_hessian_fit", "action_hessian"]


def _fold_kron(pk, l: int, X, Y) -> np.ndarray:
    """Packed fold of the entry Hessian ``h[(a,b),(c,d)] = X_bc Y_da`` over block ``l`` for symmetric ``X``, ``Y``,
    without forming it: the sum over the orientations ``(a,b), (b,a)`` of the row and ``(c,d), (d,c)`` of the
    column, ``X_bc Y_ad + w_c X_bd Y_ac + w_r X_ac Y_bd + w_r w_c X_ad Y_bc`` (``w = 0`` on the diagonal)."""
    a, b = pk.triu[l]
    w = (a != b).astype(float)

    def g(M, r, c):  # M[r_k, c_m] over all (k, m): a row gather, then a column gather
        return np.take(np.take(M, r, axis=0), c, axis=1)

    if X is Y:  # the four orientations pair up: half the gathers and products
        out = g(X, b, a) * g(X, a, b)
        out *= 1.0 + np.outer(w, w)
        out += (g(X, a, a) * g(X, b, b)) * np.add.outer(w, w)
        return out
    out = g(X, b, a) * g(Y, a, b)
    out += (g(X, b, b) * g(Y, a, a)) * w[None, :]
    out += (g(X, a, a) * g(Y, b, b)) * w[:, None]
    out += (g(X, a, b) * g(Y, b, a)) * np.outer(w, w)
    return out


def _fold_cross(pk, l: int, H: int, V) -> np.ndarray:
    """Packed fold of ``h[(h r, h' r'), (a, b)] = -delta_hh' V_br V_r'a`` between block ``l - 1`` (rows, entries
    ``(h r)`` with ``H`` heads) and block ``l`` (columns, ``V`` of size ``D_l``)."""
    D = V.shape[0]
    x, y = pk.triu[l - 1]
    hx, rx, hy, ry = x // D, x % D, y // D, y % D
    same = (hx == hy).astype(float)[:, None]
    wr = (x != y).astype(float)[:, None]
    a, b = pk.triu[l]
    wc = (a != b).astype(float)[None, :]
    A, B = a[None, :], b[None, :]
    RX, RY = rx[:, None], ry[:, None]

    def one(r, s):  # the row orientation (h r), (h s): -V_br V_sa summed over the column's orientations
        return V[B, r] * V[s, A] + wc * V[A, r] * V[s, B]

    return -same * (one(RX, RY) + wr * one(RY, RX))


def entropy_hessian(action, Us) -> np.ndarray:
    """Hessian of ``S_ent`` with ``U_a`` eliminated, in the packed coordinates of ``action.packing``, [n, n].

    Exact (no differences).  For ``V = U_l^{-1}`` the entry Hessians are ``V_bc V_da`` for ``-ln det U_l``,
    ``V_bc (V T V)_da + (V T V)_bc V_da`` for ``Tr(V T)`` in ``U_l`` (``T = Tr_h U_{l-1}``) and
    ``-delta_{hh'} V_br V_r'a`` across ``U_l`` and ``U_{l-1}[(h r), (h' r')]``; the closed-form ``U_a``
    contributes the Schur complement ``-(N_L / (sigma_L^2 U_a^2))^2 / S_{U_a U_a}`` on ``Tr U_L``.
    """
    a, pk = action.arch, action.packing
    L = a.n_layers
    Ua = action.ua(Us[-1])
    invs = [logdet_inv(U, f"U_{l + 1}")[1] for l, U in enumerate(Us)]
    Hp = np.zeros((pk.n, pk.n))
    sl = [slice(pk.offsets[l], pk.offsets[l + 1]) for l in range(L)]
    for l in range(L):
        V = invs[l]
        coef = a.widths[l]  # -N_l ln det U_l
        if l > 0:
            Np, s2p, Hh = a.widths[l - 1], a.sigma2[l - 1], a.heads[l - 1]
            coef -= Np * Hh  # + N_{l-1} H_{l-1} ln det U_l
            T = partial_trace(Us[l - 1], Hh)
            VTV = V @ T @ V
            block = (Np / s2p) * (_fold_kron(pk, l, V, VTV) + _fold_kron(pk, l, VTV, V))
            C = (Np / s2p) * _fold_cross(pk, l, Hh, V)
            Hp[sl[l - 1], sl[l]] += C
            Hp[sl[l], sl[l - 1]] += C.T
            Hp[sl[l], sl[l]] += block
        Hp[sl[l], sl[l]] += coef * _fold_kron(pk, l, V, V)
    # U_a eliminated: Schur complement on the trace of U_L
    NL, s2L, HL, Na = a.widths[L - 1], a.sigma2[L - 1], a.heads[L - 1], a.widths[L]
    s = float(np.trace(Us[-1]))
    f_aa = Na / Ua**2 + 2.0 * NL * s / (s2L * Ua**3) - NL * HL / Ua**2
    f_la = -NL / (s2L * Ua**2)
    ia, ib = pk.triu[L - 1]
    t = np.zeros(pk.sizes[L - 1])
    t[ia == ib] = 1.0  # d Tr U_L / d u_k
    Hp[sl[L - 1], sl[L - 1]] -= (f_la**2 / f_aa) * np.outer(t, t)
    return 0.5 * (Hp + Hp.T)


def _pair_index(Pi: int) -> np.ndarray:
    """``idx[b, c]``: position of the unordered pair ``{b, c}`` in ``np.triu_indices(Pi)`` order."""
    ib, ic = np.triu_indices(Pi)
    idx = np.empty((Pi, Pi), dtype=np.int64)
    idx[ib, ic] = np.arange(len(ib))
    idx[ic, ib] = idx[ib, ic]
    return idx


def _strict_pair_index(Pi: int) -> np.ndarray:
    """``idx[b, c]`` of the pair ``b < c`` (or ``c < b``) in ``np.triu_indices(Pi, 1)`` order; 0 on the diagonal."""
    ib, ic = np.triu_indices(Pi, 1)
    idx = np.zeros((Pi, Pi), dtype=np.int64)
    idx[ib, ic] = np.arange(len(ib))
    idx[ic, ib] = idx[ib, ic]
    return idx


def _gram(M) -> np.ndarray:
    """``M M^T`` through one symmetric rank-k update (half the products of a GEMM)."""
    if M.shape[0] == 0:
        return np.zeros((0, 0))
    G = blas.dsyrk(1.0, M.T, trans=1, lower=0)  # upper triangle of M M^T (M.T is Fortran-ordered: no copy)
    d = np.diag(G).copy()
    G += G.T  # the strict lower triangle of dsyrk's output is zero
    G[np.diag_indices_from(G)] = d
    return G


def energy_hessian_packed(action, U1) -> np.ndarray:
    """``d^2 S_E / du_k du_m`` in the packed coordinates of ``U_1``, [Pi (Pi + 1) / 2, Pi (Pi + 1) / 2].

    Equal to ``action.packing.fold(action.energy_hessian(U1))`` (the 4-index reference) to rounding; see the
    module docstring for the method.  Runs on every core when its products are large
    (:func:`~attention_paths.base.threads.blas_threads_for_work`).
    """
    k = action.kernel
    macs = k.P * k.N0**2 * k.n_paths**2 / 2 + k.n_paths**4 * k.N0**2 / 8
    with blas_threads_for_work(macs):
        return _energy_hessian_packed(action, U1)


def _factor(action, U1):
    """The Cholesky factor ``L`` of ``K^U + tau I`` (lower) and ``beta = (K^U + tau I)^{-1} Y``."""
    K = action.kernel.kernel(U1)
    K[np.diag_indices_from(K)] += action.tau
    try:
        Lc = linalg.cholesky(K, lower=True, check_finite=False)
    except linalg.LinAlgError:
        raise NotPositiveDefiniteError("K^U + tau I is not positive definite (is U positive semidefinite?)") from None
    return Lc, linalg.cho_solve((Lc, True), action.y, check_finite=False)


def _fit_fold(Y) -> np.ndarray:
    """``F + F^T`` folded to packed coordinates from ``Y[p, c, d] = (L^{-1} X_c X_d^T beta)_p`` [P, Pi, Pi]:
    ``F[(a,b),(c,d)] = beta^T C^ab A C^cd beta = <Y[:, b, a], Y[:, c, d]>`` summed over the orientations of
    ``(a <= b)`` and ``(c <= d)`` at the level of ``Y`` (``F = Yr^T Yc``)."""
    Pi = Y.shape[1]
    pa, pb = np.triu_indices(Pi)
    w_r = (pa != pb).astype(float)
    Yr = Y[:, pb, pa] + w_r * Y[:, pa, pb]
    Yc = Y[:, pa, pb] + w_r * Y[:, pb, pa]
    F = Yr.T @ Yc
    return F + F.T


def energy_hessian_fit(action, U1) -> np.ndarray:
    """The data-fit part of :func:`energy_hessian_packed`: the curvature of ``Y^T (K^U + tau I)^{-1} Y``,
    ``beta^T C^ab A C^cd beta + beta^T C^cd A C^ab beta`` in packed coordinates [n_1, n_1].

    Positive semidefinite (it is ``2 J^T A J`` with ``J = dK beta``) and cheap: ``O(P N0 Pi^2 + P^2 Pi^2)``,
    one evaluation's cost, against the ``Pi^4 N0^2`` of the full energy Hessian, whose other part
    ``-Tr(A C^cd A C^ab)`` (the log-determinant's, negative semidefinite) it leaves out.  The solver starts its
    model of the energy's curvature from it when no neighbouring solve hands one on.
    """
    kernel = action.kernel
    P, Pi = kernel.P, kernel.n_paths
    Lc, beta = _factor(action, U1)
    g = kernel.project(beta)  # [N0, Pi]
    W = np.matmul(kernel.X.transpose(0, 2, 1), g)  # W[p, c, d] = (X_c g_d)_p, g_d = X_d^T beta
    Y = linalg.solve_triangular(Lc, W.reshape(P, Pi * Pi), lower=True, check_finite=False)
    return _fit_fold(Y.reshape(P, Pi, Pi))


def _energy_hessian_packed(action, U1) -> np.ndarray:
    kernel = action.kernel
    P, N0, Pi = kernel.P, kernel.N0, kernel.n_paths
    Lc, beta = _factor(action, U1)
    # Z[p, a, i] = (L^{-1} X_a)[p, i], path-major so that each path's block is contiguous
    Xp = np.ascontiguousarray(kernel.X.transpose(0, 2, 1)).reshape(P, Pi * N0)
    Z = linalg.solve_triangular(Lc, Xp, lower=True, check_finite=False)
    g = (Xp.T @ beta).reshape(Pi, N0)  # g[a] = X_a^T beta
    F = _fit_fold(Z.reshape(P, Pi, N0) @ g.T)  # Y[p, c, d] = (Z_c g_d)_p
    pa, pb = np.triu_indices(Pi)
    w_r = (pa != pb).astype(float)
    # the [N0, N0] blocks' symmetric and antisymmetric parts, packed so that <S, S'> and <A, A'> are dot products
    iu, ju = np.triu_indices(N0)
    is_, js_ = np.triu_indices(N0, 1)
    up, low = iu * N0 + ju, ju * N0 + iu
    sup, slow = is_ * N0 + js_, js_ * N0 + is_
    w_sym = np.where(iu == ju, 0.5, np.sqrt(0.5))  # (Q + Q^T) / 2 on the diagonal, times sqrt 2 off it
    pair, spair = _pair_index(Pi), _strict_pair_index(Pi)
    n_pairs, n_strict = Pi * (Pi + 1) // 2, Pi * (Pi - 1) // 2
    Sp = np.empty((n_pairs, len(iu)))
    Ap = np.empty((n_strict, len(is_)))
    for b in range(Pi):
        Zb = Z[:, b * N0 : (b + 1) * N0]
        Q = (Zb.T @ Z[:, b * N0 :]).reshape(N0, Pi - b, N0).transpose(1, 0, 2)  # Q[c - b] = Q_bc, c >= b
        Qf = np.ascontiguousarray(Q).reshape(Pi - b, N0 * N0)
        Sp[pair[b, b:]] = (np.take(Qf, up, axis=1) + np.take(Qf, low, axis=1)) * w_sym
        if b + 1 < Pi:
            Ap[spair[b, b + 1 :]] = (np.take(Qf[1:], sup, axis=1) - np.take(Qf[1:], slow, axis=1)) * np.sqrt(0.5)
        del Q, Qf
    del Z, Xp
    SS, AA = _gram(Sp), _gram(Ap)
    del Sp, Ap
    # T1[a, b, c, d] = <Q_bc, Q_ad> = SS[{b,c},{a,d}] + sgn(b,c) sgn(a,d) AA[{b,c},{a,d}], folded over the two
    # orientations of the row coordinate (a <= b) and of the column one (c <= d).  SS and AA are symmetric, so
    # of the four orientations (a,b,c,d) and (b,a,d,c) give one term, (a,b,d,c) and (b,a,c,d) the other.
    sgn = -np.sign(np.subtract.outer(np.arange(Pi), np.arange(Pi)))  # +1 if b < c, -1 if b > c, 0 if equal

    def term(SS, AA, x, y, u, v):  # <Q_xu, Q_yv> over rows (x, y) and columns (u, v) of the packed coordinates
        i, j = pair[x[:, None], u[None, :]], pair[y[:, None], v[None, :]]
        t = SS.ravel()[i * n_pairs + j]
        s = sgn[x[:, None], u[None, :]] * sgn[y[:, None], v[None, :]]
        if n_strict:
            k, m = spair[x[:, None], u[None, :]], spair[y[:, None], v[None, :]]
            t += s * AA.ravel()[k * n_strict + m]
        return t

    one = term(SS, AA, pb, pa, pa, pb)  # (a, b, c, d): <Q_bc, Q_ad>
    two = term(SS, AA, pb, pa, pb, pa)  # (a, b, d, c): <Q_bd, Q_ac>
    T1 = one * (1.0 + np.outer(w_r, w_r)) + two * np.add.outer(w_r, w_r)
    del one, two, SS, AA
    return F - T1


def action_hessian(action, Us) -> np.ndarray:
    """Hessian of the reduced action (``U_a`` eliminated) in packed coordinates, [n, n]: the sum of
    :func:`entropy_hessian` and :func:`energy_hessian_packed` on the ``U_1`` block."""
    H = entropy_hessian(action, Us)
    n1 = action.packing.sizes[0]
    H[:n1, :n1] += energy_hessian_packed(action, Us[0])
    return 0.5 * (H + H.T)
