"""Atomic result files: written to a temporary file in the target folder, then renamed."""

from __future__ import annotations

import json
import os
import tempfile
import zipfile
from pathlib import Path

import numpy as np

__all__ = ["atomic_write", "atomic_write_json", "atomic_savez", "load_json", "load_npz"]


def atomic_write(path, write) -> Path:
    """Write a file atomically: ``write(fh)`` into a temporary file in the target folder, then rename it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp's 0600 would hide shared results from other users
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def _jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, Path):
        return str(obj)
    return obj


def atomic_write_json(path, data) -> Path:
    """Write ``data`` (numpy values allowed) as indented JSON, atomically."""
    text = json.dumps(_jsonable(data), indent=2, sort_keys=False, allow_nan=True) + "\n"
    return atomic_write(path, lambda fh: fh.write(text.encode()))


def atomic_savez(path, **arrays) -> Path:
    """``numpy.savez_compressed`` to ``path``, atomically."""
    return atomic_write(path, lambda fh: np.savez_compressed(fh, **arrays))


def load_json(path) -> dict:
    path = Path(path)
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise FileNotFoundError(f"result file {path} does not exist") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"result file {path} is corrupted (invalid JSON: {err})") from None


def load_npz(path) -> dict:
    path = Path(path)
    try:
        # our own handle: numpy leaves its file open when a truncated archive fails to open
        with open(path, "rb") as fh, np.load(fh, allow_pickle=False) as f:
            return {k: f[k] for k in f.files}
    except FileNotFoundError:
        raise FileNotFoundError(f"result file {path} does not exist") from None
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as err:
        raise ValueError(f"result file {path} is corrupted ({err})") from None
