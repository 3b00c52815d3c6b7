"""One serialiser for results (issue 35 §2): any result dataclass to ``(summary, arrays)`` and back, from its fields.

:func:`to_folder` walks a result's dataclass fields: nested dataclasses (and dicts, lists and tuples of them)
become JSON objects; numpy arrays go to ``arrays.npz`` under a key made of the field path (``F`` of set
``test`` -> ``F_test``); everything else goes to ``summary.json``.  :func:`from_folder` reads them back into
the same type, from its type hints (``dict[int, X]`` keys become ints again, lists of a ``tuple`` field
tuples), and refuses a summary key or an array no field declares, and a declared field that is missing.
The results folder itself (format version, digests, lock) is :mod:`attention_paths.runs.results`'.

A type whose stored layout is not the default one declares it, field by field, in a class attribute
``STORED = {field name: Stored(...)}`` (:class:`Stored`): another name, JSON instead of an array, not stored
(live only) or derived on reading from what is stored, how ``None`` is written, where its arrays go.
``EXPERIMENT`` (a class attribute) is written first as ``summary["experiment"]``; ``LAYOUT`` (a class
attribute, an integer) next as ``summary["layout"]``: the version of the type's own stored layout, beside the
results format of :mod:`attention_paths.runs.results`, raised when a type's layout changes (a folder of another
layout is refused by :func:`from_folder`; the type's reader may read an older one itself).
``SUMMARY_ORDER`` (a class attribute, a tuple of summary keys) orders the top-level keys of the summary where the
order a type has always written differs from its fields' order (which orders the arrays), so that a reloaded
result writes its files back byte for byte; keys it does not name follow in field order.

>>> from dataclasses import dataclass
>>> import numpy as np
>>> @dataclass
... class Run:
...     name: str
...     F: dict[str, np.ndarray]
...     STORED = {"name": Stored(key="label")}
>>> summary, arrays = to_folder(Run(name="a", F={"test": np.zeros(2)}))
>>> summary, sorted(arrays)
({'label': 'a'}, ['F_test'])
>>> from_folder(Run, summary, arrays).F["test"].tolist()
[0.0, 0.0]
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

__all__ = ["Stored", "to_folder", "from_folder", "read_checked", "check_arrays", "FolderError"]

_NOTHING = object()  # a value stored wholly in arrays.npz: no summary entry


class FolderError(ValueError):
    """A results folder that does not hold the fields of its result type (a ``ValueError``)."""


@dataclass(frozen=True)
class Stored:
    """How one field of a result type is stored, when not by default.

    ``key``: its name in ``summary.json`` and in its array keys (default: the field's name).
    ``to``: ``"auto"`` (arrays to ``arrays.npz``, the rest to ``summary.json``), ``"json"`` (arrays too, as
    lists), ``"live"`` (not stored: ``None`` or the default on reading) or ``"derived"`` (not stored,
    ``derive(ctx)`` on reading; ``ctx``: :class:`_Context`).
    ``array``: the key its arrays start with, instead of the path of field names (``"U_gd"``, ``"sample"``).
    ``item``: the key part of a dict entry's arrays, a template of the dict key (``"N{}"``: ``sample_N10_mean``).
    ``none``: how ``None`` is written: ``"null"``, ``"omit"`` (no entry; a missing entry reads as ``None``) or
    ``"empty"`` (``{}``).  ``flatten``: a dict whose entries are written into its parent's record (their arrays
    keyed by the parent's path and the entry's key).  ``indexed``: a list whose items' arrays go to
    ``arrays.npz`` under the item's index (``item``: its key part; default: a list is written whole to
    ``summary.json``).  ``load``: applied to the value read back (a type its hints cannot rebuild, e.g. a
    config dataclass held as ``object``).
    """

    key: str | None = None
    to: str = "auto"
    array: str | None = None
    item: str = "{}"
    none: str = "null"
    flatten: bool = False
    derive: Callable | None = None
    indexed: bool = False
    load: Callable | None = None


_DEFAULT = Stored()


def _spec(cls, name: str) -> Stored:
    return getattr(cls, "STORED", {}).get(name, _DEFAULT)


def _hints(cls) -> dict:
    return typing.get_type_hints(cls)


# ------------------------------------------------------------------------------------------ writing
def to_folder(result) -> tuple[dict, dict]:
    """``(summary, arrays)`` of a result dataclass: its fields as :mod:`attention_paths.runs.results` writes
    them (``summary.json``, ``arrays.npz``)."""
    arrays: dict[str, np.ndarray] = {}
    summary = _encode(result, (), arrays, json=False)
    order = getattr(type(result), "SUMMARY_ORDER", ())
    if order:  # the stored key order, when the fields' order (the arrays' order) differs from it
        summary = {**{k: summary[k] for k in order if k in summary}, **summary}
    layout = getattr(type(result), "LAYOUT", None)
    if layout is not None:
        summary = {"layout": layout, **summary}
    experiment = getattr(type(result), "EXPERIMENT", None)
    if experiment is not None:
        summary = {"experiment": experiment, **summary}
    return summary, arrays


def _typed_arrays(hint) -> bool:
    """Whether a field of type ``hint`` may hold arrays stored in arrays.npz: an array, a dataclass, or a dict,
    list or tuple of them; arrays in an untyped container (``dict``, ``dict[str, dict]``) go to summary.json."""
    hint = _unwrap(hint)
    if hint is np.ndarray or (isinstance(hint, type) and dataclasses.is_dataclass(hint)):
        return True
    return any(_typed_arrays(a) for a in typing.get_args(hint) if a is not Ellipsis)


def _record(obj, path: tuple, arrays: dict, json: bool) -> dict:
    out, hints = {}, _hints(type(obj))
    for f in dataclasses.fields(obj):
        spec = _spec(type(obj), f.name)
        if spec.to in ("live", "derived"):
            continue
        key, value = spec.key or f.name, getattr(obj, f.name)
        if value is None:
            if spec.none != "omit":
                out[key] = {} if spec.none == "empty" else None
            continue
        as_json = json or spec.to == "json" or not _typed_arrays(hints[f.name])
        v = _encode(value, _sub_path(spec, path, key), arrays, as_json, spec.item, spec.indexed)
        if v is _NOTHING:
            continue
        if spec.flatten:
            out.update(v)
        else:
            out[key] = v
    return out


def _sub_path(spec: Stored, path: tuple, key: str) -> tuple:
    """The array-key path of a field stored under ``key`` at ``path``."""
    if spec.array is not None:
        return (spec.array,)
    return path if spec.flatten else path + (key,)


def _encode(value, path: tuple, arrays: dict, json: bool, item: str = "{}", indexed: bool = False):
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _record(value, path, arrays, json)
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            e = _encode(v, path + (item.format(k),), arrays, json)
            if e is not _NOTHING:
                out[str(k)] = e
        return _NOTHING if value and not out else out
    if isinstance(value, (list, tuple)):
        return [_encode(v, path + (item.format(i),), arrays, json if indexed else True) for i, v in enumerate(value)]
    if isinstance(value, np.ndarray):
        if json:
            return value.tolist()
        arrays["_".join(path)] = value
        return _NOTHING
    if isinstance(value, np.generic):
        return value.item()
    return value


# ------------------------------------------------------------------------------------------ reading
@dataclass
class _Context:
    """What a derived field is computed from: the folder, the fields read so far of the result (``root``) and
    of the field's own object (``parent``), and the dict keys on the way to it (``keys``)."""

    folder: Any
    arrays: dict
    used: set
    root: dict = dataclasses.field(default_factory=dict)
    parent: dict = dataclasses.field(default_factory=dict)
    keys: tuple = ()


def from_folder(cls, summary: dict, arrays: dict, folder=None):
    """The ``cls`` result that :func:`to_folder` wrote as ``(summary, arrays)``.  A summary entry or an array
    that no field declares, or a declared field that is missing, raises :class:`FolderError` naming ``folder``
    and the field."""
    summary = dict(summary)
    experiment = getattr(cls, "EXPERIMENT", None)
    if experiment is not None and summary.pop("experiment", experiment) != experiment:
        raise FolderError(f"{_where(folder)}summary.json is not a {experiment} run")
    layout = getattr(cls, "LAYOUT", None)
    if layout is not None and (found := summary.pop("layout", None)) != layout:
        raise FolderError(
            f"{_where(folder)}summary.json is in layout {found!r} of {cls.__name__}, not layout {layout}, the one "
            "this code writes"
        )
    summary.pop("format", None)
    check_arrays(arrays, folder)
    ctx = _Context(folder, arrays, set())
    result = _read_record(cls, summary, (), ctx, json=False, root=True)
    unused = sorted(set(arrays) - ctx.used)
    if unused:
        raise FolderError(f"{_where(folder)}arrays.npz holds arrays no field of {cls.__name__} declares: {unused}")
    return result


def check_arrays(arrays: dict, folder=None) -> None:
    """Every stored array holds real, finite numbers (bool, int or float): a complex, string or object array, or
    a NaN or infinity, is refused naming the array (no result stores anything else, issue 52)."""
    for key, a in arrays.items():
        a = np.asarray(a)
        if a.dtype.kind not in "biuf":
            raise FolderError(f"{_where(folder)}arrays.npz: {key!r} holds {a.dtype} values, not real numbers")
        if a.dtype.kind == "f" and not np.isfinite(a).all():
            bad = int(np.size(a) - np.isfinite(a).sum())
            raise FolderError(f"{_where(folder)}arrays.npz: {key!r} holds {bad} non-finite value(s) (NaN or infinite)")


def read_checked(cls, summary: dict, arrays: dict, folder=None):
    """:func:`from_folder`, then the result type's invariants: ``result.check(folder)`` (a ``ValueError`` naming
    ``folder``, the field and the problem), the reader of every experiment whose type declares ``check``."""
    result = from_folder(cls, summary, arrays, folder)
    result.check(folder)
    return result


def _where(folder) -> str:
    return f"{Path(folder)}/" if folder is not None else ""


def _fail(ctx, name: str, problem: str):
    raise FolderError(f"{_where(ctx.folder)}summary.json: field {name!r} {problem}")


def _read_record(cls, record, path: tuple, ctx: _Context, json: bool, root: bool = False, keys=()):
    if not isinstance(record, dict):
        _fail(ctx, ".".join(path) or cls.__name__, f"is a {type(record).__name__}, not a record of {cls.__name__}")
    kwargs = {}
    if root:
        ctx.root = kwargs
    known = {(_spec(cls, f.name).key or f.name) for f in dataclasses.fields(cls)}
    _read_stored(cls, record, path, ctx, json, keys, known, kwargs)
    for f in dataclasses.fields(cls):  # derived from what is stored, once that is read
        spec = _spec(cls, f.name)
        if spec.to == "derived":
            ctx.parent, ctx.keys = kwargs, keys
            try:
                kwargs[f.name] = spec.derive(ctx)
            except (LookupError, TypeError, AttributeError) as err:
                _fail(ctx, ".".join(path + (f.name,)), f"cannot be derived from what is stored ({err!r})")
    unknown = (
        sorted(set(record) - known) if not any(_spec(cls, f.name).flatten for f in dataclasses.fields(cls)) else []
    )
    if unknown:
        _fail(ctx, ".".join(path) or cls.__name__, f"holds entries {cls.__name__} does not declare: {unknown}")
    try:
        return cls(**kwargs)
    except TypeError as err:
        _fail(ctx, ".".join(path) or cls.__name__, f"cannot be read as {cls.__name__} ({err})")


def _read_stored(cls, record, path: tuple, ctx: _Context, json: bool, keys, known: set, kwargs: dict) -> None:
    """The fields of ``cls`` that ``record`` stores, decoded into ``kwargs`` (live and derived ones skipped)."""
    hints = _hints(cls)
    for f in dataclasses.fields(cls):
        spec = _spec(cls, f.name)
        key = spec.key or f.name
        name = ".".join(path + (key,))
        if spec.to in ("live", "derived"):
            continue
        sub_path = _sub_path(spec, path, key)
        if spec.flatten:
            value = {k: v for k, v in record.items() if k not in known}
        elif key in record:
            value = record[key]
            if value is None or (spec.none == "empty" and value == {}):
                kwargs[f.name] = None
                continue
        else:
            value = _MISSING
        v = _decode(hints[f.name], value, sub_path, ctx, json or spec.to == "json", spec.item, name, keys)
        if v is _MISSING:
            if spec.none == "omit" or _has_default(f):
                if spec.none == "omit":
                    kwargs[f.name] = None
                continue
            _fail(ctx, name, "is missing")
        kwargs[f.name] = v if spec.load is None else spec.load(v)


_MISSING = object()


def _has_default(f) -> bool:
    return f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING


def _unwrap(hint):
    """``X | None`` -> ``X``."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        return args[0] if len(args) == 1 else Any
    return hint


def _decode(hint, value, path: tuple, ctx: _Context, json: bool, item: str, name: str, keys: tuple):
    hint = _unwrap(hint)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _MISSING if value is _MISSING else _read_record(hint, value, path, ctx, json, keys=keys)
    if hint is np.ndarray:
        if value is not _MISSING:
            return np.asarray(value)
        key = "_".join(path)
        if key not in ctx.arrays:
            return _MISSING
        ctx.used.add(key)
        return ctx.arrays[key]
    if origin is dict:
        k_type, v_type = args if args else (str, Any)
        if value is _MISSING:
            return _array_dict(k_type, v_type, path, ctx, item, name)
        if not isinstance(value, dict):
            _fail(ctx, name, f"is a {type(value).__name__}, not a dict")
        return {
            _key(k_type, k, ctx, name): _decode(
                v_type, v, path + (item.format(k),), ctx, json, "{}", f"{name}[{k}]", keys + (k,)
            )
            for k, v in value.items()
        }
    if value is _MISSING:
        return _MISSING
    if origin in (list, tuple) and isinstance(value, list):
        inner = args[0] if args else Any
        out = [
            _decode(inner, v, path + (item.format(i),), ctx, json, "{}", f"{name}[{i}]", keys)
            for i, v in enumerate(value)
        ]
        return tuple(out) if origin is tuple else out
    return value


def _array_dict(k_type, v_type, path: tuple, ctx: _Context, item: str, name: str):
    """A dict of arrays stored wholly in arrays.npz: its entries are the unread arrays named ``<path>_<key>``
    (``int`` keys read back as integers)."""
    if _unwrap(v_type) is not np.ndarray:
        return _MISSING
    prefix = "_".join(path) + "_" + item.format("")
    found = {k[len(prefix) :]: k for k in ctx.arrays if k.startswith(prefix) and k not in ctx.used}
    if not found:
        return _MISSING
    ctx.used.update(found.values())
    return {_key(k_type, k, ctx, name): ctx.arrays[a] for k, a in found.items()}


def _key(k_type, k: str, ctx: _Context, name: str):
    if k_type is int:
        try:
            return int(k)
        except ValueError:
            _fail(ctx, name, f"has the key {k!r}, not an integer")
    return k
