"""Head scores from the order parameter and theory-side head silencing (spec T§14.1-14.2)."""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

from attention_paths.theory.checks import check_order_parameter
from attention_paths.theory.paths import n_paths, path_list

__all__ = ["head_scores", "silence_heads", "head_labels"]


def head_scores(U, heads: Sequence[int], normalize: bool = True) -> list[np.ndarray]:
    """Score of every head: sum of ``|U_{pi pi'}|`` over entries whose row or column path uses it.

    ``score(l, h) = sum_{pi_l = h} sum_pi' |U| + sum_pi sum_{pi'_l = h} |U| - sum_{pi_l = h, pi'_l = h} |U|``
    (spec T§14.1), divided by the largest score over all heads when ``normalize``.

    Returns
    -------
    list of L arrays; entry ``l`` has shape [H_l]
    """
    U = np.abs(check_order_parameter(U, n_paths(heads), f"U for heads {tuple(heads)}"))
    paths = np.array(path_list(heads))  # [Pi, L]
    scores = []
    for l, H in enumerate(heads):
        s = np.empty(H)
        for h in range(H):
            on = paths[:, l] == h
            s[h] = U[on].sum() + U[:, on].sum() - U[np.ix_(on, on)].sum()
        scores.append(s)
    if normalize:
        top = max(s.max() for s in scores)
        if top > 0:
            scores = [s / top for s in scores]
    return scores


def head_labels(heads: Sequence[int]) -> list[str]:
    """Figure labels "(layer)head", 1-based, in the order layer 1 heads, then layer 2 heads, ..."""
    return [f"({l + 1}){h + 1}" for l, H in enumerate(heads) for h in range(H)]


def silence_heads(U, heads: Sequence[int], silenced: Iterable[tuple[int, int]]) -> np.ndarray:
    """Zero every row and column of ``U`` whose path passes through a silenced ``(layer, head)`` (0-based)."""
    U = check_order_parameter(U, n_paths(heads), f"U for heads {tuple(heads)}").copy()
    paths = np.array(path_list(heads))
    for l, h in silenced:
        if not (0 <= l < len(heads) and 0 <= h < heads[l]):
            raise ValueError(f"no head {h} in layer {l} for heads {tuple(heads)}")
        on = paths[:, l] == h
        U[on, :] = 0.0
        U[:, on] = 0.0
    return U
