"""Every example in the package's docstrings runs (issue 50): each module with a ``>>>`` example is doctested in
``make test``, and at least one of its examples runs (an example marked ``+SKIP`` everywhere is not one).  It
replaces the hand-kept list of six modules of issue 35 §9 (the public faces: ap.solve, ap.predict,
sampling.sample, the experiment registry, the serialiser, cumulative pruning), all of which it finds."""

import doctest
import importlib
from pathlib import Path

import pytest

LIB = Path(__file__).resolve().parents[1] / "lib"
MODULES = sorted(
    ".".join(f.relative_to(LIB).with_suffix("").parts).removesuffix(".__init__")
    for f in (LIB / "attention_paths").rglob("*.py")
    if ">>> " in f.read_text()
)
# modules whose every example is marked +SKIP (they need a committed run or a network), with the reason
ALL_SKIPPED = {"attention_paths.tasks.ensemble": "its examples read the committed ensemble of trained networks"}


def test_the_modules_with_examples_are_found():
    faces = ("theory.solver", "theory.predictor", "runs.registry", "base.serialise", "base.deprecation")
    assert {f"attention_paths.{m}" for m in (*faces, "tasks.pruning.cumulative", "sampling.dispatch")} <= set(MODULES)


@pytest.mark.parametrize("module", MODULES)
def test_the_examples_of_a_module_run(module):
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    result = doctest.testmod(importlib.import_module(module), optionflags=flags, report=True)
    assert result.failed == 0, f"{module}: {result.failed} of {result.attempted} examples failed (see above)"
    assert result.attempted > 0 or module in ALL_SKIPPED, f"{module} has examples, but none of them ran"
