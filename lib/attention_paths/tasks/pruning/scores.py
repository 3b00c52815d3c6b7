"""Head rankings: the theory's scores and the combinations they pick, the weight-magnitude baseline,
theory-side silencing, the rank correlation with the drops and its stability over the grid."""

from __future__ import annotations

import numpy as np
import torch
from scipy.stats import spearmanr

from attention_paths.tasks.oneshot.data import LEGACY_HEADS
from attention_paths.tasks.pruning.heads import all_heads, keeps_every_layer
from attention_paths.tasks.pruning.result import EVAL_SETS, RankCorrelation, head_name
from attention_paths.theory.predictor import predict
from attention_paths.theory.scores import head_scores, silence_heads

__all__ = [
    "score_order",
    "combinations_from_scores",
    "magnitude_scores",
    "theory_side_drops",
    "spearman_with_ci",
    "score_stability",
]


def _heads(scores) -> tuple[int, ...]:
    """Heads per layer of per-layer scores (one array per layer, as from :func:`attention_paths.head_scores`)."""
    return tuple(len(s) for s in scores)


def score_order(scores) -> list[tuple[int, int]]:
    """Heads sorted by ascending score (ties: the lower layer, then head, first); ``scores`` as from
    :func:`attention_paths.head_scores` (one array per layer)."""
    flat = [(float(scores[l][h]), l, h) for l, h in all_heads(_heads(scores))]
    return [(l, h) for _, l, h in sorted(flat)]


def combinations_from_scores(scores) -> dict:
    """The combinations of spec OP-E9, from a network's own scores: the two and three lowest-scoring heads
    overall, and within each layer its two and three lowest; those that would remove every head of a layer are
    left out (none for 2 x 4 heads; a layer's three lowest for 3 heads per layer)."""
    order = score_order(scores)
    combos = {"2 lowest": order[:2], "3 lowest": order[:3]}
    for layer in range(len(scores)):
        in_layer = [hd for hd in order if hd[0] == layer]
        combos[f"2 lowest of layer {layer + 1}"] = in_layer[:2]
        combos[f"3 lowest of layer {layer + 1}"] = in_layer[:3]
    return {name: hs for name, hs in combos.items() if keeps_every_layer(hs, _heads(scores))}


def magnitude_scores(net) -> list[np.ndarray]:
    """Baseline score: Frobenius norm of each head's value matrix ``V^(l,h)``, normalised by the largest."""
    out = []
    for layer in range(net.n_layers):
        V = net.v[layer].weight.detach().double().reshape(net.n_heads, net.d_model, net.d_model)
        out.append(torch.linalg.matrix_norm(V).numpy())
    m = max(float(s.max()) for s in out)
    return [s / m for s in out]


def theory_side_drops(U, data, tau: float, sets=EVAL_SETS) -> dict:
    """Theory-side pruning (T§14.2): silence each head inside ``U``, recompute the theory's mean predictor.

    ``data`` is an :class:`attention_paths.tasks.oneshot.OneShotData` (its ``heads`` give the architecture).
    Returns {head label: {set: drop in points}}.
    """
    X, y = data.features["train"], data.y["train"]
    base = {s: predict(U, X, y, tau, data.features[s], return_var=False).accuracy(data.y[s]) for s in sets}
    out = {}
    for head in all_heads(data.heads):
        Us = silence_heads(U, data.heads, [head])
        out[head_name(head)] = {
            s: base[s] - predict(Us, X, y, tau, data.features[s], return_var=False).accuracy(data.y[s]) for s in sets
        }
    return out


def spearman_with_ci(scores, per_episode: dict, c_full, n_boot: int, seed: int) -> RankCorrelation:
    """Spearman correlation between head scores (one array per layer) and single-head drops, with a bootstrap
    95% interval.

    ``per_episode`` maps head labels to the pruned network's per-episode correctness; the bootstrap
    resamples episodes (the drops' uncertainty), the scores being fixed.
    """
    every = all_heads(_heads(scores))
    labels = [head_name(h) for h in every]
    s = np.array([scores[l][h] for l, h in every])
    D = np.stack([np.asarray(c_full, float) - np.asarray(per_episode[k], float) for k in labels], 1)  # [n, heads]
    rho = float(spearmanr(s, D.mean(0)).statistic)
    rng = np.random.default_rng(seed)
    boots = []
    for _ in range(n_boot):
        idx = rng.integers(len(D), size=len(D))
        r = spearmanr(s, D[idx].mean(0)).statistic
        if np.isfinite(r):
            boots.append(r)
    lo, hi = np.percentile(boots, [2.5, 97.5])
    return RankCorrelation(rho=rho, ci95=[float(lo), float(hi)], n_boot=len(boots))


def score_stability(grid_U, widths, taus, ref: tuple[int, int], heads=LEGACY_HEADS) -> np.ndarray:
    """Spearman correlation of the head scores at every grid point with those at ``ref = (i_tau, i_width)``,
    [n_taus, n_widths]; ``heads`` per layer of the network (a one-shot result's ``heads``)."""
    ref_s = np.concatenate(head_scores(grid_U[ref], heads))
    out = np.zeros(grid_U.shape[:2])
    for i in range(grid_U.shape[0]):
        for j in range(grid_U.shape[1]):
            out[i, j] = spearmanr(ref_s, np.concatenate(head_scores(grid_U[i, j], heads))).statistic
    return out
