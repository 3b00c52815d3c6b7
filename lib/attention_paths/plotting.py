"""Figure helpers shared by the chapters (matplotlib, with seaborn's palettes and heatmaps)."""
from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Sequence

import numpy as np

__all__ = ["heatmap_U", "kernel_image", "tile_average", "alignment_bars", "class_sorted", "accuracy_grid_image",
           "oneshot_accuracy_panels", "pruning_score_bars", "pruning_theory_side", "training_curves",
           "DIVERGING", "SEQUENTIAL", "PALETTE", "WIDTH_FULL", "WIDTH_HALF", "STYLE", "EXPORT_ENV", "EXPORT_FORMATS",
           "use_style", "figsize", "export", "export_figure"]

def _sns_palette(name: str) -> list[str]:
    import seaborn as sns

    return sns.color_palette(name).as_hex()


# Shared figure style (issue 8).  Defined before the helpers so that they can use them as defaults.
DIVERGING = "RdBu_r"
"""Colour map for anything signed (order parameters U, kernels, correlations); always with symmetric limits."""
SEQUENTIAL = "viridis"
"""Colour map for non-negative quantities (accuracies, off-diagonal kernel ranges)."""


def heatmap_U(ax, U, labels: Sequence[str] | None = None, title: str = "", vmax: float | None = None,
              annotate: bool = True, cmap: str = DIVERGING):
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
                        mark=None, annotate: bool | None = None):
    """Accuracy (%) over a temperatures x widths grid as a seaborn heatmap, lowest temperature at the bottom.

    ``mark`` = [(i_tau, i_width)] cells boxed in red; ``annotate`` writes the values in the cells (default:
    when the grid has at most 40 cells).  Returns the heatmap's mesh (for a colour bar).
    """
    import seaborn as sns
    from matplotlib.patches import Rectangle

    acc = np.asarray(acc, dtype=float)
    n_t = acc.shape[0]
    annotate = acc.size <= 40 if annotate is None else annotate
    sns.heatmap(acc[::-1], ax=ax, cmap=SEQUENTIAL, vmin=vmin, vmax=vmax, cbar=False, square=False,
                annot=annotate, fmt=".0f", annot_kws={"fontsize": 7},
                xticklabels=[f"{int(w)}" for w in widths], yticklabels=[f"{t:g}" for t in list(taus)[::-1]])
    ax.tick_params(axis="x", rotation=90 if len(widths) > 5 else 0)
    ax.tick_params(axis="y", rotation=0)
    ax.set_xlabel("width $N$")
    ax.set_ylabel(r"temperature $\tau$")
    for i, j in mark or []:
        ax.add_patch(Rectangle((j, n_t - 1 - i), 1, 1, fill=False, ec="red", lw=1.2))
    ax.set_title(title)
    return ax.collections[0]


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


def pruning_score_bars(ax, summary: dict, set_name: str = "test"):
    """Dual-axis bars of a pruning result (live or reloaded): normalised head scores (left axis, C0) and the
    single-head accuracy drop on ``set_name`` with paired standard errors (right axis, C3), heads by
    ascending score and paired by label (spec §C.4).  Returns the right axis."""
    order = summary["order"]
    x = np.arange(len(order))
    ax.bar(x - 0.2, [summary["scores"][k] for k in order], 0.4, color="C0", label="head score")
    ax.set_ylabel("normalised head score", color="C0")
    ax.set_xticks(x, order)
    ax.set_xlabel("head (layer)head, by ascending score")
    ax2 = ax.twinx()
    singles = summary["singles"]
    ax2.bar(x + 0.2, [singles[k]["drop"][set_name] for k in order], 0.4,
            yerr=[singles[k]["drop_se"][set_name] for k in order], color="C3", alpha=0.8, capsize=2,
            label="accuracy drop")
    ax2.set_ylabel("accuracy drop (points)", color="C3")
    ax2.axhline(0, color="0.5", lw=0.6)
    ax2.spines["right"].set_visible(True)
    return ax2


def pruning_theory_side(ax_drops, ax_stability, summary: dict):
    """Left: network-side against theory-side single-head drops (in distribution); right: the Spearman
    correlation of the head ranking at every grid point with the panel point's.  Returns the image."""
    labels = list(summary["singles"])
    th = [summary["theory_side"][k]["test"] for k in labels]
    nw = [summary["singles"][k]["drop"]["test"] for k in labels]
    ax_drops.errorbar(th, nw, yerr=[summary["singles"][k]["drop_se"]["test"] for k in labels], fmt="o", ms=4)
    for k, u, v in zip(labels, th, nw):
        ax_drops.annotate(k, (u, v), fontsize=7, xytext=(3, 3), textcoords="offset points")
    ax_drops.set_xlabel("theory-side drop (points)")
    ax_drops.set_ylabel("network-side drop (points)")
    im = ax_stability.imshow(np.asarray(summary["stability"], float), cmap=DIVERGING, vmin=-1, vmax=1,
                             origin="lower", aspect="auto")
    ax_stability.set_xticks(range(len(summary["widths"])), [int(w) for w in summary["widths"]])
    ax_stability.set_yticks(range(len(summary["taus"])), [f"{float(t):g}" for t in summary["taus"]])
    ax_stability.set_xlabel("width $N$")
    ax_stability.set_ylabel(r"temperature $\tau$")
    return im


def training_curves(ax_loss, ax_acc, records: dict, sets=("val", "test", "MNIST", "FashionMNIST")):
    """Training loss and evaluation accuracies against step for one or more training records
    ({name: record}); one line style per record, one colour per evaluation set."""
    styles = ("-", "--", ":", "-.")
    names = {"val": "meta-validation", "test": "meta-test", "MNIST": "MNIST", "FashionMNIST": "FashionMNIST"}
    for (name, rec), ls in zip(records.items(), styles):
        hist = rec["history"]
        steps = [h["step"] for h in hist]
        ax_loss.plot(steps, [h["train_loss"] for h in hist], ls, color="0.2", label=name)
        for i, key in enumerate(sets):
            ax_acc.plot(steps, [h[key]["accuracy"] for h in hist], ls, color=f"C{i}",
                        label=f"{names.get(key, key)} ({name})")
    ax_loss.set_xlabel("step")
    ax_loss.set_ylabel("training loss (MSE)")
    ax_acc.axhline(50, color="0.6", lw=0.8, ls=":")
    ax_acc.set_xlabel("step")
    ax_acc.set_ylabel("accuracy (%)")


# --------------------------------------------------------------------------------------------------
# Shared style and on-demand export (issue 8)
# --------------------------------------------------------------------------------------------------

PALETTE = tuple(_sns_palette("colorblind"))
"""Colour cycle C0..C9: seaborn's colour-blind-safe "colorblind" palette (hex strings)."""
WIDTH_FULL = 7.0
"""Width (inches) of a full-text-width figure."""
WIDTH_HALF = 3.4
"""Width (inches) of a half-width (one-column) figure."""
EXPORT_ENV = "REPRO_FIGURES"
"""Environment variable naming the folder that :func:`export` writes into (unset or empty: no export)."""
EXPORT_FORMATS = ("pdf", "svg")

STYLE = {
    "figure.dpi": 110,
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "image.cmap": SEQUENTIAL,
    "savefig.bbox": "tight",
    "savefig.dpi": 300,          # raster content (imshow) inside exported PDF/SVG
    "svg.fonttype": "none",      # text stays text in SVG
    "pdf.fonttype": 42,          # TrueType fonts embedded in PDF (editable, accepted by publishers)
    "ps.fonttype": 42,
}
"""rcParams set by :func:`use_style` (plus ``axes.prop_cycle`` from :data:`PALETTE`)."""


def use_style() -> None:
    """Apply the book's figure style (:data:`STYLE`, colour cycle :data:`PALETTE`) to matplotlib's rcParams.

    Idempotent: calling it again sets the same values.  Call it after ``import matplotlib.pyplot``
    (the inline backend applies its own settings when it is loaded).
    """
    import matplotlib as mpl
    from cycler import cycler

    mpl.rcParams.update(STYLE)
    mpl.rcParams["axes.prop_cycle"] = cycler(color=list(PALETTE))


def figsize(ncols: int = 1, nrows: int = 1, aspect: float = 0.75, width: float = WIDTH_FULL) -> tuple[float, float]:
    """Figure size ``(width, height)`` in inches for a grid of panels filling ``width``.

    Each panel is ``width / ncols`` wide and ``aspect`` times as high; e.g. ``figsize(3)`` for three
    panels across the text width, ``figsize(1, width=WIDTH_HALF)`` for a one-column figure.
    """
    if ncols < 1 or nrows < 1 or aspect <= 0 or width <= 0:
        raise ValueError(f"figsize needs ncols, nrows >= 1 and positive aspect and width, "
                         f"got ncols={ncols}, nrows={nrows}, aspect={aspect}, width={width}")
    return (float(width), float(nrows * width / ncols * aspect))


def _check_name(name) -> str:
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"figure name must be a non-empty string, got {name!r}")
    seps = {"/", "\\", os.sep} | ({os.altsep} if os.altsep else set())
    if any(s in name for s in seps) or name in (".", "..") or "\0" in name:
        raise ValueError(f"figure name must be a plain file name without path separators, got {name!r}")
    return name


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def _quiet_font_subsetting():
    """Silence fontTools' warnings while matplotlib subsets fonts for the PDF (they would show in the book)."""
    import logging

    logger = logging.getLogger("fontTools")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def export(fig, name: str, formats: Sequence[str] = EXPORT_FORMATS) -> list[Path]:
    """Write ``fig`` as ``<folder>/<name>.pdf`` and ``<folder>/<name>.svg`` when ``$REPRO_FIGURES`` names a folder.

    Returns the paths written; with the variable unset or empty it does nothing and returns ``[]``.
    The folder is created if needed; a relative folder is taken from the current directory (a chapter
    executed by the book build runs in ``book/``).  Every format is first saved to a temporary file in
    the folder and only then renamed (``os.replace``) to its final name, so an error leaves neither a
    half-written file nor a temporary one.  The figure is neither closed nor changed.  ``name`` (e.g.
    the figure's label ``"fig-hmc-U"``) must be a plain file name: a ``ValueError`` otherwise, also
    when exporting is off.
    """
    _check_name(name)
    folder = os.environ.get(EXPORT_ENV, "").strip()
    if not folder:
        return []
    folder = Path(folder).expanduser()
    folder.mkdir(parents=True, exist_ok=True)
    metadata = {"pdf": {"CreationDate": None}, "svg": {"Date": None}}  # byte-reproducible exports
    mode = 0o666 & ~_umask()
    temps: list[tuple[str, Path]] = []
    try:
        for fmt in formats:
            fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=f".{fmt}.part", dir=folder)
            temps.append((tmp, folder / f"{name}.{fmt}"))
            with os.fdopen(fd, "wb") as fh, _quiet_font_subsetting():
                kw = {"metadata": metadata[fmt]} if fmt in metadata else {}
                fig.savefig(fh, format=fmt, **kw)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp, mode)    # mkstemp creates 0600; give the usual permissions
        for tmp, final in temps:
            os.replace(tmp, final)
    except BaseException:
        for tmp, _ in temps:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        raise
    return [final for _, final in temps]


export_figure = export
