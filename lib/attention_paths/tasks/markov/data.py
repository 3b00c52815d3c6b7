"""The hidden-Markov-chain sequences (spec experiments §A.1): state embeddings, the two-state Markov chain, the
three noise components and the two generators (this project's numpy PCG64 and the reference's torch draws)."""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["N_FEATURES", "BETA", "N_STATES", "embeddings", "sample_states", "make_sequences", "GENERATORS"]


N_FEATURES = 200  # feature width N_f
N_STATES = 30  # state tokens per sequence (T = 31 with the BOS token)


BETA = 10.0  # inverse softmax temperature of every head


def embeddings(nf: int = N_FEATURES) -> tuple[np.ndarray, np.ndarray]:
    """State embeddings ``v+ = sqrt2 (1..1, 0..0)`` and ``v- = sqrt2 (0..0, 1..1)``; ``|v|^2 = nf``."""
    if nf < 2 or nf % 2:
        raise ValueError(f"the feature width must be a positive even number, got {nf}")
    v_plus = np.zeros(nf)
    v_plus[: nf // 2] = np.sqrt(2.0)
    return v_plus, v_plus[::-1].copy()


def sample_states(n: int, p_stay: float, rng: np.random.Generator, n_states: int = N_STATES) -> np.ndarray:
    """Hidden-state chains ``[n, n_states]`` with entries +1/-1.

    Per sequence, one uniform draw ``u`` sets the first state (+ if ``u >= 0.5``), then one draw per
    transition keeps the state when ``u < p_stay`` (the reference's draw order).
    """
    if not 0.0 <= p_stay <= 1.0:
        raise ValueError(f"p_stay must be a probability, got {p_stay}")
    u = rng.random((n, n_states))
    flips = np.where(u[:, 1:] < p_stay, 1.0, -1.0)
    first = np.where(u[:, :1] >= 0.5, 1.0, -1.0)
    return np.concatenate([first, first * np.cumprod(flips, axis=1)], axis=1)


def make_sequences(
    P: int,
    seed: int,
    *,
    p_stay=(0.7, 0.3),
    sigma_sum: float = 1.0,
    sigma_diff: float = 1.0,
    sigma_perp: float = 1.0,
    nf: int = N_FEATURES,
    generator: str = "numpy-pcg64",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A labelled data set of ``P`` sequences, the first half of class +1, the second of class -1.

    Parameters
    ----------
    P : number of sequences (even)
    seed : seeds the one generator used for the chains (class +1 first) and then the noise
    p_stay : stay probabilities of class +1 and class -1
    sigma_sum, sigma_diff : in-plane noise strengths along ``v+ + v-`` and ``v+ - v-`` (the paper's
        parallel noise, 1 in every experiment)
    sigma_perp : out-of-plane noise strength (the paper's ``sigma_perp``; 1 or 5)
    generator : ``"numpy-pcg64"`` (this project's: one numpy generator for the chains, then the noise) or
        ``"torch-reference"`` (the reference's, bit for bit, spec §A.1b: torch's CPU generator in float64,
        one ``torch.rand(1)`` per first state and per transition, then one ``torch.randn`` for the noise)

    Returns
    -------
    x : [P, nf + 31, 31] tokens as columns (BOS first), y : [P] labels +-1, states : [P, 30]
    """
    if P < 2 or P % 2:
        raise ValueError(f"P must be a positive even number (half per class), got {P}")
    _check_seed(seed, "seed")
    if min(sigma_sum, sigma_diff, sigma_perp) < 0:
        raise ValueError("noise strengths must be non-negative")
    if generator not in GENERATORS:
        raise ValueError(f"generator must be one of {GENERATORS}, got {generator!r}")
    half = P // 2
    if generator == "torch-reference":  # spec §A.1b: torch's CPU generator, float64, seeded once per data set
        gen = torch.Generator().manual_seed(int(seed))
        states = np.concatenate([_torch_states(half, p_stay[0], gen), _torch_states(half, p_stay[1], gen)])
        zeta = torch.randn((P, nf, N_STATES), dtype=torch.float64, generator=gen).numpy()
    else:
        rng = np.random.default_rng(seed)
        states = np.concatenate([sample_states(half, p_stay[0], rng), sample_states(half, p_stay[1], rng)])
        zeta = rng.standard_normal((P, nf, N_STATES))
    y = np.concatenate([np.ones(half), -np.ones(half)])
    v_plus, v_minus = embeddings(nf)
    feats = np.where(states[:, None, :] > 0, v_plus[None, :, None], v_minus[None, :, None])  # [P, nf, 30]
    z_sum, z_diff, z_out = _noise_components(zeta, nf)
    eta = sigma_sum * z_sum + sigma_diff * z_diff + sigma_perp * z_out
    T = N_STATES + 1
    x = np.zeros((P, nf + T, T))
    x[:, :nf, 1:] = feats + eta  # the BOS column's features stay zero and noise-free
    x[:, nf:, :] = np.eye(T)[None]
    return x, y, states


GENERATORS = ("numpy-pcg64", "torch-reference")


def _noise_components(zeta, nf: int):
    """``zeta`` [P, nf, 30] split along ``e_sum``, ``e_diff`` and the out-of-plane rest (spec §A.1)."""
    v_plus, v_minus = embeddings(nf)
    e_sum = (v_plus + v_minus) / np.linalg.norm(v_plus + v_minus)
    e_diff = (v_plus - v_minus) / np.linalg.norm(v_plus - v_minus)
    z_sum = e_sum[None, :, None] * np.einsum("i,pit->pt", e_sum, zeta)[:, None, :]
    z_diff = e_diff[None, :, None] * np.einsum("i,pit->pt", e_diff, zeta)[:, None, :]
    return z_sum, z_diff, zeta - z_sum - z_diff


def _torch_states(n: int, p_stay: float, gen, n_states: int = N_STATES) -> np.ndarray:
    """The reference's chains: per example one ``torch.rand(1)`` for the first state, then one per transition."""
    states = np.empty((n, n_states))
    for i in range(n):
        s = 1.0 if float(torch.rand(1, dtype=torch.float64, generator=gen)) >= 0.5 else -1.0
        states[i, 0] = s
        for t in range(1, n_states):
            if not float(torch.rand(1, dtype=torch.float64, generator=gen)) < p_stay:
                s = -s
            states[i, t] = s
    return states


def _check_seed(seed, name: str) -> None:
    """A seed is a non-negative integer (a float such as 1.5 would be truncated silently by the generators)."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {seed!r}")
