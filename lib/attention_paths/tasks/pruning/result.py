"""The pruning experiment's result type (:class:`PruningResult`, with :class:`PrunedNetwork` and
:class:`RankCorrelation`), the network's heads and their names, and the evaluation sets."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from attention_paths.base.serialise import Stored
from attention_paths.tasks.oneshot.data import LEGACY_HEADS
from attention_paths.tasks.pruning.heads import all_heads, heads_of_names, reference_combinations
from attention_paths.tasks.pruning.invariants import check_pruning

__all__ = [
    "HEADS",
    "ALL_HEADS",
    "REFERENCE_COMBINATIONS",
    "EVAL_SETS",
    "PrunedNetwork",
    "RankCorrelation",
    "PruningCurve",
    "RandomCurves",
    "CumulativePruning",
    "PruningResult",
    "head_name",
    "parse_head_name",
    "parse_heads",
]

# the paper's 2 x 4 network: the default where no heads are given (a result's own are ``res.heads``); with
# ALL_HEADS and REFERENCE_COMBINATIONS kept for callers of the 2 x 4 constants (use all_heads(heads),
# reference_combinations(heads) of .heads)
HEADS = LEGACY_HEADS
ALL_HEADS = all_heads(HEADS)
REFERENCE_COMBINATIONS = reference_combinations(HEADS)
EVAL_SETS = ("test", "MNIST", "FashionMNIST")


@dataclass(kw_only=True)
class PrunedNetwork:
    """The trained network with the heads ``heads`` removed (no retraining), per evaluation set
    ({set: value}): its ``accuracy`` (%), the ``drop`` from the unpruned network (points; positive = worse)
    and the drop's paired standard error ``drop_se`` over the same episodes."""

    heads: list[str]
    accuracy: dict[str, float]
    drop: dict[str, float]
    drop_se: dict[str, float]


@dataclass(kw_only=True)
class RankCorrelation:
    """Spearman's rho between head scores and single-head in-distribution drops, with its bootstrap 95%
    interval ``ci95`` over ``n_boot`` resamples of the episodes."""

    rho: float
    ci95: list[float]
    n_boot: int


@dataclass(kw_only=True)
class PruningCurve:
    """The network with the first ``k`` heads of ``order`` removed, ``k = 0 .. K``: per evaluation set its
    ``accuracy`` (%), ``drop`` from the unpruned network (points; positive = worse) and the drop's paired standard
    error ``drop_se``, each [K + 1] (index ``k``).  ``order`` holds the head labels "(layer)head"."""

    label: str
    order: list[str]
    accuracy: dict[str, np.ndarray]
    drop: dict[str, np.ndarray]
    drop_se: dict[str, np.ndarray]

    # stored under "se": an array key "..._drop_" must not also be the start of the standard errors' keys
    STORED = {"drop_se": Stored(key="se")}

    @property
    def removed(self) -> np.ndarray:
        """The number of heads removed at each point of the curve, ``0 .. K``."""
        return np.arange(len(self.order) + 1)


@dataclass(kw_only=True)
class RandomCurves:
    """The drops of ``n`` random removal orders (:func:`~.cumulative.random_orders`, drawn with ``seed``), {set:
    [n, K + 1]}, and the orders (head labels)."""

    orders: list[list[str]]
    drop: dict[str, np.ndarray]
    seed: int

    def band(self, on: str = "test", q=(10.0, 50.0, 90.0)) -> np.ndarray:
        """Percentiles ``q`` of the random orders' drop on set ``on`` at each number removed, [len(q), K + 1]."""
        return np.percentile(self.drop[on], q, axis=0)


@dataclass(kw_only=True)
class CumulativePruning:
    """Cumulative pruning of one network (:func:`~.cumulative.cumulative_pruning`): ``curves`` by label ("theory
    score", "value norm", and "reference (literal)" where the reference prunes the architecture cumulatively),
    ``random`` orders, the architecture ``heads``, the number of heads removed at most ``K``, and ``p_value``
    ({set: p}): the empirical one-sided p-value of the theory-score order's mean drop over ``k = 1 .. K``
    against the random orders', ``(1 + #{random orders with a mean drop as low or lower}) / (1 + n)``
    (:func:`~.cumulative.order_p_value`).  A pruning run stores it (``PruningResult.cumulative``)."""

    heads: tuple[int, ...]
    K: int
    curves: dict[str, PruningCurve]
    random: RandomCurves
    p_value: dict[str, float]


@dataclass(kw_only=True)
class PruningResult:
    """Everything :func:`~.experiment.run_pruning` computes, live or reloaded from its results folder (the same type:
    :func:`~.experiment.pruning_summary` writes it, :func:`~.experiment.read_pruning_run` reads it back).

    Heads are named "(layer)head", 1-based (:func:`head_name`); sets are "test" (Omniglot meta-test),
    "MNIST" and "FashionMNIST" (:data:`EVAL_SETS`).  ``scores`` are the theory's normalised head scores at
    ``N = 10``, ``tau = 0.5`` (T§14.1) and ``order`` the heads by ascending score; ``singles``,
    ``combinations`` (from the scores: "2 lowest", ...), ``reference_combinations`` (the reference's literal
    heads) and ``pairs`` (every pair) are :class:`PrunedNetwork` results; ``theory_side`` ({head: {set:
    drop}}) silences heads in the theory instead; ``stability`` (n_tau, n_width) is the rank correlation of
    the ranking at every grid point with the panel's; ``spearman`` ({"theory", "magnitude"}:
    :class:`RankCorrelation`).  ``F`` ({set: (n_episodes, n_paths)}) and ``y`` ({set: (n_episodes,)}) are
    the per-path outputs and targets every pruned network is computed from.  ``cumulative``
    (:class:`CumulativePruning`) holds the cumulative-pruning curves of the score, value-norm, reference and
    random orders (``None`` in a run written before issue 49 stored them).  ``claims`` (C1-C6),
    ``wall_seconds`` and ``provenance`` exist once the result is written (``None`` on a live result).
    """

    scale: str
    config: dict
    network_record: dict
    n_episodes: dict[str, int]
    unpruned: dict[str, float]
    scores: dict[str, float]
    scores_selected_tau: dict
    magnitude: dict[str, float]
    order: list[str]
    singles: dict[str, PrunedNetwork]
    combinations: dict[str, PrunedNetwork]
    reference_combinations: dict[str, PrunedNetwork]
    pairs: dict[str, PrunedNetwork]
    theory_side: dict[str, dict[str, float]]
    stability: np.ndarray
    widths: list
    taus: list
    spearman: dict[str, RankCorrelation] = field(default_factory=dict)
    F: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    y: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    cumulative: CumulativePruning | None = field(default=None, repr=False)
    claims: list[dict] | None = None
    wall_seconds: float | None = None
    provenance: dict | None = None

    # how the serialiser (attention_paths.base.serialise) stores it where not by default
    EXPERIMENT = "pruning"
    STORED = {
        "stability": Stored(to="json"),
        **{k: Stored(none="omit") for k in ("cumulative", "claims", "wall_seconds", "provenance")},
    }

    def check(self, folder=None) -> None:
        """Raise ``ValueError`` naming ``folder``, the field and the problem when a field breaks an invariant
        of this type (:func:`~.invariants.check_pruning`); the reader of a results folder calls it."""
        check_pruning(self, folder)

    @property
    def heads(self) -> tuple[int, ...]:
        """Heads per layer of the pruned network, read from its head labels (the keys of ``scores``)."""
        return heads_of_names(self.scores)


def head_name(head) -> str:
    """``(layer, head)`` 0-based -> the figure label "(layer)head", 1-based."""
    return f"({head[0] + 1}){head[1] + 1}"


def parse_head_name(name: str, heads=HEADS) -> tuple[int, int]:
    """The figure label "(layer)head", 1-based -> ``(layer, head)`` 0-based (the inverse of :func:`head_name`), a
    head of a network with ``heads`` per layer."""
    try:
        layer, head = name.strip().removeprefix("(").split(")")
        out = (int(layer) - 1, int(head) - 1)
    except ValueError:
        raise ValueError(f"cannot read head {name!r}; expected '(layer)head' such as '(2)1'") from None
    if out not in all_heads(heads):
        raise ValueError(f"no head {name!r} in a network with heads per layer {tuple(heads)}")
    return out


def parse_heads(spec: str, heads=HEADS) -> list[tuple[int, int]]:
    """The reference's 0-based "layer-head" strings, comma separated ("0-1,0-3") -> [(0, 1), (0, 3)], heads of a
    network with ``heads`` per layer."""
    out = []
    for part in spec.split(","):
        try:
            layer, head = (int(v) for v in part.strip().split("-"))
        except ValueError:
            raise ValueError(f"cannot read head {part!r}; expected 'layer-head' such as '0-2'") from None
        if (layer, head) not in all_heads(heads):
            raise ValueError(f"no head {part!r} in a network with heads per layer {tuple(heads)}")
        out.append((layer, head))
    return out
