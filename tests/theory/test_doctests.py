"""The examples in the public faces' docstrings run and give what they print (issue 35 §9): ap.solve,
ap.predict, sampling.sample (tests/sampling/test_registry.py), the experiment registry, the serialiser and
cumulative pruning."""

import doctest

import pytest

from attention_paths.base import deprecation, serialise
from attention_paths.runs import registry
from attention_paths.tasks.pruning import cumulative
from attention_paths.theory import predictor, solver

MODULES = [solver, predictor, registry, serialise, deprecation, cumulative]


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0, f"{module.__name__} has no examples"
    assert result.failed == 0
