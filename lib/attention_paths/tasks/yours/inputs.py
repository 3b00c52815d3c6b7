"""What ``analyse`` and ``prune`` read: a reader's model (a saved module or a ``module:function`` entry point) and
data (an ``.npz`` of inputs and +-1 labels), each checked with an error that names the problem.

The data file holds ``x_train`` [P, ...] and ``y_train`` [P] and one or more evaluation sets ``x_<name>``,
``y_<name>`` (e.g. ``x_test``, ``y_test``); inputs are what the model's forward takes, batched on the first
axis; labels are +1 / -1, both classes present.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from attention_paths.base.io import load_npz

__all__ = ["UserData", "load_model", "load_data", "check_data"]


@dataclass
class UserData:
    """Training inputs ``x`` [P, ...] and labels ``y`` [P] (+-1), and evaluation sets ``{name: (x, y)}``."""

    x: np.ndarray
    y: np.ndarray
    sets: dict


def load_model(spec) -> nn.Module:
    """The model ``spec`` names: an ``nn.Module`` as is; ``"module:function"`` (an importable function returning
    the model, e.g. ``mypackage.models:trained``); or a file saved by ``torch.save(model, path)`` (its class must
    be importable).  Returned in evaluation mode; anything else raises ``ValueError`` naming ``spec``."""
    if isinstance(spec, nn.Module):
        return spec.eval()
    spec = str(spec)
    if Path(spec).is_file():
        try:
            model = torch.load(spec, weights_only=False, map_location="cpu")
        except Exception as err:  # torch.load raises many types for a foreign file
            raise ValueError(f"cannot read the model file {spec} ({type(err).__name__}: {err})") from None
    elif re.fullmatch(r"[\w.]+:\w+", spec):
        module, _, name = spec.partition(":")
        try:
            factory = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError) as err:
            raise ValueError(f"cannot import the model's entry point {spec} ({err})") from None
        model = factory()
    else:
        raise ValueError(f"--model {spec!r} is neither a file nor a 'module:function' entry point")
    if not isinstance(model, nn.Module):
        raise ValueError(f"the model {spec} is a {type(model).__name__}, not a torch.nn.Module")
    return model.eval()


def load_data(spec) -> UserData:
    """The data ``spec`` names: an ``.npz`` file (the module's layout) or a dict of the same arrays, checked
    (:func:`check_data`)."""
    if isinstance(spec, dict):
        return check_data(spec, "the data")
    path = Path(spec)
    if not path.is_file():
        raise FileNotFoundError(f"the data file {path} does not exist")
    return check_data(load_npz(path), str(path))


def check_data(arrays: dict, where: str) -> UserData:
    """The :class:`UserData` of ``arrays``; ``ValueError`` naming ``where`` and the array for a missing training
    or evaluation set, a length mismatch, an empty set, a non-finite input, labels that are not +-1, or a
    training set of one class (an evaluation set may hold one class)."""
    if "x_train" not in arrays or "y_train" not in arrays:
        raise ValueError(
            f"{where} needs x_train and y_train (and x_<set>, y_<set> to evaluate on); has {sorted(arrays)}"
        )
    names = sorted(k[2:] for k in arrays if k.startswith("x_") and k != "x_train")
    if not names:
        raise ValueError(f"{where} has no evaluation set: add x_test and y_test (any x_<name>, y_<name> pair)")
    out = {}
    for name in ["train", *names]:
        if f"y_{name}" not in arrays:
            raise ValueError(f"{where} has x_{name} but no y_{name}")
        x, y = np.asarray(arrays[f"x_{name}"]), np.asarray(arrays[f"y_{name}"])
        out[name] = _checked_set(x, y, f"{where}: {name}", both_classes=name == "train")
    unknown = sorted(k for k in arrays if not re.fullmatch(r"[xy]_\w+", k) or k[2:] not in out)
    if unknown:
        raise ValueError(f"{where} has arrays {unknown} that are not x_<set> / y_<set> pairs")
    x, y = out.pop("train")
    return UserData(x=x, y=y, sets=out)


def _checked_set(x: np.ndarray, y: np.ndarray, where: str, both_classes: bool) -> tuple[np.ndarray, np.ndarray]:
    if x.ndim < 1 or len(x) == 0:
        raise ValueError(f"{where} is empty (inputs of shape {x.shape})")
    if y.shape != (len(x),):
        raise ValueError(f"{where}: labels of shape {y.shape} for {len(x)} inputs; need one label per input")
    if not np.issubdtype(x.dtype, np.number) or not np.isfinite(x).all():
        raise ValueError(f"{where}: the inputs contain NaN, infinite or non-numeric values")
    bad = ~np.isin(y, (-1.0, 1.0))
    if bad.any():
        raise ValueError(
            f"{where}: labels must be +1 or -1, found {np.unique(y[bad])[:5].tolist()} (map 0/1 labels with 2y - 1)"
        )
    if both_classes and len(np.unique(y)) < 2:
        raise ValueError(f"{where}: all labels are {y[0]:+g}; the task needs both classes")
    return x, y.astype(np.float64)
