"""Run-time configuration read from the environment, in one place.

``REPRO_SCALE`` selects the problem sizes of every experiment: ``quick`` (default; CPU,
minutes) or ``paper`` (the paper's sizes; GPU where needed).  ``ATTENTION_PATHS_DATA`` points
at the dataset root (MNIST, FashionMNIST, Omniglot).
"""
from __future__ import annotations

import os
from pathlib import Path

SCALES = ("quick", "paper")


def get_scale(scale: str | None = None) -> str:
    """Return the reproduction scale: ``scale`` if given, else ``$REPRO_SCALE``, else ``quick``.

    Raises
    ------
    ValueError
        If the value is not one of ``quick`` or ``paper``.
    """
    value = scale if scale is not None else os.environ.get("REPRO_SCALE", "quick")
    value = value.strip().lower()
    if value not in SCALES:
        raise ValueError(
            f"REPRO_SCALE must be one of {SCALES}, got {value!r}; "
            "set e.g. `export REPRO_SCALE=quick`."
        )
    return value


def data_root() -> Path:
    """Dataset root: ``$ATTENTION_PATHS_DATA`` or ``~/.cache/attention-paths/data``."""
    env = os.environ.get("ATTENTION_PATHS_DATA")
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "attention-paths" / "data"
