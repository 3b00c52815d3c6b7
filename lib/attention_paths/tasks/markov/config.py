"""The hidden-Markov-chain chapter's sizes per scale (:data:`MARKOV_EXPERIMENT`, :class:`MarkovExperimentConfig`)
and the config read back from a results folder (:func:`config_from_record`).  A module of its own so that the
result type (:mod:`attention_paths.tasks.markov.result`) declares how its config is read without importing the
experiment that runs it."""

from __future__ import annotations

from dataclasses import dataclass, field

from attention_paths.base.fields import check_fields

__all__ = ["MarkovExperimentConfig", "MARKOV_EXPERIMENT", "config_from_record"]


@dataclass(frozen=True)
class MarkovExperimentConfig:
    """Sizes of the hidden-Markov-chain chapter (:func:`~.experiment.run_markov`): the theory's widths, ``tau``, the
    training and test set sizes, the number of numpy seed sets beside the reference's, the widths of the heat
    maps, the kernel rows shown (two class blocks), the alignment's ``k``, the sampling plan (per network, the
    widths of each sampler of ``sampling.SAMPLER_KINDS``) and the NUTS settings."""

    # each field's range, checked at construction with its type (base.fields.check_fields)
    RANGES = {
        "widths": ">= 1",
        "tau": "> 0",
        "P": ">= 1",
        "P_test": ">= 1",
        "seed_sets": ">= 1",
        "heat_widths": ">= 1",
        "kernel_subset": ">= 0",
        "n_align": ">= 1",
    }

    widths: tuple = (10, 30, 50, 100, 300, 500, 1000)
    tau: float = 0.01
    P: int = 100
    P_test: int = 1000
    seed_sets: int = 5
    heat_widths: tuple = (10, 100, 1000)
    kernel_subset: tuple = (tuple(range(0, 25)), tuple(range(75, 100)))
    n_align: int = 30
    sampling: dict = field(
        default_factory=lambda: {
            "main": {"rao-blackwell": (10,), "full": ()},
            "noisy": {"rao-blackwell": (10,), "full": ()},
        }
    )
    # chains side by side, one JAX CPU device each (attention_paths.sampling exposes one per core)
    sampler: dict = field(
        default_factory=lambda: dict(num_chains=2, num_warmup=300, num_samples=300, seed=1, chain_method="parallel")
    )

    def __post_init__(self):
        check_fields(self)


MARKOV_EXPERIMENT = {
    # The theory runs at the paper's sizes at both scales; only the sampling budget differs.
    "quick": MarkovExperimentConfig(),
    "paper": MarkovExperimentConfig(
        # the Rao-Blackwellised sampler is ~10x faster per effective sample here (P = 100); the
        # full-weight one cross-checks it at N = 10
        sampling={
            "main": {"rao-blackwell": (10, 30, 100), "full": (10,)},
            "noisy": {"rao-blackwell": (10, 30, 100), "full": (10,)},
        },
        sampler=dict(num_chains=4, num_warmup=500, num_samples=500, seed=1, chain_method="parallel"),
    ),
}


def _tuples(v):
    """JSON lists back to the tuples of :class:`MarkovExperimentConfig`."""
    if isinstance(v, list):
        return tuple(_tuples(x) for x in v)
    if isinstance(v, dict):
        return {k: _tuples(x) for k, x in v.items()}
    return v


def config_from_record(record: dict) -> MarkovExperimentConfig:
    """The :class:`MarkovExperimentConfig` of a results folder's ``config`` record (its lists back to tuples).

    >>> config_from_record({"widths": [10, 30], "sampling": {"main": {"full": [10]}}}).widths
    (10, 30)
    """
    return MarkovExperimentConfig(**_tuples(record))
