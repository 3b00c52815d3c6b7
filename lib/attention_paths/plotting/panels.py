"""The figure panels shared by the chapters (matplotlib, with seaborn's heatmaps)."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import seaborn as sns
from matplotlib.patches import Rectangle

from attention_paths.plotting.style import DIVERGING, ROLES, SEQUENTIAL

__all__ = [
    "heatmap_U",
    "SET_COLORS",
    "width_label",
    "kernel_image",
    "tile_average",
    "alignment_bars",
    "class_sorted",
    "accuracy_grid_image",
    "oneshot_accuracy_panels",
    "pruning_score_bars",
    "pruning_theory_side",
    "training_curves",
    "score_drop_scatter",
    "heatmap_U_by_head",
    "cumulative_pruning_panel",
]


def heatmap_U(
    ax,
    U,
    labels: Sequence[str] | None = None,
    title: str = "",
    vmax: float | None = None,
    annotate: bool = True,
    cmap: str = DIVERGING,
):
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
                ax.text(
                    j,
                    i,
                    f"{U[i, j]:.2f}",
                    ha="center",
                    va="center",
                    fontsize=8,
                    color="white" if abs(U[i, j]) > 0.6 * vmax else "black",
                )
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


def kernel_image(
    ax, K, order=None, title: str = "", tile: int | None = None, cmap: str | None = None, limits: str = "symmetric"
):
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
        im = ax.imshow(K, cmap=cmap or DIVERGING, vmin=-vmax, vmax=vmax)
    elif limits == "off-diagonal":
        off = K[~np.eye(K.shape[0], dtype=bool)]
        im = ax.imshow(K, cmap=cmap or SEQUENTIAL, vmin=np.nanmin(off), vmax=np.nanmax(off))
    else:
        raise ValueError(f"limits must be 'symmetric' or 'off-diagonal', got {limits!r}")
    ax.set_title(title)
    ax.set_xticks([])
    ax.set_yticks([])
    return im


def alignment_bars(ax, overlaps: dict, k: int | None = None, colors: dict | None = None):
    """Side-by-side bars of kernel-label overlaps ``|u_k^T Y|/sqrt(P)`` for several kernels.

    ``overlaps`` maps a kernel's name to its overlaps, shape (n_eigenvectors,). Bars take their colour from
    ``colors[name]``; by default the GP kernel ("GP") is drawn in the GP role's colour and any other kernel
    (the renormalised one) in the theory's (:data:`~attention_paths.plotting.style.ROLES`).
    """
    names = list(overlaps)
    n = len(names)
    k = k or min(len(v) for v in overlaps.values())
    width = 0.8 / n
    colors = colors or {name: ROLES["gp"] if name == "GP" else ROLES["theory"] for name in names}
    for j, name in enumerate(names):
        ax.bar(
            np.arange(1, k + 1) + (j - (n - 1) / 2) * width,
            np.asarray(overlaps[name])[:k],
            width,
            label=name,
            color=colors[name],
        )
    ax.set_xlabel("eigenvector rank $k$ (by decreasing eigenvalue)")
    ax.set_ylabel(r"$|u_k^\top Y|/\sqrt{P}$")
    ax.legend(frameon=False)


def width_label(N) -> str:
    """A width as a short tick label: 10, 500, 1k, 10k (wide grids' labels then do not run into each other)."""
    N = float(N)
    return f"{N / 1000:g}k" if N >= 1000 else f"{N:g}"


def accuracy_grid_image(
    ax,
    acc,
    widths,
    taus,
    title: str = "",
    vmin: float | None = None,
    vmax: float | None = None,
    mark=None,
    annotate: bool | None = None,
):
    """Accuracy (%) over a temperatures x widths grid as a seaborn heatmap, lowest temperature at the bottom.

    ``mark`` = [(i_tau, i_width)] cells boxed in red; ``annotate`` writes the values in the cells (default:
    when the grid has at most 40 cells).  Returns the heatmap's mesh (for a colour bar).
    """
    acc = np.asarray(acc, dtype=float)
    n_t = acc.shape[0]
    annotate = acc.size <= 40 if annotate is None else annotate
    sns.heatmap(
        acc[::-1],
        ax=ax,
        cmap=SEQUENTIAL,
        vmin=vmin,
        vmax=vmax,
        cbar=False,
        square=False,
        annot=annotate,
        fmt=".0f",
        annot_kws={"fontsize": 7},
        xticklabels=[width_label(w) for w in widths],
        yticklabels=[f"{t:g}" for t in list(taus)[::-1]],
    )
    ax.tick_params(axis="x", rotation=0)
    ax.tick_params(axis="y", rotation=0)
    ax.set_xlabel("width $N$")
    ax.set_ylabel(r"temperature $\tau$")
    for i, j in mark or []:
        ax.add_patch(Rectangle((j, n_t - 1 - i), 1, 1, fill=False, ec="red", lw=1.2))
    ax.set_title(title)
    return ax.collections[0]


def oneshot_accuracy_panels(axes, result, sets=("test", "MNIST", "FashionMNIST"), titles=None, more_samples=()):
    """Accuracy against width for an ``omniglot-theory`` result (a ``OneShotResult``, live or reloaded), one
    panel per set.

    Theory at the validation-selected temperature (solid), at the test-selected one (the paper's protocol,
    dashed), at ``tau = 0.5`` (dotted), sampled posterior points at ``tau = 0.5``, the GP limit at its
    validation-selected temperature, and the trained network's own accuracy.  ``more_samples``: results of
    the ``omniglot-sampling`` experiment on the same network, drawn as filled dots at their own widths and
    temperature, each beside the theory at the same point (a cross).
    """
    widths = np.asarray(result.widths)
    taus = list(np.asarray(result.taus, float))
    cfg = result.config
    i_panel = taus.index(cfg["panel_tau"])
    sel = result.select
    for ax, s in zip(axes, sets, strict=False):
        ours = np.asarray(sel["val"]["theory"].accuracy[s], float)
        paper = np.asarray(sel["test"]["theory"].accuracy[s], float)
        ax.plot(widths, ours, "o-", color=ROLES["theory"], ms=3.5, label=r"theory, $\tau$ selected on validation")
        label = r"theory, $\tau$ selected on test (paper)"
        ax.plot(widths, paper, "s--", color=ROLES["theory"], ms=3, alpha=0.55, label=label)
        ax.plot(
            widths,
            np.asarray(result.grid_accuracy[s], float)[i_panel],
            ":",
            color=ROLES["theory"],
            lw=1.2,
            label=rf"theory, $\tau={cfg['panel_tau']:g}$",
        )
        for N, run in result.sampled.items():
            ax.plot(
                [int(N)],
                [run.sets[s]["sampled"]],
                "D",
                color=ROLES["samples"],
                ms=6,
                mfc="none",
                mew=1.5,
                label=rf"sampled posterior, $\tau={cfg['sampling']['tau']:g}$",
            )
        for extra in more_samples:
            tau = float(extra.config["tau"])
            for N, run in extra.sampled.items():
                ax.plot([int(N)], [run.sets[s]["sampled"]], "o", color=ROLES["samples"], ms=6,
                        label=rf"sampled posterior, $\tau={tau:g}$")  # fmt: skip
                ax.plot([int(N)], [run.sets[s]["theory"]], "x", color=ROLES["theory"], ms=7, mew=1.5,
                        label=rf"theory at the sampled point, $\tau={tau:g}$")  # fmt: skip
        gp = float(np.asarray(sel["val"]["gp"].accuracy[s]))
        gp_tau = float(np.asarray(sel["val"]["gp"].tau))
        ax.axhline(gp, color=ROLES["gp"], lw=1.2, label=rf"GP limit ($\tau={gp_tau:g}$)")
        ax.axhline(result.network_accuracy[s], color=ROLES["network"], lw=1, ls="-.", label="trained network")
        ax.set_xscale("log")
        ax.set_xlabel("width $N$")
        ax.set_title((titles or {}).get(s, s))
    axes[0].set_ylabel("accuracy (%)")
    return axes


def pruning_score_bars(ax_score, ax_drop, result, set_name: str = "test"):
    """Two aligned bar panels of a pruning result (a ``PruningResult``), heads by ascending score on one shared
    axis: normalised head scores (top, C0) and the single-head accuracy drop on ``set_name`` with paired
    standard errors (bottom, C3), paired by label (spec §C.4).  Two panels rather than two y axes on one:
    the heights of a score and a drop are not comparable."""
    order = result.order
    x = np.arange(len(order))
    ax_score.bar(x, [result.scores[k] for k in order], 0.6, color="C0")
    ax_score.set_ylabel("head score\n(normalised)")
    singles = result.singles
    ax_drop.bar(
        x,
        [singles[k].drop[set_name] for k in order],
        0.6,
        yerr=[singles[k].drop_se[set_name] for k in order],
        color="C3",
        capsize=2,
    )
    ax_drop.axhline(0, color="0.5", lw=0.6)
    ax_drop.set_ylabel("accuracy drop\n(points)")
    ax_drop.set_xticks(x, order)
    ax_drop.set_xlabel("head (layer)head, by ascending score")
    return ax_drop


def pruning_theory_side(ax_drops, ax_stability, result):
    """Left: network-side against theory-side single-head drops (in distribution); right: the Spearman
    correlation of the head ranking at every grid point with the panel point's.  Returns the image."""
    labels = list(result.singles)
    th = [result.theory_side[k]["test"] for k in labels]
    nw = [result.singles[k].drop["test"] for k in labels]
    ax_drops.errorbar(th, nw, yerr=[result.singles[k].drop_se["test"] for k in labels], fmt="o", ms=4)
    for k, u, v in zip(labels, th, nw, strict=True):
        ax_drops.annotate(k, (u, v), fontsize=7, xytext=(3, 3), textcoords="offset points")
    ax_drops.set_xlabel("theory-side drop (points)")
    ax_drops.set_ylabel("network-side drop (points)")
    im = ax_stability.imshow(
        np.asarray(result.stability, float), cmap=DIVERGING, vmin=-1, vmax=1, origin="lower", aspect="auto"
    )
    ax_stability.set_xticks(range(len(result.widths)), [width_label(w) for w in result.widths], rotation=90)
    ax_stability.set_yticks(range(len(result.taus)), [f"{float(t):g}" for t in result.taus])
    ax_stability.set_xlabel("width $N$")
    ax_stability.set_ylabel(r"temperature $\tau$")
    return im


# one colour per evaluation set, far apart in hue (meta-test and FashionMNIST were orange and vermilion)
SET_COLORS = {"val": "C0", "test": "C2", "MNIST": "C4", "FashionMNIST": "C1"}


def training_curves(ax_loss, ax_acc, records: dict, sets=("val", "test", "MNIST", "FashionMNIST")):
    """Training loss and evaluation accuracies against step for one or more training records
    ({name: record}); one line style per record, one colour per evaluation set."""
    styles = ("-", "--", ":", "-.")
    names = {"val": "meta-validation", "test": "meta-test", "MNIST": "MNIST", "FashionMNIST": "FashionMNIST"}
    for (name, rec), ls in zip(records.items(), styles, strict=False):
        hist = rec["history"]
        steps = [h["step"] for h in hist]
        ax_loss.plot(steps, [h["train_loss"] for h in hist], ls, color="0.2", label=name)
        for key in sets:
            ax_acc.plot(
                steps,
                [h[key]["accuracy"] for h in hist],
                ls,
                color=SET_COLORS.get(key, "0.3"),
                label=f"{names.get(key, key)} ({name})",
            )
    ax_loss.set_xlabel("step")
    ax_loss.set_ylabel("training loss (MSE)")
    ax_acc.axhline(50, color="0.6", lw=0.8, ls=":")
    ax_acc.set_xlabel("step")
    ax_acc.set_ylabel("accuracy (%)")


def score_drop_scatter(ax, rows: list, reference: dict | None = None):
    """Head score against single-head accuracy drop (in distribution, paired standard errors) for every
    network of an ensemble: one marker and colour per network, the two lowest-scoring heads of each
    network ringed.  ``rows`` are :class:`attention_paths.tasks.ensemble.NetworkRow` records."""
    markers = "osD^v<>p"
    # networks are not a role of ROLES: colours that no role uses (not theory blue, GP orange, samples green)
    colors = ("C3", "C9", "C5", "C6", "C8", "C4", "C7")
    for i, r in enumerate(rows):
        heads = sorted(r.scores, key=r.scores.get)
        s = np.array([r.scores[h] for h in heads])
        d = np.array([r.single_drops[h][0] for h in heads])
        e = np.array([r.single_drops[h][1] for h in heads])
        c = colors[i % len(colors)]
        ax.errorbar(
            s,
            d,
            yerr=e,
            fmt=markers[i % len(markers)],
            color=c,
            ms=5,
            capsize=2,
            lw=0.8,
            label=f"seed {r.seed} (Spearman {r.spearman[0]:+.2f})",
        )
        ax.scatter(s[:2], d[:2], s=120, facecolors="none", edgecolors=c, lw=1.0)
    ax.axhline(0, color="0.5", lw=0.6)
    ax.set_xlabel("normalised head score (theory, $N=10$, $\\tau=0.5$)")
    ax.set_ylabel("accuracy drop, head removed alone (points)")
    ax.legend(frameon=False, fontsize=8, loc="upper left")
    return ax


def heatmap_U_by_head(ax, U, heads, vmax: float | None = None, cmap: str = DIVERGING):
    """An order parameter of many paths ([Pi, Pi], ``heads`` per layer, paths flattened first layer slowest) with
    its paths grouped by head: blocks of the first layer's heads divided by solid lines and labelled "(1)h" at
    their centres, the second layer's heads within them by thin lines (3 layers); diverging colours centred at
    zero.  Readable at 64 x 64, where one label per path is not."""
    U = np.asarray(U)
    heads = tuple(int(h) for h in heads)
    n = int(np.prod(heads))
    if U.shape != (n, n):
        raise ValueError(f"U of shape {U.shape} is not that of {n} paths (heads per layer {heads})")
    vmax = float(np.abs(U).max()) if vmax is None else vmax
    im = ax.imshow(U, cmap=cmap, vmin=-vmax, vmax=vmax, interpolation="nearest")
    block = n // heads[0]
    for k in range(1, heads[0]):
        for line in (ax.axhline, ax.axvline):
            line(k * block - 0.5, color="0.15", lw=0.8)
    if len(heads) > 2:
        sub = block // heads[1]
        for k in range(1, n // sub):
            if k % heads[1]:
                for line in (ax.axhline, ax.axvline):
                    line(k * sub - 0.5, color="0.35", lw=0.5, ls=(0, (2, 2)))
    centres = [k * block + (block - 1) / 2 for k in range(heads[0])]
    labels = [f"(1){k + 1}" for k in range(heads[0])]
    ax.set_xticks(centres, labels, rotation=90 if heads[0] > 4 else 0)
    ax.set_yticks(centres, labels)
    ax.tick_params(length=0)
    return im


def cumulative_pruning_panel(ax, cp, on: str = "test", band=(10.0, 90.0), accuracy: bool = False, combinations=None):
    """Cumulative pruning (a :class:`attention_paths.tasks.pruning.CumulativePruning`): accuracy drop on set
    ``on`` against the number of heads removed, for the theory-score order (with paired standard errors), the
    value-norm and reference orders, and the random orders' median and ``band`` percentiles.

    ``accuracy``: draw the pruned network's accuracy (%) instead of the drop (the paper's Fig. 3(f)), with the
    unpruned accuracy as a line; ``combinations`` ({label: a pruning result's combination, with ``heads`` and
    ``accuracy``}) adds those head sets as labelled points at their number of heads."""
    k = np.arange(cp.K + 1)
    full = float(cp.curves["theory score"].accuracy[on][0])

    def y(drop):
        return full - np.asarray(drop, float) if accuracy else np.asarray(drop, float)

    lo, med, hi = cp.random.band(on, (band[0], 50.0, band[1]))
    grey = "0.55"
    n = len(cp.random.orders)
    ax.fill_between(
        k, y(lo), y(hi), color=grey, alpha=0.25, lw=0, label=f"{n} random orders ({band[0]:g}-{band[1]:g}%)"
    )
    ax.plot(k, y(med), color=grey, lw=1.2, label="random orders, median")
    # the theory's blue; the baseline and the reference in colours no role of the book uses
    styles = {
        "theory score": (ROLES["theory"], "o", "-"),
        "value norm": ("C5", "s", "--"),
        "reference (literal)": ("C3", "D", ":"),
    }
    for label, c in cp.curves.items():
        color, marker, ls = styles.get(label, ("C6", "^", "-."))
        if label == "theory score":
            ax.errorbar(k, y(c.drop[on]), yerr=c.drop_se[on], color=color, marker=marker, ms=4, ls=ls, capsize=2,
                        lw=1.2, label=label)  # fmt: skip
        else:
            ax.plot(k, y(c.drop[on]), color=color, marker=marker, ms=3.5, ls=ls, lw=1.0, label=label)
    for j, (label, comb) in enumerate((combinations or {}).items()):
        value = float(comb.accuracy[on]) if accuracy else float(comb.drop[on])
        ax.plot(len(comb.heads) + 0.1 * (j % 3 - 1), value, ls="none", marker="*PXvh^D"[j % 7], ms=7,
                color=f"C{2 + j % 8}", mec="k", mew=0.4, label=f"{label}: {', '.join(comb.heads)}")  # fmt: skip
    ax.axhline(full if accuracy else 0, color="0.4", lw=0.6)
    ax.set_xlabel("heads removed")
    ax.set_ylabel("accuracy (%)" if accuracy else "accuracy drop (points)")
    ax.set_xticks(k)
    return ax
