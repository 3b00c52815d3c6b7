"""The fields of a configuration checked when it is made (issue 52): each field against its annotation (an
``int`` is an integer, not ``2.5`` nor ``True``; a ``float`` is a finite real number; a ``str`` a string; ``X |
None`` either) and against the range its class declares, so that a wrong value is refused at construction with
a message naming the class and the field, not hours later inside a run.

A configuration calls :func:`check_fields` first thing in ``__post_init__`` and declares its ranges in a class
attribute ``RANGES``: ``{field: rule}``, the rule one of ``"> 0"``, ``">= 0"``, ``">= 2"`` (any bound), or
an interval ``"(0, 1)"``, ``"[0, 1]"``, ``"(0, 1]"``; for a tuple the rule applies to each number in it.

>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class Demo:
...     RANGES = {"steps": ">= 1", "lr": "> 0"}
...     steps: int = 10
...     lr: float = 0.1
...     def __post_init__(self):
...         check_fields(self)
>>> Demo(steps=2.5)
Traceback (most recent call last):
ValueError: Demo.steps must be an integer, got 2.5
>>> Demo(lr=float("nan"))
Traceback (most recent call last):
ValueError: Demo.lr must be a finite number, got nan
>>> Demo(steps=0)
Traceback (most recent call last):
ValueError: Demo.steps must be >= 1, got 0
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import re
import types
import typing

__all__ = ["check_fields", "check_range"]

_BOUND = re.compile(r"^(>=|>|<=|<)\s*(-?[\d.eE+-]+)$")
_INTERVAL = re.compile(r"^([(\[])\s*(-?[\d.eE+-]+)\s*,\s*(-?[\d.eE+-]+)\s*([)\]])$")


def _hints(cls) -> dict:
    """The resolved annotations of ``cls``'s fields (``typing.get_type_hints``: postponed annotations evaluated in
    their module); a class whose annotations cannot all be resolved is checked against its ranges only."""
    try:
        return typing.get_type_hints(cls)
    except (NameError, TypeError):  # an annotation this check cannot resolve: types left unchecked
        return {}


def _is_int(v) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _is_real(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


_SCALARS = {  # hint -> (test, what a value must be)
    int: (_is_int, "an integer"),
    float: (_is_real, "a number"),
    bool: (lambda v: isinstance(v, bool), "True or False"),
    str: (lambda v: isinstance(v, str), "a string"),
}
_CONTAINERS = {tuple: ((tuple, list), "a tuple"), dict: (dict, "a dict")}  # hint or origin -> (types, what)


def _check_type(where: str, value, hint) -> None:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        arms = [a for a in typing.get_args(hint) if a is not type(None)]
        if value is None and len(arms) < len(typing.get_args(hint)):
            return
        if len(arms) == 1:
            _check_type(where, value, arms[0])
        return
    if hint in _SCALARS:
        test, what = _SCALARS[hint]
        if not test(value):
            raise ValueError(f"{where} must be {what}, got {value!r}")
        if hint is float and not math.isfinite(value):
            raise ValueError(f"{where} must be a finite number, got {value!r}")
    container = _CONTAINERS.get(origin if origin is not None else hint)
    if container is not None and not isinstance(value, container[0]):
        raise ValueError(f"{where} must be {container[1]}, got {type(value).__name__}")


def check_range(where: str, value, rule: str) -> None:
    """Raise ``ValueError`` naming ``where`` unless the number ``value`` (or each number of a tuple or list,
    nested ones included) obeys ``rule`` (module docstring)."""
    if isinstance(value, (tuple, list)):
        for v in value:
            check_range(where, v, rule)
        return
    if value is None or not _is_real(value):
        return
    if not math.isfinite(value):
        raise ValueError(f"{where} must be a finite number, got {value!r}")
    m, interval = _BOUND.match(rule.strip()), False
    if m:
        op, bound = m.group(1), float(m.group(2))
        ok = {">=": value >= bound, ">": value > bound, "<=": value <= bound, "<": value < bound}[op]
    else:
        m, interval = _INTERVAL.match(rule.strip()), True
        if m is None:
            raise ValueError(f"{where}: unknown range rule {rule!r}")
        lo, hi = float(m.group(2)), float(m.group(3))
        ok = (value >= lo if m.group(1) == "[" else value > lo) and (value <= hi if m.group(4) == "]" else value < hi)
    if not ok:
        raise ValueError(f"{where} must be {'in ' if interval else ''}{rule.strip()}, got {value!r}")


def check_fields(obj, ranges: dict | None = None) -> None:
    """Check every field of the dataclass instance ``obj`` against its annotation and against its range
    (``ranges``, default: the class's ``RANGES``); ``ValueError`` naming ``<Class>.<field>`` on the first
    wrong one (module docstring)."""
    cls = type(obj)
    hints = _hints(cls)
    ranges = getattr(cls, "RANGES", {}) if ranges is None else ranges
    names = {f.name for f in dataclasses.fields(obj)}
    unknown = set(ranges) - names
    if unknown:
        raise ValueError(f"{cls.__name__}.RANGES names no field {sorted(unknown)}")
    for f in dataclasses.fields(obj):
        where, value = f"{cls.__name__}.{f.name}", getattr(obj, f.name)
        if f.name in hints:
            _check_type(where, value, hints[f.name])
        if f.name in ranges:
            check_range(where, value, ranges[f.name])
