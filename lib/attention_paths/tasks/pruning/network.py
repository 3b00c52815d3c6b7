"""Network-side pruning through per-path outputs: the trained network's output is ``sum_pi c_pi F_pi``,
so every pruned network is one matrix-vector product on ``F`` (:func:`path_outputs`, :func:`pruned_outputs`)."""

from __future__ import annotations

import copy

import numpy as np
import torch

from attention_paths.tasks.pruning.result import HEADS
from attention_paths.theory.paths import path_inputs, pruned_coefficients

__all__ = [
    "path_outputs",
    "path_coefficients",
    "pruned_outputs",
    "path_sum",
    "correct",
    "drop_with_error",
    "pruned_parameters",
    "pruned_parameter_fraction",
]


@torch.no_grad()
def path_outputs(net, episodes, batch: int = 256) -> np.ndarray:
    """Per-path outputs ``F[n, pi] = a^T V^(L,hL) ... V^(1,h1) W_in xi^pi(x_n)`` in float64, [n, Pi] (paths
    flattened first layer slowest, ``Pi = H^L``).

    The unpruned network's output is ``F.sum(1) / sqrt(H^L)`` (``1/sqrt(H)`` per layer; 1/4 for 2 x 4 heads).
    """
    net64 = copy.deepcopy(net).double().eval()
    net64.set_pruned(())
    scale = float(np.sqrt(np.prod([net64.n_heads] * net64.n_layers)))
    v = (net64.path_weights() * scale) @ net64.w_in.weight  # [Pi, 192]
    layers = net64.theory_layers()
    r = np.full(net64.positions.shape[0], 1.0 / net64.positions.shape[0])
    out = []
    for i in range(0, len(episodes), batch):
        x0 = net64.tokens((episodes.images[i : i + batch], episodes.labels[i : i + batch]))
        xi = path_inputs(x0.transpose(1, 2), layers, r)  # [B, Pi, 192]
        out.append(torch.einsum("pi,bpi->bp", v, xi).numpy())
    return np.concatenate(out)


def path_coefficients(pruned=(), heads=HEADS) -> np.ndarray:
    """``c_pi = prod_l m_(l,h_l) / sqrt(n_l)`` for the pruned heads ``[(layer, head), ...]`` (0-based) of a
    network with ``heads`` per layer (``n_l`` heads of layer ``l`` kept), [Pi]
    (:func:`~attention_paths.theory.paths.pruned_coefficients`, ``"kept"``)."""
    return pruned_coefficients(heads, pruned, "kept")


def pruned_outputs(F, pruned=(), heads=HEADS) -> np.ndarray:
    """Outputs [n] of the network with heads ``pruned`` removed, from its path outputs ``F`` [n, Pi] (a network
    with ``heads`` per layer: a pruning result's ``res.heads``)."""
    return path_sum(F, path_coefficients(pruned, heads), heads)


def path_sum(F, coefficients, heads=HEADS) -> np.ndarray:
    """``F @ coefficients``: the outputs of pruned networks from the path outputs ``F`` [n, Pi] and path
    coefficients [Pi] (one network, :func:`path_coefficients`; outputs [n]) or [Pi, m] (``m`` networks; [n, m]),
    checked against the network's ``heads``."""
    F = np.asarray(F)
    n_paths = np.shape(coefficients)[0]
    if F.ndim != 2 or F.shape[1] != n_paths:
        raise ValueError(
            f"path outputs of shape {F.shape} do not fit heads per layer {tuple(heads)} ({n_paths} paths); "
            "pass the network's heads"
        )
    return F @ coefficients


def correct(outputs, y) -> np.ndarray:
    """Per-episode correctness (bool); an output of exactly 0 counts as -1 (spec §F-11)."""
    return np.where(np.asarray(outputs) > 0, 1.0, -1.0) == np.asarray(y)


def drop_with_error(c_full, c_pruned) -> tuple[float, float]:
    """Accuracy drop (points) of a pruned network on the same episodes and its paired standard error."""
    d = np.asarray(c_full, float) - np.asarray(c_pruned, float)
    return 100.0 * float(d.mean()), 100.0 * float(d.std(ddof=1) / np.sqrt(len(d)))


def pruned_parameters(net, heads) -> tuple[int, int]:
    """``(held, total)``: how many of the network's trainable parameters the heads ``heads`` ([(layer, head)],
    0-based) hold, and how many it has in all.

    A head of layer ``l`` holds its query and key rows ``q[l].weight[h*G:(h+1)*G]``, ``k[l].weight[h*G:(h+1)*G]``
    (``G = d_qk``) and its value block ``v[l].weight[h*D:(h+1)*D]`` (``D = d_model``); the total counts every
    parameter of the :class:`~attention_paths.tasks.omniglot.model.InContextTransformer` (``w_in``, all
    queries, keys and values, ``readout``), not its frozen buffers (positions, label embedding, head mask).
    """
    heads = [tuple(int(i) for i in hd) for hd in heads]
    if len(set(heads)) != len(heads):
        raise ValueError(f"a head is named twice in {heads}")
    G, D = net.d_qk, net.d_model
    held = 0
    for layer, head in heads:
        if not (0 <= layer < net.n_layers and 0 <= head < net.n_heads):
            raise ValueError(f"no head {head} in layer {layer} ({net.n_layers} layers of {net.n_heads} heads)")
        rows = slice(head * G, (head + 1) * G)
        held += net.q[layer].weight[rows].numel() + net.k[layer].weight[rows].numel()
        held += net.v[layer].weight[head * D : (head + 1) * D].numel()
    return held, sum(p.numel() for p in net.parameters())


def pruned_parameter_fraction(net, heads) -> float:
    """The fraction of the network's parameters that the heads ``heads`` hold (:func:`pruned_parameters`)."""
    held, total = pruned_parameters(net, heads)
    return held / total
