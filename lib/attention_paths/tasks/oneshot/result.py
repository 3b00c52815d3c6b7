"""The one result type of the omniglot-theory experiment (:class:`OneShotResult`): what
:func:`~.experiment.run_oneshot` computes and what a results folder holds are the same object, written by
:func:`~.experiment.oneshot_summary` and read back by :func:`~.experiment.read_oneshot_run`.

A reloaded result lacks only what no chapter reads from a results folder: the extracted path features
(``data``), the full posterior samples (``samples``; their means, order parameter and diagnostics are in
``sampled``) and the grid's per-cell solver record.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from attention_paths.base.serialise import Stored
from attention_paths.tasks.oneshot.data import EVAL_SETS, OneShotData
from attention_paths.tasks.oneshot.grid import paired_comparison
from attention_paths.tasks.oneshot.invariants import check_oneshot


def _grid_index(ctx, tau, axis: str) -> np.ndarray:
    """Where the temperatures ``tau`` sit on the result's axis ``axis`` ("taus", "gp_taus"), read back."""
    taus = [float(t) for t in ctx.root[axis]]
    tau = np.asarray(tau, float)
    missing = [float(t) for t in np.atleast_1d(tau) if float(t) not in taus]
    if missing:
        raise ValueError(f"{ctx.folder}: the selected temperatures {missing} are not on {axis} {taus}")
    return np.asarray([taus.index(float(t)) for t in np.atleast_1d(tau)]).reshape(tau.shape)


def _panel_index(ctx) -> tuple[int, int]:
    """The panel's grid position, from the run's config (its N and tau) and axes, read back."""
    cfg, taus, widths = ctx.root["config"], ctx.root["taus"], ctx.root["widths"]
    at = [[float(v) for v in taus].index(float(cfg["panel_tau"])) if float(cfg["panel_tau"]) in taus else None]
    at.append([float(v) for v in widths].index(float(cfg["panel_N"])) if float(cfg["panel_N"]) in widths else None)
    if None in at:
        raise ValueError(f"{ctx.folder}: the panel (N = {cfg['panel_N']}, tau = {cfg['panel_tau']}) is not on the grid")
    return at[0], at[1]


__all__ = [
    "TemperatureChoice",
    "OneShotPanel",
    "PairedPredictions",
    "SampledRun",
    "OneShotResult",
]


@dataclass(kw_only=True)
class TemperatureChoice:
    """The temperature a protocol selects (:func:`~.grid.select_temperatures`): on set ``on`` ("val": ours,
    "test": the paper's), per width for the theory (``index``, ``tau``: (n_width,)) or once for the GP
    (scalars), and every set's accuracy (%) there ({set: (n_width,) or scalar})."""

    on: str
    index: np.ndarray
    tau: np.ndarray
    accuracy: dict[str, np.ndarray]

    # stored: the temperature and accuracies; its set and grid index are read back from where it sits
    STORED = {
        "on": Stored(to="derived", derive=lambda ctx: ctx.keys[-2]),
        "index": Stored(
            to="derived",
            derive=lambda ctx: _grid_index(ctx, ctx.parent["tau"], "taus" if ctx.keys[-1] == "theory" else "gp_taus"),
        ),
        "tau": Stored(to="json"),
        "accuracy": Stored(to="json"),
    }


@dataclass(kw_only=True)
class OneShotPanel:
    """The ``N = 10``, ``tau = 0.5`` panel (``index`` = its (tau, width) grid position): the theory's ``U``
    (16, 16), the gradient-descent ``U_gd``, the head scores per layer, the label ``alignment`` of the GP
    and renormalised kernels ({"GP", "renormalised"}: (n_align,)), the cold-solve ``check`` of ``U``, and
    the theory's predictive ``mean`` and ``var`` on the four evaluation sets stacked in :data:`EVAL_SETS`
    order."""

    U: np.ndarray
    U_gd: np.ndarray
    head_scores: list[np.ndarray]
    alignment: dict[str, np.ndarray]
    check: dict
    mean: np.ndarray
    var: np.ndarray
    index: tuple[int, int]

    # U and index are the grid's at the config's panel point; the arrays keep their names of format 1
    STORED = {
        "U": Stored(to="derived", derive=lambda ctx: ctx.root["U"][_panel_index(ctx)]),
        "U_gd": Stored(array="U_gd"),
        "alignment": Stored(array="align"),
        "mean": Stored(none="omit"),
        "var": Stored(none="omit"),
        "index": Stored(to="derived", derive=_panel_index),
    }


@dataclass(kw_only=True)
class PairedPredictions:
    """Per-episode mean predictions of the theory at width ``N`` and the GP, each at its validation-selected
    temperature (``tau_theory``, ``tau_gp``), on the four evaluation sets stacked (``theory``, ``gp``:
    (n_stack,)): the paired theory - GP comparison (:meth:`OneShotResult.paired_by_set`)."""

    N: float
    tau_theory: float
    tau_gp: float
    theory: np.ndarray
    gp: np.ndarray

    STORED = {"theory": Stored(key="theory_mean"), "gp": Stored(key="gp_mean")}


@dataclass(kw_only=True)
class SampledRun:
    """One posterior-sampling run at width ``N`` against the theory at the same width and temperature:
    per set ({set: {"theory", "sampled", "flips", "flips_beyond_mc", "n"}}), the correlation of the mean
    predictions, the sampler's ``diagnostics``, ``wall_seconds``, ``settings`` and ``kind`` (``None`` in runs
    recorded before the kind was: those are Rao-Blackwellised, ``settings["n_parameters"]`` says so); its ``U_hat``
    (16, 16), predictive ``mean`` and Monte-Carlo standard error ``mcse`` ((n_stack,))."""

    sets: dict[str, dict]
    corr: float
    diagnostics: dict
    wall_seconds: float
    settings: dict
    kind: str | None
    U_hat: np.ndarray
    mean: np.ndarray
    mcse: np.ndarray

    STORED = {"sets": Stored(flatten=True), "kind": Stored(none="omit")}


@dataclass(kw_only=True)
class OneShotResult:
    """Everything the Omniglot theory chapter shows (spec §B.8-B.11), live or reloaded.

    Grid quantities are indexed (tau, width), both ascending: ``U`` (n_tau, n_width, 16, 16) and
    ``grid_accuracy`` ({set: (n_tau, n_width)}, %); the GP limit over its own temperatures ``gp_taus``
    (``gp_accuracy``) and at the grid's (``gp_grid_accuracy``: {set: (n_tau,)}); ``select`` ({"val",
    "test"}: {"theory", "gp"}: :class:`TemperatureChoice`); ``panel`` (:class:`OneShotPanel`), ``paired``
    (:class:`PairedPredictions`), ``edge`` (the scan beyond the grid's largest temperature, or ``None``);
    ``sampled`` ({N: :class:`SampledRun`}).  ``data_info`` describes the extraction, ``network_accuracy``
    is the trained network's own accuracy (%) on the same episodes, ``solver`` the grid's largest final
    gradient and iterations.  Live only: ``data`` (the extracted features) and ``samples`` ({N:
    PosteriorSamples}).  ``claims``, ``wall_seconds`` and ``provenance`` exist once written.
    """

    scale: str
    config: dict
    data_info: dict
    network_record: dict
    network_accuracy: dict[str, float]
    widths: np.ndarray
    taus: np.ndarray
    U: np.ndarray
    grid_accuracy: dict[str, np.ndarray]
    solver: dict
    gp_taus: np.ndarray
    gp_accuracy: dict[str, np.ndarray]
    gp_grid_accuracy: dict[str, np.ndarray]
    select: dict[str, dict[str, TemperatureChoice]]
    panel: OneShotPanel
    paired: PairedPredictions | None
    edge: dict | None
    seconds: dict
    sampled: dict[int, SampledRun] = field(default_factory=dict)
    claims: list[dict] | None = None
    wall_seconds: float | None = None
    provenance: dict | None = None
    data: OneShotData | None = field(default=None, repr=False)
    samples: dict = field(default_factory=dict, repr=False)

    # how the serialiser (attention_paths.base.serialise) stores it where not by default
    EXPERIMENT = "omniglot-theory"
    # summary.json's key order as written since the first paper-size runs (the arrays follow the fields' order)
    SUMMARY_ORDER = (
        "scale", "config", "data", "network_record", "network_accuracy", "widths", "taus", "gp_taus",
        "grid_accuracy", "gp_accuracy", "gp_grid_accuracy", "solver", "select", "panel", "seconds", "claims",
        "sampled", "edge", "paired",
    )  # fmt: skip
    STORED = {
        "data_info": Stored(key="data"),
        **{k: Stored(to="json") for k in ("widths", "taus", "gp_taus", "grid_accuracy", "gp_accuracy")},
        "gp_grid_accuracy": Stored(to="json"),
        "sampled": Stored(array="sample", item="N{}"),
        **{k: Stored(none="omit") for k in ("paired", "edge", "claims", "wall_seconds", "provenance")},
        "data": Stored(to="live"),
        "samples": Stored(to="live"),
    }

    def check(self, folder=None) -> None:
        """Raise ``ValueError`` naming ``folder``, the field and the problem when a field breaks an invariant
        of this type (:func:`~.invariants.check_oneshot`); the reader of a results folder calls it."""
        check_oneshot(self, folder)

    @property
    def heads(self) -> tuple[int, ...]:
        """Heads per layer of the analysed network (one head score per head; ``U`` is over their paths)."""
        return tuple(len(h) for h in self.panel.head_scores)

    def slices(self) -> dict[str, slice]:
        """Where each evaluation set sits in the stacked predictions (``panel.mean``, ``paired``, ...)."""
        if self.data is not None:
            sizes = [len(self.data.y[s]) for s in EVAL_SETS]
        else:  # a results folder: the sets are equal in size, stacked
            sizes = [len(self.panel.mean) // len(EVAL_SETS)] * len(EVAL_SETS)
        bounds = np.cumsum([0] + sizes)
        return {s: slice(int(bounds[k]), int(bounds[k + 1])) for k, s in enumerate(EVAL_SETS)}

    def targets(self) -> dict[str, np.ndarray]:
        """Each evaluation set's targets (every set is stored as its +1 block, then its -1 block)."""
        if self.data is not None:
            return {s: self.data.y[s] for s in EVAL_SETS}
        n = len(self.panel.mean) // len(EVAL_SETS)
        return {s: np.repeat([1.0, -1.0], n // 2) for s in EVAL_SETS}

    def paired_by_set(self) -> dict[str, dict]:
        """Per set, :func:`~.grid.paired_comparison` of the theory (smallest width, validation-selected
        temperature) and the GP (validation-selected temperature) on the same episodes."""
        sl, y = self.slices(), self.targets()
        return {s: paired_comparison(self.paired.theory[sl[s]], self.paired.gp[sl[s]], y[s]) for s in EVAL_SETS}

    def selected_index(self, on: str = "val") -> list[int]:
        """The grid's temperature index selected at each width on set ``on``."""
        return [int(i) for i in self.select[on]["theory"].index]
