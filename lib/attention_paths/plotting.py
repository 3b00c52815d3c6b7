"""Figure helpers shared by the chapters (matplotlib only; imported lazily by the book)."""
from __future__ import annotations

from typing import Sequence

import numpy as np

__all__ = ["heatmap_U", "kernel_image", "tile_average", "alignment_bars", "class_sorted"]


def heatmap_U(ax, U, labels: Sequence[str] | None = None, title: str = "", vmax: float | None = None,
              annotate: bool = True, cmap: str = "RdBu_r"):
    """Order-parameter heatmap with a diverging colour map centred at zero (symmetric limits)."""
    U = np.asarray(U)
    vmax = float(np.abs(U).max()) if vmax is None else vmax
    im = ax.imshow(U, cmap=cmap, vmin=-vmax, vmax=vmax)
    if labels is not None:
        ax.set_xticks(range(len(labels)), labels, rotation=90 if len(labels) > 6 else 0)
        ax.set_yticks(range(len(labels)), labels)
    if annotate and U.shape[0] <= 6:
        for i in range(U.shape[0]):
            for j in range(U.shape[1]):
                ax.text(j, i, f"{U[i, j]:.2f}", ha="center", va="center", fontsize=8,
                        color="white" if abs(U[i, j]) > 0.6 * vmax else "black")
    ax.set_title(title)
    return im


def class_sorted(y) -> np.ndarray:
    """Indices that put the +1 examples first and the -1 examples second (stable)."""
    y = np.asarray(y)
    return np.concatenate([np.flatnonzero(y > 0), np.flatnonzero(y <= 0)])


def tile_average(K, tile: int, mask_diagonal: bool = True) -> np.ndarray:
    """Average a square matrix over ``tile x tile`` blocks (the diagonal entries left out if asked).

    Makes class structure visible in kernels whose diagonal and example-to-example noise dominate.
    """
    K = np.array(K, dtype=float)
    if mask_diagonal:
        np.fill_diagonal(K, np.nan)
    n = K.shape[0] // tile
    K = K[: n * tile, : n * tile].reshape(n, tile, n, tile)
    return np.nanmean(K, axis=(1, 3))


def kernel_image(ax, K, order=None, title: str = "", tile: int | None = None, cmap: str | None = None,
                 limits: str = "symmetric"):
    """Kernel heatmap, optionally re-ordered (e.g. by class) and tile-averaged (diagonal left out).

    ``limits="symmetric"``: diverging colour map (default ``RdBu_r``) centred at zero with symmetric limits.
    ``limits="off-diagonal"``: sequential map (default ``viridis``) spanning the range of the off-diagonal
    entries, which shows block structure in kernels that are positive everywhere and dominated by their
    diagonal (diagonal entries above the range saturate).
    """
    K = np.asarray(K)
    if order is not None:
        K = K[np.ix_(order, order)]
    if tile:
        K = tile_average(K, tile)
    if limits == "symmetric":
        vmax = np.nanmax(np.abs(K))
        im = ax.imshow(K, cmap=cmap or "RdBu_r", vmin=-vmax, vmax=vmax)
    elif limits == "off-diagonal":
        off = K[~np.eye(K.shape[0], dtype=bool)]
        im = ax.imshow(K, cmap=cmap or "viridis", vmin=np.nanmin(off), vmax=np.nanmax(off))
    else:
        raise ValueError(f"limits must be 'symmetric' or 'off-diagonal', got {limits!r}")
    ax.set_title(title)
    ax.set_xticks([])
    ax.set_yticks([])
    return im


def alignment_bars(ax, overlaps: dict, k: int | None = None):
    """Side-by-side bars of kernel-label overlaps ``|u_k^T Y|/sqrt(P)`` for several kernels."""
    names = list(overlaps)
    n = len(names)
    k = k or min(len(v) for v in overlaps.values())
    width = 0.8 / n
    for j, name in enumerate(names):
        ax.bar(np.arange(1, k + 1) + (j - (n - 1) / 2) * width, np.asarray(overlaps[name])[:k], width, label=name)
    ax.set_xlabel("eigenvector rank $k$ (by decreasing eigenvalue)")
    ax.set_ylabel(r"$|u_k^\top Y|/\sqrt{P}$")
    ax.legend(frameon=False)
