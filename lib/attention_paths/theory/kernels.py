"""Path-path kernels and the renormalised kernel (spec T§6, T§11).

All kernels are built from scaled path features ``Xi[p, i, pi]`` of shape [P, N0, Pi]
(:func:`attention_paths.theory.paths.path_features`), for which ``C^{pi pi'}(x_p, x_q) = Xi[p, :, pi] . Xi[q, :, pi']``
and ``K^U(x_p, x_q) = sum_i Xi[p, i, :] U Xi[q, i, :]^T``.
"""

from __future__ import annotations

import numpy as np
import torch

from attention_paths.base import config
from attention_paths.theory.checks import check_features, check_order_parameter

__all__ = ["PathKernel", "gram_tensor", "renormalized_kernel", "gp_kernel", "path_kernel", "available_bytes"]

# The path-Gram tensor is used when it fits in this many bytes and in half the memory available; otherwise the
# low-rank form.
DEFAULT_GRAM_BYTES = 2 * 1024**3


def available_bytes() -> float | None:
    """The memory the system can give without swapping (``MemAvailable`` of ``/proc/meminfo``), or ``None``
    where it cannot be read."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return 1024.0 * float(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def gram_tensor(X) -> np.ndarray:
    """Path-Gram tensor ``C[pi, pi', p, q] = Xi[p, :, pi] . Xi[q, :, pi']`` of features [P, N0, Pi]
    -> [Pi, Pi, P, P]."""
    P, N0, Pi = X.shape
    Xt = np.ascontiguousarray(X.transpose(2, 0, 1)).reshape(Pi * P, N0)
    return np.ascontiguousarray((Xt @ Xt.T).reshape(Pi, P, Pi, P).transpose(0, 2, 1, 3))


def renormalized_kernel(U, Xa, Xb=None) -> np.ndarray:
    """``K^U(x_a, x_b) = sum_{pi,pi'} U_{pi pi'} C^{pi pi'}(x_a, x_b)``, eq. (T6.2).

    Parameters
    ----------
    U : [Pi, Pi]
    Xa : [Pa, N0, Pi] path features
    Xb : [Pb, N0, Pi] path features (default ``Xa``)

    Returns
    -------
    [Pa, Pb] kernel matrix
    """
    Xa = check_features(Xa)
    Xb = Xa if Xb is None else check_features(Xb)
    if Xa.shape[1:] != Xb.shape[1:]:
        raise ValueError(f"feature shapes differ: {Xa.shape} vs {Xb.shape}")
    U = check_order_parameter(U, Xa.shape[2])
    XbU = Xb.reshape(-1, Xb.shape[2]) @ U.T  # rows Xb[q, i, :] U^T
    return Xa.reshape(Xa.shape[0], -1) @ XbU.reshape(Xb.shape[0], -1).T


def path_kernel(X, pi: int, pi2: int | None = None, Xb=None) -> np.ndarray:
    """Single path-path kernel ``C^{pi pi'}`` between two feature sets, [Pa, Pb]."""
    X = check_features(X)
    Xb = X if Xb is None else check_features(Xb)
    pi2 = pi if pi2 is None else pi2
    return X[:, :, pi] @ Xb[:, :, pi2].T


def gp_kernel(Xa, Xb=None, prefactor: float = 1.0) -> np.ndarray:
    """GP kernel ``prefactor * sum_pi C^{pi pi}`` (spec T§11); ``prefactor = sigma_a^2 prod_l sigma_l^2``."""
    Xa = check_features(Xa)
    return renormalized_kernel(prefactor * np.eye(Xa.shape[2]), Xa, Xb)


def _torch_device(device):
    """The torch device of a :class:`PathKernel`, or ``None`` for numpy (see its ``device`` argument)."""
    device = device if device is not None else config.theory_device()
    if device is None or device == "numpy":
        return None
    if device == "auto":
        return torch.device("cuda") if torch.cuda.is_available() else None
    try:
        dev = torch.device(device)
    except RuntimeError as err:
        raise ValueError(f"unknown device {device!r} for the path kernel ({err})") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {device!r} asked for, but torch sees no CUDA GPU")
    return dev


class PathKernel:
    """Training-set path kernels with fast contractions.

    Holds the path features of the training set and either the precomputed path-Gram tensor
    ``C[pi, pi', p, q]`` (``P^2 Pi^2`` floats; fastest when it fits) or only the features
    (low-rank form ``K = Xi (I_N0 x U) Xi^T``; memory ``O(P N0 Pi)``).

    Parameters
    ----------
    features : [P, N0, Pi] scaled path features
    mode : ``'auto'``, ``'gram'`` or ``'lowrank'``
    max_gram_bytes : memory limit for the Gram tensor in ``'auto'`` mode; the packed tensor is also kept
        within half of the memory available when the kernel is made (:func:`available_bytes`).  Both forms give
        the same kernels to rounding (tests); at 64 paths and P = 600 the packed tensor needs 3.0 GB, so
        ``'auto'`` takes the low-rank form there (which also wins for N0 < 8 Pi)
    device : where the low-rank products (the cost that grows as ``P^2 N0 Pi``) run: ``None`` (default)
        numpy on the CPU; ``'auto'`` a CUDA GPU through torch when there is one (else numpy), or any torch
        device such as ``'cuda:0'`` or ``'cpu'``.  Always float64; inputs and results stay numpy arrays.
        Also set by the environment variable ``ATTENTION_PATHS_DEVICE``.
    """

    def __init__(
        self, features, mode: str = "auto", max_gram_bytes: float = DEFAULT_GRAM_BYTES, device: str | None = None
    ):
        self.heads = getattr(features, "heads", None)  # the paths' layout, when the features carry it
        X = check_features(features)
        self.X = np.ascontiguousarray(X)
        self.P, self.N0, self.n_paths = X.shape
        self._Xf = self.X.reshape(self.P, -1)  # [P, N0*Pi], column index i*Pi + pi
        self._Xr = self.X.reshape(-1, self.n_paths)  # [P*N0, Pi]
        gram_bytes = 8.0 * self.P * (self.P + 1) * self.n_paths * (self.n_paths + 1) / 4
        if mode == "auto":
            avail = available_bytes()
            max_gram_bytes = max_gram_bytes if avail is None else min(max_gram_bytes, 0.5 * avail)
            # The Gram contraction costs P^2 Pi^2 against P^2 N0 Pi for the low-rank GEMM; the
            # GEMM runs near peak while the contraction is memory bound, so prefer it unless N0 >> Pi.
            mode = "gram" if (gram_bytes <= max_gram_bytes and self.N0 >= 8 * self.n_paths) else "lowrank"
        if mode not in ("gram", "lowrank"):
            raise ValueError(f"mode must be 'auto', 'gram' or 'lowrank', got {mode!r}")
        self.mode = mode
        self._packed = self._pack_gram() if mode == "gram" else None
        self.device = _torch_device(device) if mode == "lowrank" else None
        if self.device is not None:
            self._Xf_t = torch.as_tensor(self._Xf, dtype=torch.float64, device=self.device)

    def _lowrank_kernel(self, U) -> np.ndarray:
        if self.device is None:
            if np.array_equal(U, U.T):
                try:
                    # U = L L^T: K = B B^T with B = Xi_f (I x L), a small GEMM and half the large one's reads
                    B = (self._Xr @ np.linalg.cholesky(U)).reshape(self.P, -1)
                    return B @ B.T
                except np.linalg.LinAlgError:
                    pass  # not positive definite: the general form
            XU = (self._Xr @ U.T).reshape(self.P, -1)  # Xi[q, i, :] U^T, as one GEMM
            return self._Xf @ XU.T
        Ut = torch.as_tensor(U, dtype=torch.float64, device=self.device)
        XU = (self._Xf_t.reshape(-1, self.n_paths) @ Ut.T).reshape(self.P, -1)
        return (self._Xf_t @ XU.T).cpu().numpy()

    def _lowrank_contract(self, M) -> np.ndarray:
        if self.device is None:
            MX = (M @ self._Xf).reshape(-1, self.n_paths)
            return self._Xr.T @ MX
        Mt = torch.as_tensor(np.ascontiguousarray(M), dtype=torch.float64, device=self.device)
        MX = (Mt @ self._Xf_t).reshape(-1, self.n_paths)
        return (self._Xf_t.reshape(-1, self.n_paths).T @ MX).cpu().numpy()

    def _pack_gram(self) -> np.ndarray:
        """The Gram tensor reduced by its two symmetries, [Pi (Pi + 1) / 2, P (P + 1) / 2].

        Row ``(pi <= pi')`` holds ``S = C^{pi pi'} + C^{pi' pi}`` (``C^{pi pi}`` on the diagonal), a symmetric
        matrix of which only the upper triangle ``p <= q`` is kept: a quarter of the memory traffic of the
        full tensor, which bounds the cost of every kernel evaluation and contraction.
        """
        Pi, P = self.n_paths, self.P
        self._pairs = np.triu_indices(Pi)
        self._tri = np.triu_indices(P)
        packed = np.empty((len(self._pairs[0]), len(self._tri[0])))
        for k, (a, b) in enumerate(zip(*self._pairs, strict=True)):
            C = self.X[:, :, a] @ self.X[:, :, b].T
            packed[k] = (C if a == b else C + C.T)[self._tri]
        return packed

    @property
    def gram(self) -> np.ndarray:
        """Path-Gram tensor ``C[pi, pi', p, q]`` (computed on demand)."""
        return gram_tensor(self.X)

    def kernel(self, U) -> np.ndarray:
        """Training kernel matrix ``K^U``, [P, P]."""
        U = check_order_parameter(U, self.n_paths)
        if self.mode == "gram":
            Us = 0.5 * (U + U.T)  # only the symmetric part contributes
            K = np.empty((self.P, self.P))
            K[self._tri] = Us[self._pairs] @ self._packed
            il = np.tril_indices(self.P, -1)
            K[il] = K.T[il]
            return K
        return self._lowrank_kernel(U)

    def contract(self, M) -> np.ndarray:
        """``G[pi, pi'] = sum_{pq} M_pq C^{pi pi'}_{pq}`` for a symmetric [P, P] matrix ``M`` -> [Pi, Pi]."""
        if self.mode == "gram":
            Ms = 0.5 * (M + M.T)
            m = 2.0 * Ms[self._tri]
            m[self._tri[0] == self._tri[1]] *= 0.5  # off-diagonal (p, q) entries stand for (q, p) too
            g = self._packed @ m
            G = np.zeros((self.n_paths, self.n_paths))
            G[self._pairs] = g
            off = self._pairs[0] != self._pairs[1]
            G[self._pairs[0][off], self._pairs[1][off]] *= 0.5  # rows pi < pi' hold C^{pi pi'} + C^{pi' pi}
            return np.triu(G) + np.triu(G, 1).T
        return self._lowrank_contract(M)

    def feature_gram(self, M) -> np.ndarray:
        """``Q = Xi_f^T M Xi_f`` reshaped to [N0, Pi, N0, Pi] (used by the energy Hessian)."""
        Q = self._Xf.T @ (M @ self._Xf)
        return Q.reshape(self.N0, self.n_paths, self.N0, self.n_paths)

    def feature_gram_rows(self, MX, i0: int, i1: int) -> np.ndarray:
        """Rows ``i0 <= i < i1`` of :meth:`feature_gram`, ``Q[i, b, j, c]`` [i1 - i0, Pi, N0, Pi], from
        ``MX = M @ Xi_f`` [P, N0 Pi] (``Xi_f = features.reshape(P, -1)``, column ``i Pi + pi``)."""
        return (self._Xf[:, i0 * self.n_paths : i1 * self.n_paths].T @ MX).reshape(i1 - i0, self.n_paths, self.N0, -1)

    def times_features(self, M) -> np.ndarray:
        """``M @ Xi_f`` [P, N0 Pi] for a [P, P] matrix ``M`` (the right factor of :meth:`feature_gram_rows`)."""
        return M @ self._Xf

    def project(self, v) -> np.ndarray:
        """``g[i, pi] = sum_p Xi[p, i, pi] v_p`` -> [N0, Pi]."""
        return (self._Xf.T @ v).reshape(self.N0, self.n_paths)
