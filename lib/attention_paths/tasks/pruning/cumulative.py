"""Cumulative pruning (issue 36 section 3): heads removed one after another in a fixed order, as the reference
does for its 2 x 8 network (``prune_2lay_h8_g64_n512.sh``), and the curve of accuracy drop against the number of
heads removed.  Every pruned network is one product with the stored per-path outputs (:func:`~.network.pruned_outputs`),
so the curves of any number of orders come from a :class:`~.result.PruningResult` without its network.

* :func:`cumulative_order` -- the heads by ascending score, a head that would leave its layer empty passed over;
* :func:`pruning_curve` -- accuracy, drop and paired standard error after 0 .. K heads of an order are removed;
* :func:`random_orders` -- orders drawn uniformly among those whose first K heads leave every layer a head;
* :func:`cumulative_pruning` -- the curves of a pruning result: its theory-score order, the value-norm order, the
  reference's literal order where it has one, and ``n_random`` random orders;
* :func:`heads_within` -- how many heads an order removes before its drop first exceeds a threshold;
* :func:`order_p_value` -- the empirical p-value of an order's mean drop against random orders'.

A pruning run stores its curves with :data:`RANDOM_ORDERS` random orders (``PruningResult.cumulative``); the
invariants of a stored run check them against its own numbers (:func:`check_cumulative`).

Example (a 2 x 2 network, paths ``(h1, h2)`` flattened first layer slowest)::

    >>> import numpy as np
    >>> F = np.array([[1.0, 1.0, 1.0, -5.0], [1.0, 1.0, 1.0, 1.0]])  # [episodes, paths]
    >>> c = pruning_curve({"test": F}, {"test": np.array([1.0, 1.0])}, (2, 2), [(1, 1)])
    >>> [float(a) for a in c.accuracy["test"]]  # removing head (2)2 repairs the first episode
    [50.0, 100.0]
"""

from __future__ import annotations

import numpy as np

from attention_paths.tasks.claim import claim
from attention_paths.tasks.pruning.heads import REFERENCE_CUMULATIVE_ORDER, all_heads, keeps_every_layer
from attention_paths.tasks.pruning.network import correct, drop_with_error, path_coefficients, path_sum, pruned_outputs
from attention_paths.tasks.pruning.result import (
    CumulativePruning,
    PruningCurve,
    PruningResult,
    RandomCurves,
    head_name,
    parse_head_name,
    parse_heads,
)
from attention_paths.theory.checks import check_heads

__all__ = [
    "PruningCurve",
    "RandomCurves",
    "CumulativePruning",
    "max_removable",
    "cumulative_order",
    "check_order",
    "pruning_curve",
    "random_orders",
    "heads_within",
    "cumulative_pruning",
    "cumulative_claims",
    "mean_drop",
    "order_p_value",
    "CUMULATIVE_THRESHOLDS",
    "RANDOM_ORDERS",
]

# random orders a pruning run stores with its curves (issue 49 §3: at least 200 per network)
RANDOM_ORDERS = 200


def max_removable(heads) -> int:
    """The most heads a network with ``heads`` per layer can lose and keep a head in every layer."""
    heads = check_heads(heads)
    return sum(heads) - len(heads)


def check_order(order, heads, K: int) -> list[tuple[int, int]]:
    """``order`` ([(layer, head)] 0-based, or labels "(layer)head") as 0-based heads, checked: heads of the
    architecture, none twice, at least ``K`` of them, and its first ``K`` leave every layer a head.  Raises
    ``ValueError`` naming the problem."""
    heads = check_heads(heads)
    hs = [parse_head_name(h, heads) if isinstance(h, str) else (int(h[0]), int(h[1])) for h in order]
    every = set(all_heads(heads))
    if any(h not in every for h in hs):
        raise ValueError(f"the order {order} names a head not in a network with heads per layer {heads}")
    if len(set(hs)) != len(hs):
        raise ValueError(f"the order {order} names a head twice")
    if not 0 <= K <= min(len(hs), max_removable(heads)):
        raise ValueError(
            f"cannot remove {K} heads of the order {[head_name(h) for h in hs]} (at most "
            f"{min(len(hs), max_removable(heads))} for heads per layer {heads})"
        )
    if not keeps_every_layer(hs[:K], heads):
        raise ValueError(f"the first {K} heads of the order {[head_name(h) for h in hs]} remove a whole layer")
    return hs


def cumulative_order(scores: dict, heads) -> list[tuple[int, int]]:
    """The heads by ascending ``scores`` ({"(layer)head": score}; ties by label), each taken only while its
    layer keeps another head; the heads passed over (one per layer at the end) follow, so the first
    :func:`max_removable` heads can be removed in turn."""
    heads = check_heads(heads)
    ranked = sorted(all_heads(heads), key=lambda h: (float(scores[head_name(h)]), h))
    left = list(heads)
    taken, last = [], []
    for layer, head in ranked:
        if left[layer] > 1:
            taken.append((layer, head))
            left[layer] -= 1
        else:
            last.append((layer, head))
    return taken + last


def pruning_curve(
    F: dict, y: dict, heads, order, full: dict | None = None, label: str = "", K=None, coefficients=None
) -> PruningCurve:
    """Accuracy, drop and its paired standard error after the first ``k = 0 .. K`` heads of ``order`` are
    removed (``K``: default the whole order, at most :func:`max_removable`).

    Parameters
    ----------
    F : {set: [n, Pi]} per-path outputs (a pruning result's ``F``); an array is one set, "test"
    y : {set: [n]} targets (+-1)
    heads : heads per layer
    order : [(layer, head)] 0-based or ["(layer)head"]
    full : {set: [n]} the unpruned network's outputs' correctness (default: computed from ``F``)
    coefficients : ``coefficients(pruned) -> [Pi]``, the path coefficients of the network with heads ``pruned``
        removed (default :func:`~.network.path_coefficients`: the book's rule, each layer's sum rescaled;
        :meth:`attention_paths.TheoryView.coefficients` for another network)
    """
    if not isinstance(F, dict):
        F = {"test": F}
    heads = check_heads(heads)
    order = list(order)
    K = min(len(order), max_removable(heads)) if K is None else int(K)
    hs = check_order(order, heads, K)[:K]
    coefficients = coefficients or (lambda pruned: path_coefficients(pruned, heads))
    full = {s: correct(path_sum(F[s], coefficients(()), heads), y[s]) for s in y} if full is None else full
    acc, drop, se = {}, {}, {}
    C = np.stack([coefficients(hs[:k]) for k in range(K + 1)], axis=1)  # [Pi, K + 1]
    for s in y:
        out = path_sum(F[s], C, heads)  # the K + 1 pruned networks in one product
        per = [correct(out[:, k], y[s]) for k in range(K + 1)]
        acc[s] = np.array([100.0 * float(c.mean()) for c in per])
        d = np.array([drop_with_error(full[s], c) for c in per])
        drop[s], se[s] = d[:, 0], d[:, 1]
    return PruningCurve(label=label, order=[head_name(h) for h in hs], accuracy=acc, drop=drop, drop_se=se)


def random_orders(heads, n: int, K: int, seed: int = 0) -> list[list[tuple[int, int]]]:
    """``n`` removal orders of ``K`` heads, each uniform among the orders whose ``K`` heads leave every layer
    a head (permutations drawn by ``numpy.random.default_rng(seed)``, those that would empty a layer redrawn)."""
    heads = check_heads(heads)
    every = all_heads(heads)
    check_order(every, heads, 0)
    if not 0 <= K <= max_removable(heads):
        raise ValueError(f"cannot remove {K} heads of a network with heads per layer {heads}")
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n:
        perm = [every[i] for i in rng.permutation(len(every))[:K]]
        if keeps_every_layer(perm, heads):
            out.append(perm)
    return out


def heads_within(drop, threshold: float) -> int:
    """How many heads an order removes before its drop first exceeds ``threshold`` points: the largest ``k``
    with ``drop[j] <= threshold`` for every ``j <= k`` (``drop[0] = 0``, the unpruned network)."""
    drop = np.asarray(drop, float)
    over = np.flatnonzero(drop > threshold)
    return int(over[0] - 1) if len(over) else len(drop) - 1


def cumulative_pruning(res: PruningResult, n_random: int = RANDOM_ORDERS, seed: int = 0, K=None) -> CumulativePruning:
    """The cumulative-pruning curves of a pruning result, from its stored per-path outputs: removing heads by
    ascending theory score (:func:`cumulative_order`), by ascending value norm (the baseline), in the reference's
    literal order where it prunes this architecture cumulatively (2 x 8: its 13 heads), and in ``n_random``
    random orders (:func:`random_orders`, ``seed``); up to ``K`` heads (default: the reference's 13 for 2 x 8,
    else :func:`max_removable`)."""
    heads = res.heads
    ref = REFERENCE_CUMULATIVE_ORDER.get(heads)
    K = (len(ref.split(",")) if ref else max_removable(heads)) if K is None else int(K)
    full = {s: correct(pruned_outputs(res.F[s], (), heads), res.y[s]) for s in res.y}

    def curve(order, label):
        return pruning_curve(res.F, res.y, heads, order, full, label, K)

    curves = {
        "theory score": curve(cumulative_order(res.scores, heads), "theory score"),
        "value norm": curve(cumulative_order(res.magnitude, heads), "value norm"),
    }
    if ref:
        curves["reference (literal)"] = curve(parse_heads(ref, heads), "reference (literal)")
    orders = random_orders(heads, n_random, K, seed)
    drops = {s: [] for s in res.y}
    for order in orders:
        c = curve(order, "random")
        for s in res.y:
            drops[s].append(c.drop[s])
    random = RandomCurves(
        orders=[[head_name(h) for h in o] for o in orders],
        drop={s: np.array(d).reshape(len(orders), K + 1) for s, d in drops.items()},
        seed=seed,
    )
    p = {s: order_p_value(curves["theory score"].drop[s], random.drop[s]) for s in res.y}
    return CumulativePruning(heads=heads, K=K, curves=curves, random=random, p_value=p)


def order_p_value(drop, random_drops) -> float:
    """The empirical one-sided p-value of an order's curve ``drop`` [K + 1] against random orders' ``random_drops``
    [n, K + 1]: ``(1 + m) / (1 + n)``, ``m`` the random orders whose :func:`mean_drop` is as low or lower (the
    smallest possible value, ``1 / (1 + n)``, says that no random order did as well)."""
    random_drops = np.asarray(random_drops, float)
    ours = mean_drop(drop)
    m = int(sum(mean_drop(d) <= ours for d in random_drops))
    return (1 + m) / (1 + len(random_drops))


# the in-distribution drops (points) at which the claims count the heads that can go (issue 36 section 3)
CUMULATIVE_THRESHOLDS = (1.0, 3.0)


def mean_drop(drop) -> float:
    """The mean drop of a curve over ``k = 1 .. K`` heads removed (its area per head removed)."""
    return float(np.mean(np.asarray(drop, float)[1:]))


def cumulative_claims(cp: CumulativePruning, on: str = "test") -> list[dict]:
    """Paper-style claims on the cumulative curve, one per threshold of :data:`CUMULATIVE_THRESHOLDS`
    ("C7-1", "C7-3"): removing heads by ascending theory score, at most ``t`` points are lost in distribution
    for more heads than along the median random order (:func:`heads_within`).  The detail gives the score
    order's count, the random orders' median and range, how many random orders remove at least as many, and the
    value-norm (and reference) order's count.  "C7-curve": the score order's :func:`mean_drop` is below the
    median random order's (a count at a threshold is coarse where few heads go within it)."""
    out = []
    for t in CUMULATIVE_THRESHOLDS:
        k = heads_within(cp.curves["theory score"].drop[on], t)
        ks = np.array([heads_within(d, t) for d in cp.random.drop[on]])
        others = ", ".join(
            f"{lab} {heads_within(c.drop[on], t)}" for lab, c in cp.curves.items() if lab != "theory score"
        )
        out.append(
            claim(
                f"C7-{t:g}",
                f"Beyond the paper (cumulative pruning): removing heads by ascending theory score, more heads go "
                f"for at most {t:g} point{'s' if t != 1 else ''} of in-distribution accuracy than along the median "
                "random order.",
                k > np.median(ks),
                f"{k} of {cp.K} heads by score; random orders median {np.median(ks):g} (range {ks.min()}-{ks.max()}, "
                f"{int((ks >= k).sum())} of {len(ks)} remove at least as many); {others}",
            )
        )
    area = mean_drop(cp.curves["theory score"].drop[on])
    areas = np.array([mean_drop(d) for d in cp.random.drop[on]])
    others = ", ".join(f"{lab} {mean_drop(c.drop[on]):.1f}" for lab, c in cp.curves.items() if lab != "theory score")
    out.append(
        claim(
            "C7-curve",
            f"Beyond the paper (cumulative pruning): removing 1 to {cp.K} heads by ascending theory score costs less "
            "in-distribution accuracy, on average over the curve, than the median random order.",
            area < np.median(areas),
            f"mean drop {area:.1f} points by score; random orders median {np.median(areas):.1f} (range "
            f"{areas.min():.1f}-{areas.max():.1f}, {int((areas <= area).sum())} of {len(areas)} as low or lower, "
            f"empirical p = {order_p_value(cp.curves['theory score'].drop[on], cp.random.drop[on]):.3f}); {others}",
        )
    )
    return out
