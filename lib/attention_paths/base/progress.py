"""Progress bars that stay quiet inside the book build and under pytest."""

from __future__ import annotations

import sys

from tqdm import tqdm  # plain text bars: tqdm.auto warns in kernels without ipywidgets

from attention_paths.base import config

__all__ = ["progress_bar", "quiet"]


def quiet() -> bool:
    """True inside the book build / nbval / non-interactive runs, or when ``ATTENTION_PATHS_QUIET`` is set."""
    if config.quiet_requested():
        return True
    if "ipykernel" in sys.modules or "pytest" in sys.modules:
        return True
    return not sys.stderr.isatty()


def progress_bar(iterable, desc: str = "", total: int | None = None, disable: bool | None = None):
    if disable is None:
        disable = quiet()
    return tqdm(iterable, desc=desc, total=total, disable=disable or quiet(), leave=False)
