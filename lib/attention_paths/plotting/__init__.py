"""Figures: the book's style and export (:mod:`.style`) and the panels the chapters share (:mod:`.panels`).

``from attention_paths import plotting`` gives both under one name, e.g. ``plotting.use_style()`` and
``plotting.heatmap_U(ax, U)``.
"""

from attention_paths.plotting.panels import *  # noqa: F403
from attention_paths.plotting.panels import __all__ as _panels
from attention_paths.plotting.style import *  # noqa: F403
from attention_paths.plotting.style import __all__ as _style

__all__ = [*_style, *_panels]
