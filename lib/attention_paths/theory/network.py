"""The Bayesian linear-value multi-head attention network as a torch module (spec T§2.3, T§3-5).

Input projection ``z0 = V0 x / sqrt(N0)``; layers ``z_l = sum_h V^(l,h) z_{l-1} Omega^(l,h)(x) / sqrt(H_l N_l)``
(no residual, no nonlinearity, heads summed); the last layer applies the token readout ``r``;
output ``f = a . z_L / sqrt(N_a)``.  Attention matrices are computed from the raw input ``x``
in every layer and are fixed.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import torch
from torch import nn

from attention_paths.theory.attention import AttentionLayer, as_tensor
from attention_paths.theory.paths import n_paths, path_vectors

__all__ = ["AttentionPathNetwork"]


class AttentionPathNetwork(nn.Module):
    """Deep multi-head attention network with fixed attention and linear values.

    Parameters
    ----------
    layers : sequence of L :class:`~attention_paths.theory.attention.AttentionLayer`
    readout : array, shape [T]; token readout vector ``r``
    widths : sequence of L+1 ints ``(N_1, ..., N_L, N_a)``; ``N_l`` is the input width of layer ``l``
    sigma2 : sequence of L+2 floats ``(sigma_0^2, sigma_1^2, ..., sigma_L^2, sigma_a^2)``, prior variances
    dtype : torch dtype of the weights (float64 by default)

    Attributes
    ----------
    V0 : Parameter [N_1, N0]
    V : ParameterList; ``V[l-1]`` has shape [H_l, N_{l+1}, N_l]
    a : Parameter [N_a]
    """

    def __init__(
        self,
        layers: Sequence[AttentionLayer],
        readout,
        widths: Sequence[int],
        sigma2: Sequence[float] | float = 1.0,
        dtype=torch.float64,
    ):
        super().__init__()
        self.layers = list(layers)
        L = len(self.layers)
        if L < 1:
            raise ValueError("need at least one attention layer")
        self.n0 = self.layers[0].n0
        if any(layer.n0 != self.n0 for layer in self.layers):
            raise ValueError("all attention layers must read inputs of the same width N0")
        self.heads = tuple(layer.n_heads for layer in self.layers)
        widths = tuple(int(n) for n in widths)
        if len(widths) != L + 1 or any(n < 1 for n in widths):
            raise ValueError(f"widths must be L+1={L + 1} positive ints (N_1..N_L, N_a), got {widths}")
        self.widths = widths
        if np.isscalar(sigma2):
            sigma2 = (float(sigma2),) * (L + 2)
        sigma2 = tuple(float(s) for s in sigma2)
        if len(sigma2) != L + 2 or any(s <= 0 for s in sigma2):
            raise ValueError(f"sigma2 must be L+2={L + 2} positive variances (sigma_0..sigma_L, sigma_a), got {sigma2}")
        self.sigma2 = sigma2
        self.register_buffer("readout", as_tensor(readout, dtype))
        self.V0 = nn.Parameter(torch.zeros(widths[0], self.n0, dtype=dtype))
        self.V = nn.ParameterList(
            [nn.Parameter(torch.zeros(H, widths[l + 1], widths[l], dtype=dtype)) for l, H in enumerate(self.heads)]
        )
        self.a = nn.Parameter(torch.zeros(widths[-1], dtype=dtype))

    @property
    def n_paths(self) -> int:
        return n_paths(self.heads)

    @torch.no_grad()
    def sample_prior(self, generator: torch.Generator | None = None) -> "AttentionPathNetwork":
        """Draw every weight from its Gaussian prior (in place); returns self."""
        s = self.sigma2
        self.V0.copy_(math.sqrt(s[0]) * torch.randn(self.V0.shape, generator=generator, dtype=self.V0.dtype))
        for l, V in enumerate(self.V):
            V.copy_(math.sqrt(s[l + 1]) * torch.randn(V.shape, generator=generator, dtype=V.dtype))
        self.a.copy_(math.sqrt(s[-1]) * torch.randn(self.a.shape, generator=generator, dtype=self.a.dtype))
        return self

    def attention(self, x) -> list[torch.Tensor]:
        """Attention matrices of every layer, each [P, H_l, T, T]."""
        return [layer.attention(x) for layer in self.layers]

    def forward(self, x, omegas: Sequence[torch.Tensor] | None = None) -> torch.Tensor:
        """Layer-by-layer forward pass (spec T§2.3).

        Parameters
        ----------
        x : array, shape [P, N0, T]
        omegas : optional precomputed attention matrices (list of [P, H_l, T, T])

        Returns
        -------
        torch.Tensor, shape [P]
        """
        x = as_tensor(x, self.V0.dtype)
        if omegas is None:
            omegas = self.attention(x)
        z = torch.einsum("ki,pit->pkt", self.V0, x) / math.sqrt(self.n0)  # [P, N1, T]
        L = len(self.layers)
        for l in range(L):
            H, N_l = self.heads[l], self.widths[l]
            om = omegas[l]
            if l == L - 1:
                om = torch.einsum("phst,t->phs", om, self.readout)  # Omega r: [P, H, T]
                z = torch.einsum("hjk,pks,phs->pj", self.V[l], z, om)
            else:
                z = torch.einsum("hjk,pks,phst->pjt", self.V[l], z, om)
            z = z / math.sqrt(H * N_l)
        return torch.einsum("j,pj->p", self.a, z) / math.sqrt(self.widths[-1])

    def partial_effective_weights(self) -> list[torch.Tensor]:
        """Stacked partial effective weights ``W_l`` for l = 1..L (spec T§5.1).

        ``W_l`` has shape [D_l, N_l] with rows ``w_l^R`` in flattening order; ``W_1`` has the
        effective path weights ``w^pi`` as rows.
        """
        W = self.a[None, :]  # W_{L+1}: [1, N_a]
        out = []
        for l in reversed(range(len(self.layers))):
            # rows (h, R): w_{l+1}^R V^(l,h) / sqrt(N_{l+1}); head h is the slow index
            W = torch.einsum("rj,hjk->hrk", W, self.V[l]).reshape(-1, self.widths[l]) / math.sqrt(self.widths[l + 1])
            out.append(W)
        return out[::-1]

    def effective_weights(self) -> torch.Tensor:
        """Effective path weights ``w^pi`` as rows, shape [Pi, N_1] (spec T§3.4)."""
        return self.partial_effective_weights()[0]

    def order_parameters(self) -> list[torch.Tensor]:
        """Overlaps ``U_l(Theta) = W_l W_l^T / N_l`` for l = 1..L, followed by the scalar ``U_a = |a|^2/N_a``."""
        Ws = self.partial_effective_weights()
        Us = [W @ W.T / self.widths[l] for l, W in enumerate(Ws)]
        Us.append((self.a @ self.a / self.widths[-1]).reshape(1, 1))
        return Us

    def forward_paths(self, xi) -> torch.Tensor:
        """Output through the path decomposition ``f = sum_pi w^pi V0 xi^pi / sqrt(N0 N1 Pi)`` (spec T§3.5).

        Parameters
        ----------
        xi : array, shape [P, Pi, N0] (from :func:`attention_paths.theory.paths.path_inputs`)

        Returns
        -------
        torch.Tensor, shape [P]
        """
        xi = as_tensor(xi, self.V0.dtype)
        if xi.ndim != 3 or xi.shape[1:] != (self.n_paths, self.n0):
            raise ValueError(f"xi must have shape [P, Pi={self.n_paths}, N0={self.n0}], got {tuple(xi.shape)}")
        wV = self.effective_weights() @ self.V0  # [Pi, N0]
        return torch.einsum("ai,pai->p", wV, xi) / math.sqrt(self.n0 * self.widths[0] * self.n_paths)

    def path_inputs(self, x) -> torch.Tensor:
        """Path-processed inputs of this network's heads and readout, shape [P, Pi, N0]."""
        x = as_tensor(x, self.V0.dtype)
        omega = path_vectors(self.attention(x), self.readout)
        return torch.einsum("pit,pat->pai", x, omega)
