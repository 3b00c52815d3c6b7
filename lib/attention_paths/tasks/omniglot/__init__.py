"""One-shot Omniglot: the datasets (:mod:`.data`), episodes (:mod:`.episodes`), the in-context transformer
(:mod:`.model`), its gradient-descent training (:mod:`.training`), checkpoints and committed network folders
(:mod:`.checkpoints`), the named networks (:mod:`.recipe`) and the ensemble's members (:mod:`.members`), spec
experiments §B.1-B.6."""

import importlib
import warnings

_RENAMED = {"ensemble": "members"}  # issue 35 §5: one meaning per module name; the old name, deprecated


def __getattr__(name):
    """The deprecated module name ``ensemble`` (now :mod:`.members`), with a warning."""
    if name in _RENAMED:
        warnings.warn(
            f"{__name__}.{name} is now {__name__}.{_RENAMED[name]}; the old name goes in the next release",
            DeprecationWarning,
            stacklevel=2,
        )
        return importlib.import_module(f"{__name__}.{_RENAMED[name]}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
