"""Every configuration refuses a wrong value when it is made (issue 52): each field of each config dataclass of
the package against its type (an integer where a count is meant, a finite number, a string) and its declared
range, with a message naming the class and the field.  The classes are found, not listed: a new config
dataclass is covered, or fails here until it checks its fields."""

import dataclasses
import importlib
import inspect
import math
import pkgutil
import re

import pytest

import attention_paths
from attention_paths.base import fields
from attention_paths.runs.registry import EXPERIMENTS


def _config_classes():
    found = {}
    for info in pkgutil.walk_packages(attention_paths.__path__, "attention_paths."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if inspect.isclass(obj) and dataclasses.is_dataclass(obj) and name.endswith("Config"):
                if obj.__module__ == info.name:
                    found[f"{obj.__module__}.{name}"] = obj
    return found


CLASSES = _config_classes()


def _valid(cls):
    """A valid instance: the class's defaults, else a config the registry uses."""
    try:
        return cls()
    except TypeError:
        pass
    for exp in EXPERIMENTS.values():
        if exp.configs:
            for cfg in exp.resolve("configs").values():
                if type(cfg) is cls:
                    return cfg
    raise AssertionError(f"{cls.__name__}: no valid instance to start from (defaults or the registry's)")


def _bad_values(cls, name, value):
    """(value, what the message says) pairs that must be refused for field ``name``."""
    hint = fields._hints(cls).get(name)
    arms = {hint}
    if hint is not None and getattr(hint, "__args__", None) and type(None) in hint.__args__:
        arms = set(hint.__args__) - {type(None)}
    out = []
    if int in arms:
        out += [(2.5, "must be an integer"), (True, "must be an integer"), ("3", "must be an integer")]
    if float in arms:
        out += [
            (math.nan, "must be a finite number"),
            (math.inf, "must be a finite number"),
            ("0.5", "must be a number"),
            (False, "must be a number"),
        ]
    if str in arms:
        out += [(3, "must be a string")]
    if bool in arms:
        out += [(1, "must be True or False")]
    rule = getattr(cls, "RANGES", {}).get(name)
    if rule:
        m = re.match(r"^(>=|>)\s*(-?[\d.]+)$", rule) or re.match(r"^[(\[]\s*(-?[\d.]+)\s*,\s*(-?[\d.]+)", rule)
        bound = float(m.group(2) if m.lastindex == 2 and m.group(1) in (">=", ">") else m.group(1))
        below = bound - 1 if rule.startswith(">=") else bound
        if isinstance(value, (tuple, list)):  # one bad element among good ones
            flat = value
            while flat and isinstance(flat[0], (tuple, list)):
                flat = flat[0]
            good = flat[0] if flat else bound + 1
            out += [((good, type(good)(below) if isinstance(good, int) and below == int(below) else below), "must be")]
        elif isinstance(value, int) and below == int(below):
            out += [(int(below), "must be")]
        else:
            out += [(float(below), "must be")]
    return out


CASES = [
    (key, f.name, bad, what)
    for key, cls in CLASSES.items()
    for f in dataclasses.fields(cls)
    for bad, what in _bad_values(cls, f.name, getattr(_valid(cls), f.name))
]


def test_the_package_configs_are_found():
    names = {cls.__name__ for cls in CLASSES.values()}
    assert {"TrainConfig", "SamplerConfig", "FullConfig", "RaoBlackwellConfig", "TheoryDemoConfig"} <= names
    assert {"PruningExperimentConfig", "MarkovExperimentConfig", "OneShotExperimentConfig"} <= names
    assert len(CASES) > 150


@pytest.mark.parametrize("key", sorted(CLASSES))
def test_every_config_checks_its_fields_and_accepts_its_own_values(key):
    cls = CLASSES[key]
    valid = _valid(cls)
    fields.check_fields(valid)  # its own values pass
    assert dataclasses.replace(valid) == valid
    declared = getattr(cls, "RANGES", {})
    assert declared, f"{cls.__name__} declares no ranges (RANGES)"
    numeric = [f.name for f in dataclasses.fields(cls) if fields._hints(cls).get(f.name) in (int, float)]
    assert set(numeric) <= set(declared), (
        f"{cls.__name__}: numeric fields without a range {set(numeric) - set(declared)}"
    )


@pytest.mark.parametrize("key,name,bad,what", CASES, ids=[f"{k.rsplit('.', 1)[1]}.{n}={b!r}" for k, n, b, _ in CASES])
def test_a_wrong_value_is_refused_at_construction_naming_the_field(key, name, bad, what):
    cls = CLASSES[key]
    with pytest.raises(ValueError, match=rf"{cls.__name__}\.{name} {what}"):
        dataclasses.replace(_valid(cls), **{name: bad})


def test_the_issues_examples():
    train = CLASSES["attention_paths.tasks.omniglot.recipe.TrainConfig"]
    with pytest.raises(ValueError, match=r"TrainConfig\.n_layers must be an integer, got 2\.5"):
        train(n_layers=2.5)
    with pytest.raises(ValueError, match=r"TrainConfig\.lr must be a finite number, got nan"):
        train(lr=math.nan)


def test_a_range_rule_that_names_no_field_or_cannot_be_read_is_an_error():
    @dataclasses.dataclass(frozen=True)
    class Odd:
        RANGES = {"nope": "> 0"}
        x: int = 1

    with pytest.raises(ValueError, match=r"Odd\.RANGES names no field \['nope'\]"):
        fields.check_fields(Odd())
    with pytest.raises(ValueError, match="unknown range rule"):
        fields.check_range("Odd.x", 1, "about 3")
    fields.check_range("Odd.x", (1, (2, 3)), ">= 1")  # nested tuples: each number
    with pytest.raises(ValueError, match=r"Odd\.x must be in \(0, 1\], got 1\.5"):
        fields.check_range("Odd.x", 1.5, "(0, 1]")
