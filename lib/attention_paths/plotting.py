"""Figure helpers shared by the chapters (matplotlib only; imported lazily by the book)."""
from __future__ import annotations

from typing import Sequence

import numpy as np

__all__ = ["heatmap_U", "kernel_image", "tile_average", "alignment_bars", "class_sorted", "accuracy_grid_image",
           "oneshot_accuracy_panels"]


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


def accuracy_grid_image(ax, acc, widths, taus, title: str = "", vmin: float | None = None, vmax: float | None = None,
                        mark=None):
    """Accuracy (%) over a temperatures x widths grid as an annotated image; ``mark`` = [(i_tau, i_width)] boxed."""
    acc = np.asarray(acc)
    im = ax.imshow(acc, cmap="viridis", vmin=vmin, vmax=vmax, aspect="auto", origin="lower")
    ax.set_xticks(range(len(widths)), [f"{int(w)}" for w in widths], rotation=90 if len(widths) > 5 else 0)
    ax.set_yticks(range(len(taus)), [f"{t:g}" for t in taus])
    ax.set_xlabel("width $N$")
    ax.set_ylabel(r"temperature $\tau$")
    if acc.size <= 40:
        mid = 0.5 * (np.nanmin(acc) + np.nanmax(acc)) if vmin is None else 0.5 * (vmin + vmax)
        for i in range(acc.shape[0]):
            for j in range(acc.shape[1]):
                ax.text(j, i, f"{acc[i, j]:.0f}", ha="center", va="center", fontsize=7,
                        color="white" if acc[i, j] < mid else "black")
    for i, j in mark or []:
        ax.add_patch(__import__("matplotlib").patches.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, ec="red", lw=1.2))
    ax.set_title(title)
    return im


def oneshot_accuracy_panels(axes, summary: dict, sets=("test", "MNIST", "FashionMNIST"), titles=None):
    """Accuracy against width for an ``omniglot-theory`` summary (live or reloaded), one panel per set.

    Theory at the validation-selected temperature (solid), at the test-selected one (the paper's protocol,
    dashed), at ``tau = 0.5`` (dotted), sampled posterior points at ``tau = 0.5``, the GP limit at its
    validation-selected temperature, and the trained network's own accuracy.
    """
    widths = np.asarray(summary["widths"])
    taus = list(np.asarray(summary["taus"], float))
    cfg = summary["config"]
    i_panel = taus.index(cfg["panel_tau"])
    sel = summary["select"]
    for ax, s in zip(axes, sets):
        ours = np.asarray(sel["val"]["theory"]["accuracy"][s], float)
        paper = np.asarray(sel["test"]["theory"]["accuracy"][s], float)
        ax.plot(widths, ours, "o-", color="C0", ms=3.5, label=r"theory, $\tau$ selected on validation")
        ax.plot(widths, paper, "s--", color="C0", ms=3, alpha=0.55, label=r"theory, $\tau$ selected on test (paper)")
        ax.plot(widths, np.asarray(summary["grid_accuracy"][s], float)[i_panel], ":", color="C2", lw=1.2,
                label=rf"theory, $\tau={cfg['panel_tau']:g}$")
        for N, entry in summary.get("sampled", {}).items():
            ax.plot([int(N)], [entry[s]["sampled"]], "D", color="C3", ms=6, mfc="none", mew=1.5,
                    label=rf"sampled posterior, $\tau={cfg['sampling']['tau']:g}$")
        gp = float(np.asarray(sel["val"]["gp"]["accuracy"][s]))
        ax.axhline(gp, color="C1", lw=1.2, label=rf"GP limit ($\tau={float(np.asarray(sel['val']['gp']['tau'])):g}$)")
        ax.axhline(summary["network_accuracy"][s], color="0.45", lw=1, ls="-.", label="trained network")
        ax.set_xscale("log")
        ax.set_xlabel("width $N$")
        ax.set_title((titles or {}).get(s, s))
    axes[0].set_ylabel("accuracy (%)")
    return axes
