"""Shape and prior of the theory's network: heads, widths and prior variances (spec T§1, T§5, T§11)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np

__all__ = ["Architecture"]


@dataclass(frozen=True)
class Architecture:
    """Heads per layer, hidden widths and value/readout prior variances.

    Parameters
    ----------
    heads : ``(H_1, ..., H_L)``
    widths : ``(N_1, ..., N_L, N_a)``; ``N_l`` is the input width of attention layer ``l``
    sigma2 : ``(sigma_1^2, ..., sigma_L^2, sigma_a^2)``; the input-projection variance
        ``sigma_0^2`` enters the path kernels instead (:func:`attention_paths.theory.paths.path_features`).
    """

    heads: tuple[int, ...]
    widths: tuple[int, ...]
    sigma2: tuple[float, ...]

    def __post_init__(self):
        for name in ("heads", "widths", "sigma2"):
            if isinstance(getattr(self, name), (str, bytes)) or not hasattr(getattr(self, name), "__len__"):
                raise ValueError(f"{name} must be a sequence with one entry per layer, got {getattr(self, name)!r}")
        if any(isinstance(h, (bool, str, bytes)) or not float(h).is_integer() for h in self.heads):
            raise ValueError(f"heads must be whole numbers, one per layer; got {self.heads}")
        heads = tuple(int(h) for h in self.heads)
        widths = tuple(float(n) for n in self.widths)
        sigma2 = tuple(float(s) for s in self.sigma2)
        L = len(heads)
        if L < 1 or any(h < 1 for h in heads):
            raise ValueError(f"heads must be positive ints, one per layer; got {self.heads}")
        if len(widths) != L + 1 or any(not np.isfinite(n) or n <= 0 for n in widths):
            raise ValueError(f"widths must be L+1={L + 1} positive numbers (N_1..N_L, N_a); got {self.widths}")
        if len(sigma2) != L + 1 or any(not np.isfinite(s) or s <= 0 for s in sigma2):
            raise ValueError(
                f"sigma2 must be L+1={L + 1} positive variances (sigma_1..sigma_L, sigma_a); got {self.sigma2}"
            )
        object.__setattr__(self, "heads", heads)
        object.__setattr__(self, "widths", widths)
        object.__setattr__(self, "sigma2", sigma2)

    @classmethod
    def uniform(cls, heads: Sequence[int], N: float, sigma2: float = 1.0) -> "Architecture":
        """All hidden widths equal to ``N`` and all variances equal to ``sigma2`` (the experiments' setting)."""
        if isinstance(heads, (str, bytes)) or not hasattr(heads, "__len__"):
            raise ValueError(f"heads must be a sequence of head counts such as (2, 2), got {heads!r}")
        L = len(heads)
        return cls(tuple(heads), (N,) * (L + 1), (sigma2,) * (L + 1))

    def with_width(self, N: float) -> "Architecture":
        """Same heads and variances, all hidden widths set to ``N``."""
        return replace(self, widths=(float(N),) * (self.n_layers + 1))

    @property
    def n_layers(self) -> int:
        return len(self.heads)

    @property
    def n_paths(self) -> int:
        return int(np.prod(self.heads))

    @property
    def dims(self) -> tuple[int, ...]:
        """``(D_1, ..., D_L)`` with ``D_l = prod_{k >= l} H_k``: sizes of the nested order parameters."""
        return tuple(int(np.prod(self.heads[l:])) for l in range(self.n_layers))

    @property
    def n_max(self) -> float:
        """Largest width, the scale of the action used for tolerances."""
        return max(self.widths)

    def gp_order_parameters(self) -> tuple[list[np.ndarray], float]:
        """Infinite-width values ``U_l = sigma_a^2 prod_{k>=l} sigma_k^2 I`` and ``U_a = sigma_a^2`` (spec T§11)."""
        s = self.sigma2
        Us = [s[-1] * float(np.prod(s[l:-1])) * np.eye(D) for l, D in enumerate(self.dims)]
        return Us, s[-1]
