"""Fixed softmax attention computed from the raw input (spec T§2.2, T§2.4).

Conventions: an input batch ``x`` has shape ``[P, N0, T]`` (columns are tokens).  A score
matrix ``A[s, t]`` has the **key** ``s`` as row and the **query** ``t`` as column; the softmax
runs over keys, so every column of an attention matrix ``Omega`` sums to one.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from attention_paths.theory.checks import check_tokens

__all__ = ["AttentionLayer", "WFormHeads", "QKFormHeads", "readout_vector", "as_tensor"]


def as_tensor(x, dtype=torch.float64) -> torch.Tensor:
    """Convert array-like input to a torch tensor of ``dtype`` (no copy when possible)."""
    if isinstance(x, torch.Tensor):
        return x.to(dtype)
    return torch.as_tensor(np.asarray(x), dtype=dtype)


class AttentionLayer:
    """The heads of one attention layer; subclasses define :meth:`scores`."""

    n_heads: int
    n0: int

    def scores(self, x) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def attention(self, x) -> torch.Tensor:
        """Attention matrices ``Omega[p, h, s, t]``, softmax over the key index ``s``.

        Parameters
        ----------
        x : array, shape [P, N0, T]

        Returns
        -------
        torch.Tensor, shape [P, H, T, T]; ``Omega[p, h, :, t]`` sums to one.
        """
        return torch.softmax(self.scores(x), dim=-2)


class WFormHeads(AttentionLayer):
    """Bilinear heads ``A_st = x_s^T W x_t`` (no 1/sqrt factor; an inverse temperature is part of W).

    Parameters
    ----------
    W : array, shape [H, N0, N0]
        One matrix per head; the left index contracts with the key, the right with the query.
    """

    def __init__(self, W):
        W = as_tensor(W)
        if W.ndim == 2:
            W = W[None]
        if W.ndim != 3 or W.shape[1] != W.shape[2]:
            raise ValueError(f"W must have shape [H, N0, N0], got {tuple(W.shape)}")
        if not torch.isfinite(W).all():
            raise ValueError("W contains non-finite values")
        self.W = W
        self.n_heads, self.n0 = W.shape[0], W.shape[1]

    def scores(self, x) -> torch.Tensor:
        x = check_tokens(as_tensor(x, self.W.dtype), self.n0)
        Wx = torch.einsum("hij,pjt->phit", self.W, x)  # W x_t for every query t
        return torch.einsum("pis,phit->phst", x, Wx)

    def __repr__(self) -> str:
        return f"WFormHeads(H={self.n_heads}, N0={self.n0})"


class QKFormHeads(AttentionLayer):
    """Query/key heads ``A_st = (K x_s) . (Q x_t) / sqrt(G)``.

    Parameters
    ----------
    Q, K : array, shape [H, G, N0]
    """

    def __init__(self, Q, K):
        Q, K = as_tensor(Q), as_tensor(K)
        if Q.ndim == 2:
            Q, K = Q[None], K[None]
        if Q.ndim != 3 or Q.shape != K.shape:
            raise ValueError(f"Q and K must both have shape [H, G, N0]; got {tuple(Q.shape)} and {tuple(K.shape)}")
        if not (torch.isfinite(Q).all() and torch.isfinite(K).all()):
            raise ValueError("Q or K contains non-finite values")
        self.Q, self.K = Q, K
        self.n_heads, self.G, self.n0 = Q.shape

    def scores(self, x) -> torch.Tensor:
        x = check_tokens(as_tensor(x, self.Q.dtype), self.n0)
        q = torch.einsum("hgi,pit->phgt", self.Q, x)
        k = torch.einsum("hgi,pit->phgt", self.K, x)
        return torch.einsum("phgs,phgt->phst", k, q) / math.sqrt(self.G)

    def __repr__(self) -> str:
        return f"QKFormHeads(H={self.n_heads}, G={self.G}, N0={self.n0})"


def readout_vector(style: str, T: int) -> np.ndarray:
    """Token readout vector ``r`` (spec T§2.4).

    ``'last'`` -> e_T, ``'mean'`` -> 1/T, ``'first'`` -> e_1.  Returns shape [T].
    """
    if T < 1:
        raise ValueError(f"T must be positive, got {T}")
    r = np.zeros(T)
    if style == "last":
        r[-1] = 1.0
    elif style == "first":
        r[0] = 1.0
    elif style == "mean":
        r[:] = 1.0 / T
    else:
        raise ValueError(f"readout style must be 'last', 'mean' or 'first', got {style!r}")
    return r
