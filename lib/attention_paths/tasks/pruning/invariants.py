"""The invariants of a :class:`~.result.PruningResult` (its ``check`` method), checked by its reader: accuracies
in [0, 100], drops finite and equal to the unpruned accuracy minus the pruned one, the order sorted by the scores
it claims to sort, the "lowest" combinations made of the lowest-scoring heads, arrays of the declared shapes, and
stored cumulative-pruning curves consistent with the run's own numbers (:func:`_cumulative`)."""

from __future__ import annotations

import numpy as np

from attention_paths.base import invariants as inv

__all__ = ["check_pruning"]


def _heads_of(folder, names) -> tuple[int, ...]:
    """Heads per layer named by the labels "(layer)head" (1-based), every head of every layer once."""
    per_layer: dict[int, list[int]] = {}
    for name in names:
        try:
            layer, head = name.strip().removeprefix("(").split(")")
            per_layer.setdefault(int(layer), []).append(int(head))
        except ValueError:
            inv.violation(folder, "scores", f"names a head {name!r}, not '(layer)head'")
    heads = tuple(len(per_layer.get(l, ())) for l in range(1, len(per_layer) + 1))
    if not per_layer or any(sorted(per_layer.get(l, [])) != list(range(1, H + 1)) for l, H in enumerate(heads, 1)):
        inv.violation(folder, "scores", f"names the heads {sorted(names)}, not every head of a network")
    return heads


def _pruned(folder, name: str, p, unpruned: dict) -> None:
    for s, u in unpruned.items():
        if s not in p.accuracy or s not in p.drop or s not in p.drop_se:
            inv.violation(folder, f"{name}.accuracy", f"lacks the set {s!r}")
        acc = float(inv.accuracy(folder, f"{name}.accuracy[{s}]", p.accuracy[s]))
        drop = float(inv.finite(folder, f"{name}.drop[{s}]", p.drop[s]))
        se = float(inv.finite(folder, f"{name}.drop_se[{s}]", p.drop_se[s]))
        if se < 0:
            inv.violation(folder, f"{name}.drop_se[{s}]", f"= {se:g} is negative")
        if abs(drop - (u - acc)) > 1e-6 * max(1.0, abs(u)):
            inv.violation(
                folder, f"{name}.drop[{s}]", f"= {drop:g} is not the unpruned {u:g} minus the pruned {acc:g} %"
            )


def _lowest(folder, res) -> None:
    """The combinations named "k lowest" (overall or "of layer l") hold the k lowest-scoring heads."""
    order = list(res.order)
    for name, p in res.combinations.items():
        words = name.split()
        if len(words) < 2 or words[1] != "lowest" or not words[0].isdigit():
            continue
        k, pool = int(words[0]), order
        if name.endswith(tuple(f"of layer {l}" for l in range(1, 100))):
            layer = words[-1]
            pool = [h for h in order if h.startswith(f"({layer})")]
        if sorted(p.heads) != sorted(pool[:k]):
            inv.violation(
                folder, f"combinations[{name}].heads", f"= {p.heads} are not the {k} lowest-scoring {pool[:k]}"
            )


def _curve(folder, name: str, c, unpruned: dict, K: int, names) -> None:
    """One stored pruning curve: ``K`` distinct heads of the network, and per set an accuracy, a drop equal to
    the unpruned accuracy minus it (0 with no head removed) and a non-negative standard error, each [K + 1]."""
    if len(c.order) != K or len(set(c.order)) != K or not set(c.order) <= set(names):
        inv.violation(folder, f"{name}.order", f"= {c.order} is not {K} distinct heads of the network")
    for s, u in unpruned.items():
        acc = inv.accuracy(folder, f"{name}.accuracy[{s}]", c.accuracy.get(s, np.empty(0)), (K + 1,))
        drop = inv.finite(folder, f"{name}.drop[{s}]", c.drop.get(s, np.empty(0)), (K + 1,))
        se = inv.finite(folder, f"{name}.drop_se[{s}]", c.drop_se.get(s, np.empty(0)), (K + 1,))
        if np.abs(drop - (u - acc)).max() > 1e-6 * max(1.0, abs(u)) or drop[0] != 0:
            inv.violation(folder, f"{name}.drop[{s}]", "is not the unpruned accuracy minus the curve's accuracy")
        if (se < 0).any():
            inv.violation(folder, f"{name}.drop_se[{s}]", "holds a negative standard error")


def _cumulative(folder, res, names) -> None:
    """Stored cumulative-pruning curves: each curve consistent (:func:`_curve`), the theory-score order's heads
    the lowest-scoring ones that keep a head in every layer, the random orders' drops [n, K + 1] starting at 0,
    and the p-value the stored drops give."""
    cp = res.cumulative
    if cp is None:
        return
    K = int(cp.K)
    if not 1 <= K <= len(names) or "theory score" not in cp.curves:
        inv.violation(folder, "cumulative", f"K = {K} or its curves {sorted(cp.curves)} are not a cumulative run")
    for label, c in cp.curves.items():
        _curve(folder, f"cumulative.curves[{label}]", c, res.unpruned, K, names)
    first = [h for h in res.order if h in cp.curves["theory score"].order]
    if cp.curves["theory score"].order != first:
        inv.violation(folder, "cumulative.curves[theory score].order", f"does not follow the scores' order {res.order}")
    n = len(cp.random.orders)
    if n < 1 or any(len(o) != K or len(set(o)) != K or not set(o) <= set(names) for o in cp.random.orders):
        inv.violation(folder, "cumulative.random.orders", f"are not {K} distinct heads each")
    for s in res.unpruned:
        d = inv.finite(folder, f"cumulative.random.drop[{s}]", cp.random.drop.get(s, np.empty(0)), (n, K + 1))
        if (d[:, 0] != 0).any():
            inv.violation(folder, f"cumulative.random.drop[{s}]", "has a curve that does not start at 0")
        ours = float(np.mean(cp.curves["theory score"].drop[s][1:]))
        p = (1 + sum(float(np.mean(r[1:])) <= ours for r in d)) / (1 + n)  # as cumulative.order_p_value
        if abs(float(cp.p_value.get(s, np.nan)) - p) > 1e-12:
            inv.violation(
                folder, f"cumulative.p_value[{s}]", f"= {cp.p_value.get(s)} is not {p:g}, what the drops give"
            )


def _episode_sets(folder, res, n_paths: int) -> None:
    """Each evaluation set: a positive count of episodes, their path outputs ``F`` and targets of +-1."""
    for s, n in res.n_episodes.items():
        if not isinstance(n, int) or n < 1:
            inv.violation(folder, f"n_episodes[{s}]", f"= {n!r} is not a positive count")
        inv.present(folder, f"F[{s}]", res.F.get(s))
        inv.finite(folder, f"F[{s}]", res.F[s], (n, n_paths))
        y = inv.finite(folder, f"y[{s}]", res.y.get(s, np.empty(0)), (n,))
        if not np.isin(y, (-1.0, 1.0)).all():
            inv.violation(folder, f"y[{s}]", "holds targets other than -1 and +1")


def _correlations(folder, res) -> None:
    """The ranking stability over the grid and the Spearman correlations: within [-1, 1], intervals ordered."""
    widths = inv.increasing(folder, "widths", res.widths)
    taus = inv.increasing(folder, "taus", res.taus)
    stab = inv.finite(folder, "stability", res.stability, (len(taus), len(widths)))
    if np.abs(stab).max(initial=0.0) > 1 + 1e-9:
        inv.violation(folder, "stability", "holds rank correlations outside [-1, 1]")
    for name, r in res.spearman.items():
        inv.finite(folder, f"spearman[{name}].rho", r.rho)
        lo, hi = inv.finite(folder, f"spearman[{name}].ci95", r.ci95, (2,))
        if not (-1 - 1e-9 <= lo <= hi <= 1 + 1e-9) or abs(r.rho) > 1 + 1e-9:
            inv.violation(folder, f"spearman[{name}]", f"rho {r.rho} with interval {r.ci95} is not a correlation")


def check_pruning(res, folder=None) -> None:
    """Raise :class:`~attention_paths.base.invariants.InvariantError` naming ``folder``, the field and the problem
    when ``res`` breaks an invariant of its type."""
    heads = _heads_of(folder, list(res.scores))
    names = sorted(res.scores)
    n_paths = int(np.prod(heads))
    _episode_sets(folder, res, n_paths)
    if sorted(res.unpruned) != sorted(res.n_episodes):
        inv.violation(folder, "unpruned", f"covers the sets {sorted(res.unpruned)}, not {sorted(res.n_episodes)}")
    for s, a in res.unpruned.items():
        inv.accuracy(folder, f"unpruned[{s}]", a)
    for what in ("scores", "magnitude"):
        got = getattr(res, what)
        if sorted(got) != names:
            inv.violation(folder, what, f"names the heads {sorted(got)}, the network's are {names}")
        inv.finite(folder, what, list(got.values()))
    inv.sorted_by(folder, "order", res.order, res.scores)
    if sorted(res.singles) != names or any(p.heads != [h] for h, p in res.singles.items()):
        inv.violation(folder, "singles", f"are not one drop of each head {names}")
    for what in ("singles", "combinations", "reference_combinations", "pairs"):
        for name, p in getattr(res, what).items():
            _pruned(folder, f"{what}[{name}]", p, res.unpruned)
    _lowest(folder, res)
    _cumulative(folder, res, names)
    _correlations(folder, res)
