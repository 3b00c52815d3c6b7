"""One-shot Omniglot: the datasets (:mod:`.data`), episodes (:mod:`.episodes`), the in-context transformer
(:mod:`.model`), its gradient-descent training (:mod:`.training`), checkpoints and committed network folders
(:mod:`.checkpoints`), the named networks (:mod:`.recipe`) and the ensemble's members (:mod:`.members`), spec
experiments §B.1-B.6."""

import importlib

from attention_paths.base.deprecation import renamed

_RENAMED = {"ensemble": "members"}  # issue 35 §5: one meaning per module name; the old name, deprecated

__getattr__ = renamed(__name__, _RENAMED, lambda new: importlib.import_module(f"{__name__}.{new}"))
