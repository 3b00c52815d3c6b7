"""Input checks shared by the theory, the predictor and the samplers (clear errors naming the problem)."""
from __future__ import annotations

import numpy as np

__all__ = ["check_targets", "check_tau"]


def check_targets(y, P: int) -> np.ndarray:
    """Training targets as a float64 vector of length ``P`` with finite entries."""
    y = np.asarray(y, dtype=np.float64)
    if y.shape != (P,):
        raise ValueError(f"targets must have shape [P={P}], got {y.shape}")
    if not np.isfinite(y).all():
        raise ValueError("targets contain non-finite values")
    return y


def check_tau(tau) -> float:
    """The temperature (likelihood variance) as a positive finite float."""
    tau = float(tau)
    if not (np.isfinite(tau) and tau > 0):
        raise ValueError(f"temperature tau must be positive and finite, got {tau}")
    return tau
