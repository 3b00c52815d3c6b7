"""A small synthetic problem with random W-form heads, and the two experiments of the Theory and Sampling
chapters on it: the width sweep (:func:`theory_demo`) and the theory against posterior samples
(:func:`posterior_check`).

Inputs are i.i.d. Gaussian token matrices; labels are the signs of one prior draw of the same
architecture at large width (a "teacher"), so the task is realisable and path-structured.

Its modules: :mod:`.problem`, :mod:`.theory_demo` and :mod:`.posterior_check`.
"""

from attention_paths.tasks.toy.posterior_check import (
    POSTERIOR_CHECK,
    PosteriorCheckConfig,
    PosteriorCheckResult,
    PosteriorCheckRow,
    SampleAgreement,
    posterior_check,
    posterior_summary,
    read_posterior_run,
)
from attention_paths.tasks.toy.problem import ToyProblem, make_toy_problem, random_wform_layers
from attention_paths.tasks.toy.theory_demo import (
    THEORY_DEMO,
    TheoryDemoConfig,
    TheoryDemoResult,
    read_theory_run,
    theory_demo,
    theory_summary,
)

__all__ = [
    "random_wform_layers",
    "ToyProblem",
    "make_toy_problem",
    "TheoryDemoConfig",
    "THEORY_DEMO",
    "TheoryDemoResult",
    "theory_demo",
    "theory_summary",
    "read_theory_run",
    "PosteriorCheckConfig",
    "POSTERIOR_CHECK",
    "SampleAgreement",
    "PosteriorCheckRow",
    "PosteriorCheckResult",
    "posterior_check",
    "posterior_summary",
    "read_posterior_run",
]
