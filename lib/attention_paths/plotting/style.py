"""The book's figure style (rcParams, the colour-blind palette, figure sizes) and the export of numbered
figures to PDF and SVG (``$REPRO_FIGURES``)."""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
from pathlib import Path
from typing import Sequence

import matplotlib as mpl
import seaborn as sns
from cycler import cycler

from attention_paths.base import config

__all__ = [
    "DIVERGING",
    "SEQUENTIAL",
    "PALETTE",
    "COLOR_NAMES",
    "ROLES",
    "WIDTH_FULL",
    "WIDTH_HALF",
    "STYLE",
    "EXPORT_ENV",
    "EXPORT_FORMATS",
    "use_style",
    "figsize",
    "export",
]


def _sns_palette(name: str) -> list[str]:
    return sns.color_palette(name).as_hex()


DIVERGING = "RdBu_r"
"""Colour map for anything signed (order parameters U, kernels, correlations); always with symmetric limits."""
SEQUENTIAL = "viridis"
"""Colour map for non-negative quantities (accuracies, off-diagonal kernel ranges)."""


PALETTE = tuple(_sns_palette("colorblind"))
"""Colour cycle C0..C9: seaborn's colour-blind-safe "colorblind" palette (hex strings)."""
COLOR_NAMES = ("blue", "orange", "green", "vermilion", "lilac", "tan", "pink", "grey", "yellow", "sky blue")
"""What the captions call C0..C9 (C3, ``#d55e00``, is vermilion, not red)."""
ROLES = {
    "theory": "C0",  # blue: the finite-width theory (other theory curves: the same blue, other line styles)
    "gp": "C1",  # orange: the GP limit
    "samples": "C2",  # green: posterior samples computed in this build
    "samples_committed": "C4",  # lilac: posterior samples of a committed run
    "network": "C7",  # grey: the gradient-descent-trained network
    "class_plus": "k",  # black: data of class +1
    "class_minus": "C7",  # grey: data of class -1
}
"""One colour per role across the book's figures (issue 26); the Conventions page lists them."""
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
    "savefig.dpi": 300,  # raster content (imshow) inside exported PDF/SVG
    "svg.fonttype": "none",  # text stays text in SVG
    "pdf.fonttype": 42,  # TrueType fonts embedded in PDF (editable, accepted by publishers)
    "ps.fonttype": 42,
}
"""rcParams set by :func:`use_style` (plus ``axes.prop_cycle`` from :data:`PALETTE`)."""


def use_style() -> None:
    """Apply the book's figure style (:data:`STYLE`, colour cycle :data:`PALETTE`) to matplotlib's rcParams.

    Idempotent: calling it again sets the same values.  Call it after ``import matplotlib.pyplot``
    (the inline backend applies its own settings when it is loaded).
    """
    mpl.rcParams.update(STYLE)
    mpl.rcParams["axes.prop_cycle"] = cycler(color=list(PALETTE))


def figsize(ncols: int = 1, nrows: int = 1, aspect: float = 0.75, width: float = WIDTH_FULL) -> tuple[float, float]:
    """Figure size ``(width, height)`` in inches for a grid of panels filling ``width``.

    Each panel is ``width / ncols`` wide and ``aspect`` times as high; e.g. ``figsize(3)`` for three
    panels across the text width, ``figsize(1, width=WIDTH_HALF)`` for a one-column figure.
    """
    if ncols < 1 or nrows < 1 or aspect <= 0 or width <= 0:
        raise ValueError(
            f"figsize needs ncols, nrows >= 1 and positive aspect and width, "
            f"got ncols={ncols}, nrows={nrows}, aspect={aspect}, width={width}"
        )
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
    folder = config.figures_folder()
    if folder is None:
        return []
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
            os.chmod(tmp, mode)  # mkstemp creates 0600; give the usual permissions
        for tmp, final in temps:
            os.replace(tmp, final)
    except BaseException:
        for tmp, _ in temps:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        raise
    return [final for _, final in temps]
