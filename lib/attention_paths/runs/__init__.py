"""Running and recording: results folders (:mod:`.results`, the one reader and writer), the experiments and
commands of the command line, each one declared record (:mod:`.registry`), run and read back by
:mod:`.experiments`, one writer per folder (:mod:`.lock`), the staged pipeline (:mod:`.pipeline`) and its
stages (:mod:`.stages`, ``python -m attention_paths reproduce``), the claim records of the chapters
(:mod:`.claims`), and the committed ensemble read back (:mod:`.committed_ensemble`)."""

import importlib

from attention_paths.base.deprecation import renamed

_RENAMED = {"ensemble": "committed_ensemble"}  # issue 35 §5: one meaning per module name; the old name, deprecated

__getattr__ = renamed(__name__, _RENAMED, lambda new: importlib.import_module(f"{__name__}.{new}"))
