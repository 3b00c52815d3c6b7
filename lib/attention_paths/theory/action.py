"""The action ``S = S_ent + S_E`` over the nested order parameters and its derivatives (spec T§7-9).

``S`` is ``-2 ln p(U_1, ..., U_L, U_a | D)`` at leading order in the width (no factors 1/2).  The
readout overlap ``U_a`` is eliminated in closed form (T§9.1); by the envelope theorem the gradient
of the reduced action with respect to ``U_l`` is the partial derivative at fixed ``U_a``.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from scipy import linalg
from scipy.linalg import lapack

from attention_paths.theory.architecture import Architecture
from attention_paths.theory.checks import check_kernel_finite, check_order_parameter, check_targets, check_tau
from attention_paths.theory.hessian import action_hessian
from attention_paths.theory.kernels import PathKernel
from attention_paths.theory.matrices import (
    NotPositiveDefiniteError,
    _logdet_inv,
    closed_form_ua,
    partial_trace,
)

__all__ = ["Action", "Packing", "partial_trace", "closed_form_ua", "NotPositiveDefiniteError", "DEFAULT_HESSIAN_BYTES"]


# The temporaries of one block of the energy Hessian stay below this many bytes (Action.energy_hessian).
DEFAULT_HESSIAN_BYTES = 256 * 1024**2


class Packing:
    """Packed upper-triangular coordinates of the symmetric order parameters ``U_1..U_L``.

    A packed coordinate ``u_k`` of block ``l`` stands for both ``U_l[a, b]`` and ``U_l[b, a]``.
    """

    def __init__(self, dims: Sequence[int]):
        self.dims = tuple(int(d) for d in dims)
        self.triu = [np.triu_indices(d) for d in self.dims]
        self.sizes = [d * (d + 1) // 2 for d in self.dims]
        self.offsets = np.concatenate([[0], np.cumsum(self.sizes)]).astype(int)
        self.n = int(self.offsets[-1])
        # E_l maps packed coordinates of block l to flattened D x D matrices.
        self.E = []
        for d, (ia, ib) in zip(self.dims, self.triu, strict=True):
            E = np.zeros((d * d, len(ia)))
            E[ia * d + ib, np.arange(len(ia))] = 1.0
            E[ib * d + ia, np.arange(len(ia))] = 1.0
            self.E.append(E)

    def pack(self, Us) -> np.ndarray:
        return np.concatenate([U[idx] for U, idx in zip(Us, self.triu, strict=True)])

    def unpack(self, v) -> list[np.ndarray]:
        out = []
        for l, (d, (ia, ib)) in enumerate(zip(self.dims, self.triu, strict=True)):
            U = np.zeros((d, d))
            U[ia, ib] = v[self.offsets[l] : self.offsets[l + 1]]
            U[ib, ia] = U[ia, ib]
            out.append(U)
        return out

    def fold(self, M, l: int = 0) -> np.ndarray:
        """``E_l^T M E_l`` for a [D^2, D^2] matrix ``M`` over the entries of ``U_l`` (a second derivative with
        entries independent) -> over block ``l``'s packed coordinates, by indexing: the dense ``E_l`` products
        cost ``D^6`` (35 GFlop at 64 paths)."""
        d, (ia, ib) = self.dims[l], self.triu[l]
        r1, r2 = ia * d + ib, ib * d + ia
        off = r1 != r2  # an off-diagonal coordinate stands for (a, b) and (b, a)
        R = M[r1] + M[r2] * off[:, None]
        return R[:, r1] + R[:, r2] * off[None, :]

    def pack_block(self, G, l: int = 0) -> np.ndarray:
        """``E_l^T vec(G)`` for a symmetric [D_l, D_l] gradient ``G`` of block ``l``, by indexing: an
        off-diagonal coordinate stands for ``G_ab`` and ``G_ba``."""
        ia, ib = self.triu[l]
        return G[ia, ib] + G[ib, ia] * (ia != ib)

    def pack_gradient(self, Gs) -> np.ndarray:
        """Derivative with respect to the packed coordinates from symmetric matrix gradients."""
        return np.concatenate([self.pack_block(G, l) for l, G in enumerate(Gs)])


class Action:
    """Finite-width action of a training set (spec T§7) with its gradients (T§8) and Hessian.

    Parameters
    ----------
    kernel : :class:`~attention_paths.theory.kernels.PathKernel` of the P training inputs
    y : [P] training targets (labels +-1)
    tau : temperature (variance of the Gaussian likelihood), > 0
    arch : :class:`~attention_paths.theory.architecture.Architecture`; ``arch.n_paths`` must equal the kernel's
    max_bytes : memory the Hessian's temporaries may take (:meth:`energy_hessian`; default
        :data:`DEFAULT_HESSIAN_BYTES`); the gradient's memory is the kernel's (``PathKernel(max_gram_bytes=...)``)
    """

    def __init__(self, kernel: PathKernel, y, tau: float, arch: Architecture, max_bytes: float | None = None):
        if not isinstance(kernel, PathKernel):
            kernel = PathKernel(kernel)
        y = check_targets(y, kernel.P)
        tau = check_tau(tau)
        if not isinstance(arch, Architecture):
            raise TypeError(
                f"arch must be an attention_paths.Architecture (e.g. Architecture.uniform(heads, N)), "
                f"got {type(arch).__name__} {arch!r}"
            )
        if arch.n_paths != kernel.n_paths:
            raise ValueError(f"architecture has {arch.n_paths} paths but the kernel has {kernel.n_paths}")
        if getattr(kernel, "heads", None) is not None and tuple(kernel.heads) != arch.heads:
            raise ValueError(
                f"the features' paths have heads per layer {tuple(kernel.heads)}, the architecture {arch.heads}: "
                "the same number of paths in another layout; use Architecture.uniform"
                f"({tuple(kernel.heads)}, N)"
            )
        self.kernel, self.y, self.tau, self.arch = kernel, y, tau, arch
        self.max_bytes = max_bytes
        self.packing = Packing(arch.dims)

    # ----------------------------------------------------------------------------- helpers
    def check(self, Us) -> list[np.ndarray]:
        """Validate a list ``[U_1, ..., U_L]`` of symmetric matrices of the right sizes."""
        if len(Us) != self.arch.n_layers:
            raise ValueError(f"expected {self.arch.n_layers} order parameters U_1..U_L, got {len(Us)}")
        out = []
        for l, (U, D) in enumerate(zip(Us, self.arch.dims, strict=True)):
            U = check_order_parameter(U, D, f"U_{l + 1}")
            if not np.allclose(U, U.T, rtol=1e-10, atol=1e-12 * max(1.0, np.abs(U).max())):
                raise ValueError(f"U_{l + 1} is not symmetric")
            out.append(0.5 * (U + U.T))
        return out

    def ua(self, U_L) -> float:
        """Closed-form readout overlap ``U_a(U_L)`` (spec T§9.1)."""
        a = self.arch
        return closed_form_ua(np.trace(U_L), a.heads[-1], a.widths[-2], a.widths[-1], a.sigma2[-2], a.sigma2[-1])

    # ----------------------------------------------------------------------------- energy
    def energy(self, U1, grad: bool = True):
        """``S_E = ln det(K + tau I) + Y^T (K + tau I)^{-1} Y`` and ``G = dS_E/dU_1`` (spec T§7.1, T§8).

        Returns ``(S_E, G)`` with ``G`` of shape [Pi, Pi] (``None`` if ``grad`` is False).
        """
        K = self.kernel.kernel(U1)
        if not np.isfinite(K).all():
            check_kernel_finite(K, self.kernel.X, U1)
        K[np.diag_indices_from(K)] += self.tau
        try:
            c = linalg.cho_factor(K, lower=True, check_finite=False)
        except linalg.LinAlgError:
            raise NotPositiveDefiniteError(
                "K^U + tau I is not positive definite (is U positive semidefinite?)"
            ) from None
        beta = linalg.cho_solve(c, self.y, check_finite=False)
        value = 2.0 * np.log(np.diag(c[0])).sum() + self.y @ beta
        if not grad:
            return value, None
        A = self._inverse(c)
        G = self.kernel.contract(A - np.outer(beta, beta))
        return value, 0.5 * (G + G.T)

    @staticmethod
    def _inverse(c) -> np.ndarray:
        inv, info = lapack.dpotri(c[0], lower=1)
        if info != 0:
            raise NotPositiveDefiniteError("K^U + tau I is singular")
        return np.tril(inv) + np.tril(inv, -1).T

    def energy_hessian(self, U1, max_bytes: float | None = None) -> np.ndarray:
        """Second derivative ``d^2 S_E / dU_ab dU_cd`` as a [Pi, Pi, Pi, Pi] array (entries independent).

        ``H_abcd = -Tr(A C^cd A C^ab) + beta^T C^cd A C^ab beta + beta^T C^ab A C^cd beta``.

        Both sums run over the feature pairs ``(i, j)`` through ``Q[i, b, j, c] = (X_b^T A X_c)_ij``, which has
        ``(N0 Pi)^2`` entries (1.2 GB at 64 paths and N0 = 192, and the GEMM needs a transposed copy); they
        are accumulated over blocks of ``i`` whose temporaries stay within ``max_bytes`` (default: the
        action's ``max_bytes``, else :data:`DEFAULT_HESSIAN_BYTES`).  Only the block sizes change the result,
        by the rounding of a sum in another order.
        """
        K = self.kernel.kernel(U1)
        K[np.diag_indices_from(K)] += self.tau
        c = linalg.cho_factor(K, lower=True, check_finite=False)
        beta = linalg.cho_solve(c, self.y, check_finite=False)
        A = self._inverse(c)
        g = self.kernel.project(beta)  # g[i, a] = (X_a^T beta)_i
        N0, Pi = g.shape
        AX = self.kernel.times_features(A)  # [P, N0 Pi]
        limit = self.max_bytes if max_bytes is None else max_bytes
        per_i = 8.0 * (2 * Pi * N0 * Pi + Pi**3)  # one i of Q, its transposed copy, and of W below
        step = int(max(1, min(N0, (limit if limit is not None else DEFAULT_HESSIAN_BYTES) // per_i)))
        T1 = np.zeros((Pi * Pi, Pi * Pi))
        T3 = np.zeros((Pi, Pi, Pi, Pi))
        for i0 in range(0, N0, step):
            i1 = min(N0, i0 + step)
            Q = self.kernel.feature_gram_rows(AX, i0, i1)  # Q[i, b, j, c], i in the block
            # -Tr(A C^cd A C^ab) = -sum_ij Q[i,b,j,c] Q[i,a,j,d]: a symmetric GEMM over (i, j) per block
            M1 = np.ascontiguousarray(Q.transpose(1, 3, 0, 2)).reshape(Pi * Pi, -1)
            T1 += M1 @ M1.T
            del M1
            # beta^T C^ab A C^cd beta = sum_ij g[i,a] Q[i,b,j,c] g[j,d]; the other term is its (cd, ab) transpose
            W = np.tensordot(Q, g, axes=([2], [0]))  # W[i, b, c, d]
            T3 += np.tensordot(g[i0:i1], W, axes=([0], [0]))
            del Q, W
        T1 = T1.reshape(Pi, Pi, Pi, Pi).transpose(2, 0, 1, 3)  # [b,c,a,d] -> [a,b,c,d]
        return -T1 + T3 + T3.transpose(2, 3, 0, 1)

    # ----------------------------------------------------------------------------- entropy
    def entropy(self, Us, grad: bool = True):
        """Entropic part ``S_ent`` at the closed-form ``U_a`` and its gradients (spec T§7.1, T§8).

        Returns ``(S_ent, [dS/dU_1, ..., dS/dU_L], U_a)``.
        """
        a = self.arch
        L = a.n_layers
        Ua = self.ua(Us[-1])
        Na, s2a = a.widths[-1], a.sigma2[-1]
        value = Na * (Ua / s2a - np.log(Ua))
        logdets, invs = [], []
        for l, U in enumerate(Us):
            ld, inv = _logdet_inv(U, f"U_{l + 1}")
            logdets.append(ld)
            invs.append(inv)
        logdets.append(np.log(Ua))
        invs.append(np.array([[1.0 / Ua]]))
        traces = [partial_trace(U, H) for U, H in zip(Us, a.heads, strict=True)]
        for l in range(L):
            N, s2, H = a.widths[l], a.sigma2[l], a.heads[l]
            value += N * (np.sum(invs[l + 1] * traces[l]) / s2 - logdets[l] + H * logdets[l + 1])
        if not grad:
            return value, None, Ua
        grads = []
        for l in range(L):
            N, s2, H = a.widths[l], a.sigma2[l], a.heads[l]
            g = N * (np.kron(np.eye(H), invs[l + 1]) / s2 - invs[l])
            if l > 0:
                Np, s2p, Hp = a.widths[l - 1], a.sigma2[l - 1], a.heads[l - 1]
                g += Np * (-invs[l] @ traces[l - 1] @ invs[l] / s2p + Hp * invs[l])
            grads.append(0.5 * (g + g.T))
        return value, grads, Ua

    # ----------------------------------------------------------------------------- total
    def value(self, Us) -> float:
        """Reduced action ``S(U_1, ..., U_L)`` with ``U_a`` eliminated."""
        Us = self.check(Us)
        s_ent, _, _ = self.entropy(Us, grad=False)
        s_e, _ = self.energy(Us[0], grad=False)
        return s_ent + s_e

    def value_and_gradient(self, Us, checked: bool = False):
        """``(S, [dS/dU_1, ..., dS/dU_L])``; gradients are symmetric matrices (entries treated as independent)."""
        if not checked:
            Us = self.check(Us)
        s_ent, g_ent, _ = self.entropy(Us)
        s_e, G = self.energy(Us[0])
        g_ent[0] = g_ent[0] + G
        return s_ent + s_e, g_ent

    def gradient(self, Us) -> list[np.ndarray]:
        return self.value_and_gradient(Us)[1]

    def hessian(self, Us, step: float = 1e-5, max_bytes: float | None = None, method: str = "analytic") -> np.ndarray:
        """Hessian of the reduced action in packed coordinates, [n, n] (``n`` = number of unknowns).

        ``method="analytic"`` (default): both parts in closed form
        (:func:`attention_paths.theory.hessian.action_hessian`).
        ``method="reference"``: the form before issue 48, kept to check it: the energy block from the
        4-index formula (:meth:`energy_hessian`, its memory bounded by ``max_bytes``), the entropy part (with
        ``U_a`` re-solved inside) by central differences of its analytic gradient, accurate to about ``step^2``.
        """
        Us = self.check(Us)
        if method == "analytic":
            return action_hessian(self, Us)
        if method != "reference":
            raise ValueError(f"method must be 'analytic' or 'reference', got {method!r}")
        pk = self.packing
        u0 = pk.pack(Us)
        H = np.zeros((pk.n, pk.n))
        for k in range(pk.n):
            h = step * max(1.0, abs(u0[k]))
            up, um = u0.copy(), u0.copy()
            up[k] += h
            um[k] -= h
            gp = pk.pack_gradient(self.entropy(pk.unpack(up))[1])
            gm = pk.pack_gradient(self.entropy(pk.unpack(um))[1])
            H[:, k] = (gp - gm) / (2 * h)
        n1 = pk.sizes[0]
        D = self.arch.dims[0]
        H[:n1, :n1] += pk.fold(self.energy_hessian(Us[0], max_bytes).reshape(D * D, D * D), 0)
        return 0.5 * (H + H.T)
