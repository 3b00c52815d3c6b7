"""The W-form attention heads of the hidden-Markov-chain task (spec §A.2, T§2.2): the good head, the uniform head
and the random heads, all at inverse temperature ``beta = 10``."""

from __future__ import annotations

import numpy as np
import torch

from attention_paths.tasks.markov.data import BETA, GENERATORS, N_FEATURES, N_STATES, _check_seed, embeddings

__all__ = ["good_head", "uniform_head", "random_head"]


def _blocks(feature, position, cross_fp=None, cross_pf=None, nf: int = N_FEATURES) -> np.ndarray:
    T = position.shape[0]
    W = np.zeros((nf + T, nf + T))
    W[:nf, :nf] = feature
    W[nf:, nf:] = position
    if cross_fp is not None:
        W[:nf, nf:] = cross_fp
        W[nf:, :nf] = cross_pf
    return W


def good_head(beta: float = BETA, nf: int = N_FEATURES) -> np.ndarray:
    """The "same state as the previous token" head, ``[N0, N0]`` (spec §A.2, head 1).

    Feature block ``q q^T`` with ``q = (v+ - v-)/nf``; position block 1 on ``(key t-1, query t)`` for
    ``t >= 2`` and 1.5 on (key BOS, query ``t >= 1``).
    """
    v_plus, v_minus = embeddings(nf)
    q = (v_plus - v_minus) / nf
    T = N_STATES + 1
    pos = np.zeros((T, T))
    pos[np.arange(1, T - 1), np.arange(2, T)] = 1.0
    pos[0, 1:] = 1.5
    return beta * _blocks(np.outer(q, q), pos, nf=nf)


def uniform_head(beta: float = BETA, nf: int = N_FEATURES) -> np.ndarray:
    """Position block of ones: every score equals ``beta``, so attention is exactly uniform."""
    T = N_STATES + 1
    return beta * _blocks(np.zeros((nf, nf)), np.ones((T, T)), nf=nf)


def random_head(
    seed: int, eps: float = 1.0, beta: float = BETA, nf: int = N_FEATURES, generator: str = "numpy-pcg64"
) -> np.ndarray:
    """A random head: Gaussian blocks of strength ``eps`` (feature ``/nf``, position ``1``, cross ``/sqrt nf``).

    Draw order as in the reference: feature block, position block, then a full ``N0 x N0`` Gaussian of
    which only the cross blocks are kept.  ``eps = 0`` gives the zero matrix, i.e. uniform attention (and,
    as in the reference, draws nothing).  ``generator="torch-reference"`` draws each block with
    ``torch.randn_like`` (float64) after ``torch.manual_seed(seed)`` (spec §A.1b).
    """
    if generator not in GENERATORS:
        raise ValueError(f"generator must be one of {GENERATORS}, got {generator!r}")
    _check_seed(seed, "seed")
    T = N_STATES + 1
    n0 = nf + T
    if eps == 0:
        return beta * _blocks(np.zeros((nf, nf)), np.zeros((T, T)), np.zeros((nf, T)), np.zeros((T, nf)), nf=nf)
    if generator == "torch-reference":
        gen = torch.Generator().manual_seed(int(seed))
        draw = lambda shape: torch.randn(shape, dtype=torch.float64, generator=gen).numpy()  # noqa: E731
    else:
        rng = np.random.default_rng(seed)
        draw = rng.standard_normal
    feature = eps * draw((nf, nf)) / nf
    position = eps * draw((T, T))
    full = eps * draw((n0, n0)) / np.sqrt(nf)
    return beta * _blocks(feature, position, full[:nf, nf:], full[nf:, :nf], nf=nf)
