"""The one result type of the hidden-Markov-chain experiment (:class:`MarkovResult`): what
:func:`~.experiment.run_markov` computes and what a results folder holds are the same object, written and read
back by the serialiser (:mod:`attention_paths.base.serialise`) from the fields' declarations (``STORED``): layout 2
of an ``hmc`` folder (:attr:`MarkovResult.LAYOUT`).  Runs written in layout 1 (before 0.3: one JSON row per width,
``U`` in both files, labels computed from the seeds) are read by :mod:`.layout1`, with a warning.

A reloaded result lacks only what no chapter reads from a results folder: the seed sets' tasks (inputs,
heads and path features: ``SeedSet.main`` and ``.noisy`` are ``None``), the theory's predictions and solver
objects (``WidthSweep.predictions``, ``.gp``, ``.results``) and the full posterior samples
(``MarkovSampledRun.samples``; their means, variances, order parameter and diagnostics are kept).  Its claims are
those recorded when it was written.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from attention_paths.base.serialise import Stored
from attention_paths.tasks.markov.config import config_from_record
from attention_paths.tasks.markov.invariants import check_hmc
from attention_paths.tasks.markov.task import MarkovSeeds, MarkovTask

__all__ = ["WidthSweep", "SeedSet", "MarkovSampledRun", "MarkovResult"]


@dataclass(kw_only=True)
class WidthSweep:
    """The theory of one network at every width (:func:`~.experiment.theory_sweep`): ``widths`` (n,)
    ascending, the order parameters ``U`` (n, Pi, Pi), test ``accuracy`` (%, (n,)), the GP's
    ``gp_accuracy`` (%), and the solver's report per width (``grad_max``, ``hessian_min_eig``,
    ``iterations``: (n,)).  Live only: the :class:`~attention_paths.theory.solver.SolveResult` list
    ``results`` and the theory's and GP's :class:`~attention_paths.theory.predictor.Prediction`."""

    widths: np.ndarray
    U: np.ndarray
    accuracy: np.ndarray
    gp_accuracy: float
    grad_max: np.ndarray
    hessian_min_eig: np.ndarray
    iterations: np.ndarray
    results: list | None = field(default=None, repr=False)
    predictions: list | None = field(default=None, repr=False)
    gp: object | None = field(default=None, repr=False)

    # the per-width numbers as JSON lists, U (n, Pi, Pi) in arrays.npz
    STORED = {
        **{k: Stored(to="json") for k in ("widths", "accuracy", "grad_max", "hessian_min_eig", "iterations")},
        **{k: Stored(to="live") for k in ("results", "predictions", "gp")},
    }

    def at(self, N) -> int:
        """The index of width ``N`` (``ValueError`` naming the widths if it was not solved)."""
        widths = [int(w) for w in self.widths]
        if int(N) not in widths:
            raise ValueError(f"width N={N} is not in this sweep's widths {widths}")
        return widths.index(int(N))


_JSON_SET_ARRAYS = ("alone_network", "alone_mask", "noisy_diagonal_only", "noisy_equalised_diagonal")


@dataclass(kw_only=True)
class SeedSet:
    """The theory of one seed set (:func:`~.experiment.seed_set_summary`): ``k`` (``"ref"`` for the
    reference's inputs, else the numpy shift), its ``seeds``, the 4-path network's ``sweep`` and the
    2-path (noisier-data) network's ``noisy_sweep``; the GP lines of all paths, path g and paths g+d (%);
    each path alone as a separate network and as a mask in the 4-path kernel (%, (4,) in the flat path
    order); the head scores at ``N = 10`` per layer; and the noisy network's ablations per width (%).
    ``gp_gd_minus_g`` is ``(difference, paired standard error)`` in points of the g+d GP line over the
    path-g one on the same test sequences (:func:`~.experiment.gp_gd_minus_g`; ``None`` in runs written
    before it was recorded: :func:`~.experiment.with_gp_gd_minus_g` recomputes it).
    ``main`` and ``noisy`` are the :class:`~.task.MarkovTask` objects (live only)."""

    k: int | str
    seeds: MarkovSeeds
    sweep: WidthSweep
    noisy_sweep: WidthSweep
    gp_all: float
    gp_g: float
    gp_gd: float
    alone_network: np.ndarray
    alone_mask: np.ndarray
    head_scores: list
    noisy_diagonal_only: np.ndarray
    noisy_equalised_diagonal: np.ndarray
    gp_gd_minus_g: tuple[float, float] | None = None
    main: MarkovTask | None = field(default=None, repr=False)
    noisy: MarkovTask | None = field(default=None, repr=False)

    # everything but the sweeps' U as JSON (the label is computed from the seeds, not stored)
    STORED = {
        **{k: Stored(to="json") for k in _JSON_SET_ARRAYS},
        "main": Stored(to="live"),
        "noisy": Stored(to="live"),
    }

    @property
    def label(self) -> str:
        """``"reference"`` for the reference's data, ``"numpy k"`` for numpy seed set ``k``."""
        return "reference" if self.seeds.generator == "torch-reference" else f"numpy {self.k}"

    def sweep_of(self, network: str) -> WidthSweep:
        """``sweep`` for ``"main"``, ``noisy_sweep`` for ``"noisy"``."""
        if network not in ("main", "noisy"):
            raise ValueError(f"network must be 'main' or 'noisy', got {network!r}")
        return self.sweep if network == "main" else self.noisy_sweep


@dataclass(kw_only=True)
class MarkovSampledRun:
    """One posterior-sampling run of ``network`` at width ``N`` with sampler ``kind``: its test accuracy
    and Monte-Carlo error (%; ``accuracy_mcse`` NaN where a run did not record it), ``U_hat`` and its error
    (Pi, Pi), the posterior predictive ``mean``, ``var`` and Monte-Carlo error ``mcse`` on the test set
    ((P_test,)), ``wall_seconds``, the sampler ``settings`` and chain ``diagnostics``.  ``samples`` is the
    :class:`~attention_paths.sampling.PosteriorSamples` (live only)."""

    network: str
    N: int
    kind: str
    accuracy: float
    accuracy_mcse: float
    U_hat: np.ndarray
    U_hat_mcse: np.ndarray
    mean: np.ndarray
    var: np.ndarray
    mcse: np.ndarray
    wall_seconds: float
    settings: dict
    diagnostics: dict
    samples: object | None = field(default=None, repr=False)

    STORED = {"samples": Stored(to="live")}  # U_hat, U_hat_mcse, mean, var, mcse in arrays.npz

    @property
    def key(self) -> str:
        """``"<network>_N<width>_<sampler>"``, its name in a results folder."""
        return f"{self.network}_N{self.N}_{self.kind}"


@dataclass(kw_only=True)
class MarkovResult:
    """Everything the hidden-Markov-chain chapter shows (:func:`~.experiment.run_markov`).

    ``config`` is the scale's :class:`~.config.MarkovExperimentConfig`; ``sets`` the seed sets, the
    reference's first (:attr:`headline`); ``theory_seconds`` their solve time.  On the headline's 4-path
    network at ``N = 10``: the path and GP and renormalised ``kernels`` on the rows ``kernel_subset`` (a
    dict of (n_sub, n_sub) arrays), their label ``alignment`` ({"GP", "renormalised"}: (n_align,)) and the
    class ``block_contrast`` of the full training kernels (``None`` in runs written before it was
    recorded).  ``sampled`` maps :attr:`MarkovSampledRun.key` to each posterior-sampling run.  ``claims`` is
    the recorded claims list of a reloaded result (``None`` live: :func:`~.claims.markov_claims` checks
    them).
    """

    scale: str
    config: object
    sets: list[SeedSet]
    theory_seconds: float
    kernels: dict[str, np.ndarray]
    kernel_subset: np.ndarray
    alignment: dict[str, np.ndarray]
    block_contrast: dict[str, float] | None = None
    sampled: dict[str, MarkovSampledRun] = field(default_factory=dict)
    claims: list | None = None
    wall_seconds: float | None = None
    provenance: dict | None = None

    EXPERIMENT = "hmc"
    LAYOUT = 2  # 1: the hand-written summary of 0.2 (read by .layout1, deprecated)
    # seed sets in summary.json ("seed_sets", their U in arrays.npz as seed_sets_<k>_sweep_U), kernels as
    # kernels_<name>, the sampling runs' arrays as sample_<key>_<field>
    STORED = {
        "config": Stored(load=config_from_record),
        "sets": Stored(key="seed_sets", indexed=True),
        "sampled": Stored(array="sample"),
        **{k: Stored(none="omit") for k in ("block_contrast", "claims", "wall_seconds", "provenance")},
    }

    def check(self, folder=None) -> None:
        """Raise ``ValueError`` naming ``folder``, the field and the problem when a field breaks an invariant
        of this type (:func:`~.invariants.check_hmc`); the reader of a results folder calls it."""
        check_hmc(self, folder)

    @property
    def headline(self) -> SeedSet:
        """The reference's seed set, ``sets[0]``."""
        return self.sets[0]

    @property
    def live(self) -> bool:
        """Whether this result was computed here (its tasks and predictions are present), not reloaded."""
        return self.headline.main is not None

    def sampled_run(self, network: str, N: int, kind: str) -> MarkovSampledRun | None:
        """The sampling run of ``network`` at width ``N`` with sampler ``kind``, or ``None``."""
        return self.sampled.get(f"{network}_N{int(N)}_{kind}")
