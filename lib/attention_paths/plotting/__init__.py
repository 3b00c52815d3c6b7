"""Figures: the book's style and export (:mod:`.style`), the panels the chapters share (:mod:`.panels`) and the
schematics of the paper's Fig. 1 and Fig. 2(b) (:mod:`.schematics`).

``from attention_paths import plotting`` gives all three under one name, e.g. ``plotting.use_style()``,
``plotting.heatmap_U(ax, U)`` and ``plotting.paths_scheme(U, alignment, path_kernels)``.
"""

from attention_paths.plotting.panels import *  # noqa: F403
from attention_paths.plotting.panels import __all__ as _panels
from attention_paths.plotting.schematics import *  # noqa: F403
from attention_paths.plotting.schematics import __all__ as _schematics
from attention_paths.plotting.style import *  # noqa: F403
from attention_paths.plotting.style import __all__ as _style

__all__ = [*_style, *_panels, *_schematics]
