"""Schematics of the paper's Fig. 1 and Fig. 2(b), drawn by code (issue 49 §1).

:func:`paths_scheme` draws Fig. 1's four panels: (a) the network as a sum over attention paths, one head per
layer; (b) the order parameter ``U`` weighting each pair of paths; (c) the label overlap of the kernel's
principal components, finite width against the GP limit; (d) the renormalised kernel as the ``U``-weighted sum of
path-path kernels.  Panels (b)-(d) draw the numbers they are given (the theory chapter passes its toy problem's),
so the schematic is also a small figure of real results.  :func:`markov_network_scheme` draws Fig. 2(b): the
hidden-Markov-chain network, two layers of two heads, and its four named paths.

>>> import matplotlib
>>> matplotlib.use("Agg")
>>> import numpy as np
>>> fig = paths_scheme(np.eye(4), {"GP": np.array([0.3, 0.1]), "renormalised": np.array([0.6, 0.2])},
...                    [[np.eye(3)] * 4] * 4)
>>> len(fig.axes)
5
>>> fig = markov_network_scheme()
>>> len(fig.axes)
1
"""

from __future__ import annotations

import itertools

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Rectangle

from attention_paths.plotting.style import DIVERGING, PALETTE

__all__ = ["paths_scheme", "markov_network_scheme", "draw_network"]

_HEAD_BOX = dict(boxstyle="round,pad=0.35", fc="white", ec="0.3", lw=0.9)


def _path_colors(n: int) -> list:
    return [PALETTE[k % len(PALETTE)] for k in range(n)]


def draw_network(ax, heads=(2, 2), paths=None, labels=None, colors=None, head_names=None) -> None:
    """A multi-head attention network of ``len(heads)`` layers on ``ax``: the input tokens at the bottom, one row
    of heads per layer, the readout at the top, and each path in ``paths`` (head indices, one per layer; default:
    every path) as a coloured line through its heads, labelled by ``labels`` (default: the heads' indices)."""
    L = len(heads)
    paths = list(paths) if paths is not None else list(itertools.product(*[range(H) for H in heads]))
    colors = colors or _path_colors(len(paths))
    labels = labels or [",".join(str(h + 1) for h in p) for p in paths]
    xs = [np.linspace(0.3, 0.7, H) if H > 1 else np.array([0.5]) for H in heads]
    ys = np.linspace(0.3, 0.72, L)
    ax.set(xlim=(0, 1.12), ylim=(0, 1))
    ax.axis("off")
    for k, (p, c) in enumerate(zip(paths, colors, strict=True)):
        off = (k - (len(paths) - 1) / 2) * 0.012
        pts = [(0.5 + off, 0.12)] + [(xs[l][h] + off, ys[l]) for l, h in enumerate(p)] + [(0.5 + off, 0.9)]
        ax.plot(*zip(*pts, strict=True), color=c, lw=2.0, alpha=0.9, solid_capstyle="round", zorder=1)
    for l in range(L):
        for h in range(heads[l]):
            name = head_names[l][h] if head_names else f"$h_{l + 1}={h + 1}$"
            ax.text(xs[l][h], ys[l], name, ha="center", va="center", fontsize=8, bbox=_HEAD_BOX, zorder=3)
        ax.text(0.0, ys[l], f"layer {l + 1}", ha="left", va="center", fontsize=8, color="0.35")
    ax.text(0.5, 0.08, r"input tokens $x$", ha="center", va="top", fontsize=8)
    ax.text(0.5, 0.93, r"readout $f(x)$", ha="center", va="bottom", fontsize=8)
    for k, (lab, c) in enumerate(zip(labels, colors, strict=True)):
        ax.text(1.12, 0.62 - 0.075 * k, lab, color=c, ha="right", va="center", fontsize=8, fontweight="bold")


def paths_scheme(U, alignment: dict, path_kernels, heads=(2, 2), fig=None):
    """Fig. 1 of the paper, drawn with the numbers given: ``U`` [Pi, Pi] the order parameter; ``alignment``
    ({"GP": [k], "renormalised": [k]}) the label overlaps of the two kernels' leading eigenvectors; ``path_kernels``
    [Pi][Pi] the path-path kernels ``C^{pi pi'}`` (each [P, P], or a thumbnail of one), for ``Pi = prod(heads)``
    paths.  Returns the figure (one axis per panel, plus the colour bar of (b))."""
    U = np.asarray(U, float)
    Pi = U.shape[0]
    if U.shape != (Pi, Pi) or Pi != int(np.prod(heads)):
        raise ValueError(f"U must be [Pi, Pi] with Pi = {int(np.prod(heads))} paths for heads {heads}, got {U.shape}")
    if fig is None:
        fig = plt.figure(figsize=(7.4, 6.2), layout="constrained")
    axes = fig.subplots(2, 2).ravel()
    colors = _path_colors(Pi)
    labels = [",".join(str(h + 1) for h in p) for p in np.ndindex(*heads)]  # "h1,h2" as in the chapters
    draw_network(axes[0], heads, labels=labels, colors=colors)
    axes[0].set_title(r"(a) the network, a sum over paths: $f=\sum_\pi w^\pi V^{(0)}\xi^\pi$", fontsize=9)
    vmax = float(np.abs(U).max())
    im = axes[1].imshow(U, cmap=DIVERGING, vmin=-vmax, vmax=vmax)
    axes[1].set_xticks(range(Pi), labels, rotation=90, fontsize=7)
    axes[1].set_yticks(range(Pi), labels, fontsize=7)
    for k, c in enumerate(colors):
        axes[1].get_xticklabels()[k].set_color(c)
        axes[1].get_yticklabels()[k].set_color(c)
    fig.colorbar(im, ax=axes[1], shrink=0.7, label=r"$U_{\pi\pi'}$")
    axes[1].set_title(r"(b) the order parameter $U_{\pi\pi'}\propto w^\pi\!\cdot w^{\pi'}$", fontsize=9)
    _alignment_panel(axes[2], alignment)
    _kernel_sum_panel(axes[3], U, path_kernels, colors)
    return fig


def _alignment_panel(ax, alignment: dict) -> None:
    gp, rn = (np.asarray(alignment[k], float) for k in ("GP", "renormalised"))
    k = np.arange(1, len(gp) + 1)
    ax.bar(k - 0.2, gp, 0.4, color="0.6", label="GP limit")
    ax.bar(k + 0.2, rn, 0.4, color=PALETTE[0], label="finite width")
    ax.set(xlabel="principal component (by decreasing eigenvalue)", ylabel="label overlap", xticks=k)
    ax.legend(fontsize=7, frameon=False)
    ax.set_title("(c) the kernel's principal components and the labels", fontsize=9)


def _kernel_sum_panel(ax, U, path_kernels, colors) -> None:
    """``K = sum U C``: a grid of path-path kernel thumbnails, each framed by the weight ``U`` gives it."""
    Pi = U.shape[0]
    ax.set(xlim=(0, Pi), ylim=(Pi, -0.9))
    ax.axis("off")
    umax = float(np.abs(U).max())
    for i in range(Pi):
        for j in range(Pi):
            C = np.asarray(path_kernels[i][j], float)
            s = float(np.abs(C).max()) or 1.0
            w = abs(U[i, j]) / umax
            ax.imshow(C / s, cmap="Greys", vmin=-1, vmax=1, extent=(j + 0.08, j + 0.92, i + 0.92, i + 0.08))
            edge = colors[i] if i == j else "0.25"
            ax.add_patch(Rectangle((j + 0.05, i + 0.05), 0.9, 0.9, fill=False, lw=0.5 + 3 * w, ec=edge))
    ax.text(Pi / 2, -0.35, r"$K=\sum_{\pi\pi'}U_{\pi\pi'}C^{\pi\pi'}$", ha="center", fontsize=10)
    title = (
        "(d) the kernel, a weighted sum of path kernels\n(frame width: $|U_{\\pi\\pi'}|$; GP: diagonal, equal weights)"
    )
    ax.set_title(title, fontsize=8)


def markov_network_scheme(ax=None):
    """Fig. 2(b) of the paper: the hidden-Markov-chain network (spec §A.3: layer 1 a good head and a random one,
    layer 2 a uniform head and a random one) and its four paths g, d, a1, a2, in the book's display order.
    Returns the figure."""
    if ax is None:
        fig, ax = plt.subplots(figsize=(5.2, 3.4), layout="constrained")
    else:
        fig = ax.figure
    head_names = [["good", "random"], ["uniform", "random"]]
    # g = good -> uniform, d = random -> uniform, a1 = good -> random, a2 = random -> random (spec §A.3)
    paths = [(0, 0), (1, 0), (0, 1), (1, 1)]
    names = ["g (good)", "d (denoising)", "a1 (adversarial)", "a2 (adversarial)"]
    draw_network(ax, (2, 2), paths=paths, labels=names, colors=_path_colors(4), head_names=head_names)
    return fig
