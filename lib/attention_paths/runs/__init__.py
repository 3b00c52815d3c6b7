"""Running and recording: results folders (:mod:`.results`, the one reader and writer), the experiments and
commands of the command line, each one declared record (:mod:`.registry`), run and read back by
:mod:`.experiments`, one writer per folder (:mod:`.lock`), the staged pipeline (:mod:`.pipeline`) and its
stages (:mod:`.stages`, ``python -m attention_paths reproduce``), the claim records of the chapters
(:mod:`.claims`), and the committed ensemble read back (:mod:`.committed_ensemble`)."""

import importlib
import warnings

_RENAMED = {"ensemble": "committed_ensemble"}  # issue 35 §5: one meaning per module name; the old name, deprecated


def __getattr__(name):
    """The deprecated module name ``ensemble`` (now :mod:`.committed_ensemble`), with a warning."""
    if name in _RENAMED:
        warnings.warn(
            f"{__name__}.{name} is now {__name__}.{_RENAMED[name]}; the old name goes in the next release",
            DeprecationWarning,
            stacklevel=2,
        )
        return importlib.import_module(f"{__name__}.{_RENAMED[name]}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
