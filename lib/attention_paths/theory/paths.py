"""Attention paths: enumeration, flattening order and path-processed inputs (spec T§3).

A path ``pi = (h_1, ..., h_L)`` picks one head per layer.  Paths are flattened row-major with
the **first layer's head as the slowest index**: ``idx = ((h_1 H_2 + h_2) H_3 + h_3) ...``.
Every path-indexed object in the package (order parameters, kernels, scores) uses this order.
"""

from __future__ import annotations

import itertools
from typing import Sequence

import numpy as np
import torch

from attention_paths.theory.attention import AttentionLayer, as_tensor
from attention_paths.theory.checks import check_heads

__all__ = [
    "PathFeatures",
    "n_paths",
    "path_list",
    "pruned_coefficients",
    "path_index",
    "path_labels",
    "path_vectors",
    "path_inputs",
    "path_features",
    "features_to_path_inputs",
]


def n_paths(heads: Sequence[int]) -> int:
    """Number of paths ``Pi = prod_l H_l``."""
    return int(np.prod(check_heads(heads)))


def path_list(heads: Sequence[int]) -> list[tuple[int, ...]]:
    """All paths ``(h_1, ..., h_L)`` (0-based) in flattening order."""
    return list(itertools.product(*(range(h) for h in check_heads(heads))))


WEIGHTINGS = ("mask", "rescaled", "kept")


def pruned_coefficients(heads: Sequence[int], pruned=(), weighting: str = "mask") -> np.ndarray:
    """Path coefficients [Pi] of a network with ``heads`` per layer whose heads ``pruned`` ([(layer, head)],
    0-based) are removed: ``c_pi = prod_l w_l[h_l]`` over the path's heads, in the flattening order (T§14.3).

    ``weighting`` of layer ``l`` (``n_l`` heads, ``k_l`` kept; ``m`` its 0/1 mask): ``"mask"``, ``w = m``;
    ``"rescaled"``, ``w = m sqrt(n_l / k_l)`` (each layer's head sum keeps its scale); ``"kept"``,
    ``w = m / sqrt(k_l)`` (the book's pruning convention, path outputs summed as ``F @ c``).  A head that does
    not exist, or a layer with every head pruned, is refused by name.

    >>> pruned_coefficients((2, 2), [(0, 1)])
    array([1., 1., 0., 0.])
    >>> pruned_coefficients((2, 2), [(0, 1)], "kept").round(3)
    array([0.707, 0.707, 0.   , 0.   ])
    """
    heads = check_heads(heads)
    if weighting not in WEIGHTINGS:
        raise ValueError(f"weighting must be one of {WEIGHTINGS}, got {weighting!r}")
    masks = [np.ones(h) for h in heads]
    for layer, head in pruned:
        if not (0 <= layer < len(heads) and 0 <= head < heads[layer]):
            raise ValueError(f"no head {head} in layer {layer} (heads per layer {heads})")
        masks[layer][head] = 0.0
    c = np.ones(1)
    for layer, m in enumerate(masks):
        if m.sum() == 0:
            raise ValueError(f"all heads of layer {layer + 1} are pruned; a layer needs at least one head")
        if weighting == "rescaled":
            m = m * np.sqrt(len(m) / m.sum())
        elif weighting == "kept":
            m = m / np.sqrt(m.sum())
        c = np.kron(c, m)
    return c


def path_index(path: Sequence[int], heads: Sequence[int]) -> int:
    """Flat index of ``path``: ``((h_1 H_2 + h_2) H_3 + ...) H_L + h_L`` (0-based)."""
    heads = check_heads(heads)
    if len(path) != len(heads) or any(not 0 <= h < H for h, H in zip(path, heads, strict=True)):
        raise ValueError(f"path {tuple(path)} does not fit heads {heads}")
    idx = 0
    for h, H in zip(path, heads, strict=True):
        idx = idx * H + int(h)
    return idx


def path_labels(heads: Sequence[int], one_based: bool = True) -> list[str]:
    """Labels "h1,h2,..." of all paths in flattening order (1-based by default, as in the figures)."""
    off = 1 if one_based else 0
    return [",".join(str(h + off) for h in p) for p in path_list(heads)]


def path_vectors(omegas: Sequence[torch.Tensor], r) -> torch.Tensor:
    """Token mixtures ``omega^pi = Omega^(1,h1) ... Omega^(L,hL) r`` for all paths (spec T§3.3).

    Computed backwards, sharing partial products between paths with a common tail.

    Parameters
    ----------
    omegas : list of L tensors, shapes [P, H_l, T, T]
    r : array, shape [T]

    Returns
    -------
    torch.Tensor, shape [P, Pi, T]
    """
    if len(omegas) == 0:
        raise ValueError("need at least one attention layer")
    r = as_tensor(r, omegas[-1].dtype)
    T = omegas[-1].shape[-1]
    if r.shape != (T,):
        raise ValueError(f"readout vector must have shape [T={T}], got {tuple(r.shape)}")
    v = torch.einsum("phst,t->phs", omegas[-1], r)  # [P, H_L, T]
    for om in reversed(omegas[:-1]):
        P, H = om.shape[:2]
        v = torch.einsum("phst,pdt->phds", om, v).reshape(P, H * v.shape[1], T)
    return v


class PathFeatures(np.ndarray):
    """Path features that know their layout: a float64 array [P, N0, Pi] whose ``heads`` attribute is the
    heads per layer of the paths (``None``: unknown), so that an architecture with another layout and the
    same number of paths is refused (:class:`~attention_paths.theory.action.Action`).  Slices, reshapes and
    copies keep the layout; arithmetic and reductions give plain arrays."""

    heads: tuple[int, ...] | None

    def __new__(cls, array, heads=None):
        obj = np.asarray(array, dtype=np.float64).view(cls)
        obj.heads = None if heads is None else tuple(int(h) for h in heads)
        if obj.heads is not None and obj.ndim == 3 and int(np.prod(obj.heads)) != obj.shape[2]:
            raise ValueError(f"features of {obj.shape[2]} paths cannot have heads {obj.heads}")
        return obj

    def __array_finalize__(self, obj):
        self.heads = getattr(obj, "heads", None)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):  # computed results are plain arrays
        inputs = tuple(i.view(np.ndarray) if isinstance(i, PathFeatures) else i for i in inputs)
        if "out" in kwargs:
            kwargs["out"] = tuple(o.view(np.ndarray) if isinstance(o, PathFeatures) else o for o in kwargs["out"])
        return getattr(ufunc, method)(*inputs, **kwargs)

    def __reduce__(self):  # pickling keeps the layout
        base = super().__reduce__()
        return (_rebuild_features, (base, self.heads))


def _rebuild_features(base, heads):
    fn, args, state = base
    arr = fn(*args)
    arr.__setstate__(state)
    arr.heads = heads
    return arr


def path_inputs(x, layers: Sequence[AttentionLayer], r) -> torch.Tensor:
    """Path-processed inputs ``xi^pi(x) = x omega^pi(x)`` (spec T§3.3).

    Parameters
    ----------
    x : array, shape [P, N0, T]
    layers : the L attention layers
    r : array, shape [T]

    Returns
    -------
    torch.Tensor (float64), shape [P, Pi, N0]
    """
    x = as_tensor(x)
    omegas = [layer.attention(x) for layer in layers]
    omega = path_vectors(omegas, r)
    out = torch.einsum("pit,pat->pai", x, omega)
    out.heads = tuple(int(o.shape[1]) for o in omegas)  # the layout, read by path_features
    return out


def path_features(xi, sigma0_2: float = 1.0) -> np.ndarray:
    """Scaled path features ``Xi[p, i, pi] = sigma_0 xi^pi_i(x_p) / sqrt(N0 Pi)`` (spec T§6.1).

    With these, ``C^{pi pi'}(x, x') = Xi(x)[:, pi] . Xi(x')[:, pi']``.

    Parameters
    ----------
    xi : array, shape [P, Pi, N0] (output of :func:`path_inputs`)
    sigma0_2 : prior variance of the input projection ``V^(0)``

    Returns
    -------
    :class:`PathFeatures` (float64), shape [P, N0, Pi], with the heads per layer when ``xi`` carries them
    (``path_inputs`` output)
    """
    if sigma0_2 <= 0:
        raise ValueError(f"sigma0_2 must be positive, got {sigma0_2}")
    heads = getattr(xi, "heads", None)
    xi = xi.detach().cpu().numpy() if isinstance(xi, torch.Tensor) else np.asarray(xi)
    xi = np.asarray(xi, dtype=np.float64)
    if xi.ndim != 3:
        raise ValueError(f"xi must have shape [P, Pi, N0], got {xi.shape}")
    if not np.isfinite(xi).all():
        raise ValueError("path inputs contain non-finite values")
    _, Pi, N0 = xi.shape
    return PathFeatures(np.ascontiguousarray(np.sqrt(sigma0_2 / (N0 * Pi)) * xi.transpose(0, 2, 1)), heads)


def features_to_path_inputs(features) -> np.ndarray:
    """Path inputs ``xi`` [P, Pi, N0] of path features [P, N0, Pi] made with ``sigma0_2 = 1`` (the inverse of
    :func:`path_features`): ``xi = Xi^T sqrt(N0 Pi)``."""
    F = np.asarray(features, dtype=np.float64)
    if F.ndim != 3:
        raise ValueError(f"path features must have shape [P, N0, Pi], got {F.shape}")
    return np.ascontiguousarray(F.transpose(0, 2, 1) * np.sqrt(F.shape[1] * F.shape[2]))
