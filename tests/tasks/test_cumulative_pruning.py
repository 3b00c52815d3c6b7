"""Cumulative pruning (issue 36 section 3): orders, curves, random orders and the claims on them."""

from pathlib import Path

import numpy as np
import pytest

from attention_paths.tasks import pruning as pr
from attention_paths.tasks.pruning import cumulative as cu


def test_cumulative_order_passes_over_a_layers_last_head():
    heads = (2, 3)
    # the two lowest are both of layer 1: the second waits until the end
    scores = {"(1)1": 0.1, "(1)2": 0.2, "(2)1": 0.9, "(2)2": 0.5, "(2)3": 0.7}
    order = cu.cumulative_order(scores, heads)
    assert order == [(0, 0), (1, 1), (1, 2), (0, 1), (1, 0)]
    assert cu.max_removable(heads) == 3 and cu.max_removable((8, 8)) == 14
    cu.check_order(order, heads, 3)
    with pytest.raises(ValueError, match="remove a whole layer"):
        cu.check_order([(0, 0), (0, 1)], heads, 2)
    with pytest.raises(ValueError, match="twice"):
        cu.check_order([(0, 0), (0, 0)], heads, 1)
    with pytest.raises(ValueError, match="cannot remove 4 heads"):
        cu.check_order(order, heads, 4)


def test_the_curve_is_the_pruned_network_at_every_step():
    rng = np.random.default_rng(3)
    heads, n = (2, 4), 500
    F = {"test": rng.standard_normal((n, 8)), "MNIST": rng.standard_normal((n, 8))}
    y = {s: np.where(rng.standard_normal(n) > 0, 1.0, -1.0) for s in F}
    order = [(1, 2), (0, 1), (1, 0), (1, 3)]
    c = cu.pruning_curve(F, y, heads, order, label="x")
    assert c.order == ["(2)3", "(1)2", "(2)1", "(2)4"] and list(c.removed) == [0, 1, 2, 3, 4]
    for s in F:
        full = pr.correct(pr.pruned_outputs(F[s], (), heads), y[s])
        assert c.drop[s][0] == 0.0 and c.drop_se[s][0] == 0.0
        for k in range(5):
            per = pr.correct(pr.pruned_outputs(F[s], order[:k], heads), y[s])
            assert c.accuracy[s][k] == pytest.approx(100.0 * per.mean())
            d, se = pr.drop_with_error(full, per)
            assert (c.drop[s][k], c.drop_se[s][k]) == pytest.approx((d, se))
    assert cu.heads_within([0.0, 0.5, 0.9, 1.2, 0.8], 1.0) == 2  # the first crossing counts
    assert cu.heads_within([0.0, -0.2, 0.3], 1.0) == 2 and cu.heads_within([0.0, 5.0], 1.0) == 0


def test_random_orders_are_uniform_over_the_orders_that_keep_every_layer():
    heads, K = (2, 2), 2
    orders = cu.random_orders(heads, 4000, K, seed=1)
    assert all(pr.keeps_every_layer(o, heads) for o in orders)
    assert cu.random_orders(heads, 5, K, seed=1) == orders[:5]  # seeded
    # removing 2 of 4 heads and keeping one per layer: one head of each layer, 2 x 2 choices x 2 orders = 8
    counts = {}
    for o in orders:
        counts[tuple(o)] = counts.get(tuple(o), 0) + 1
    assert len(counts) == 8
    freq = np.array(list(counts.values())) / len(orders)
    assert np.abs(freq - 1 / 8).max() < 0.03  # 4000 draws: s.e. 0.005
    with pytest.raises(ValueError, match="cannot remove 3 heads"):
        cu.random_orders(heads, 1, 3)


DATA = Path(__file__).resolve().parents[2] / "data"


def test_cumulative_pruning_of_a_committed_run():
    from attention_paths.runs import experiments

    res = experiments.load_run(DATA / "pruning" / "paper-network", "pruning", required=True)
    cp = cu.cumulative_pruning(res, n_random=20, seed=0)
    assert cp.heads == (4, 4) and cp.K == 6 and set(cp.curves) == {"theory score", "value norm"}
    score = cp.curves["theory score"]
    # its first two heads are the run's "2 lowest" (they are of different layers), with the same drops
    two = res.combinations["2 lowest"]
    assert score.order[:2] == two.heads
    for s in res.y:
        assert score.drop[s][2] == pytest.approx(two.drop[s]) and score.drop_se[s][2] == pytest.approx(two.drop_se[s])
        assert score.drop[s][1] == pytest.approx(res.singles[score.order[0]].drop[s])
    assert cp.random.drop["test"].shape == (20, 7) and (cp.random.drop["test"][:, 0] == 0).all()
    lo, med, hi = cp.random.band("test")
    assert (lo <= med).all() and (med <= hi).all()
    claims = cu.cumulative_claims(cp)
    assert [c["id"] for c in claims] == ["C7-1", "C7-3", "C7-curve"]
    area = np.mean(score.drop["test"][1:])
    assert claims[2]["passed"] == (area < np.median([np.mean(d[1:]) for d in cp.random.drop["test"]]))
    for c, t in zip(claims[:2], cu.CUMULATIVE_THRESHOLDS, strict=True):
        k = cu.heads_within(score.drop["test"], t)
        ks = [cu.heads_within(d, t) for d in cp.random.drop["test"]]
        assert c["passed"] == (k > np.median(ks)) and c["detail"].startswith(f"{k} of 6 heads by score")


def test_the_reference_order_of_the_2x8_network():
    rng = np.random.default_rng(0)
    heads = (8, 8)
    order = pr.parse_heads(pr.REFERENCE_CUMULATIVE_ORDER[heads], heads)
    c = cu.pruning_curve({"test": rng.standard_normal((50, 64))}, {"test": np.ones(50)}, heads, order)
    assert len(c.order) == 13 and c.order[0] == "(1)7" and c.order[-1] == "(1)2"


def _committed_with_curves():
    from attention_paths.runs import experiments

    runs = {d.name: experiments.load_run(d, "pruning", required=True) for d in sorted((DATA / "pruning").iterdir())}
    return {k: r for k, r in runs.items() if r.cumulative is not None}


def test_stored_curves_equal_a_recomputation_from_the_per_path_outputs():
    """Every committed pruning run stores its cumulative curves with at least 200 random orders (issue 49 §3), and
    they are what the stored per-path outputs give: score, value-norm and reference orders, each random order,
    the p-value."""
    import dataclasses

    runs = _committed_with_curves()
    assert len(runs) == len(list((DATA / "pruning").iterdir())) == 8
    for name, res in runs.items():
        cp = res.cumulative
        assert len(cp.random.orders) >= 200 and cp.random.seed == res.config["seed"], name
        again = cu.cumulative_pruning(dataclasses.replace(res, cumulative=None), len(cp.random.orders), cp.random.seed)
        assert again.K == cp.K and list(again.curves) == list(cp.curves) and again.random.orders == cp.random.orders
        for label, c in cp.curves.items():
            assert again.curves[label].order == c.order, (name, label)
            for s in res.y:
                for what in ("accuracy", "drop", "drop_se"):
                    np.testing.assert_array_equal(getattr(again.curves[label], what)[s], getattr(c, what)[s])
        for s in res.y:
            np.testing.assert_array_equal(again.random.drop[s], cp.random.drop[s])
        assert again.p_value == cp.p_value, name


def test_a_stored_curve_that_contradicts_its_run_is_refused(tmp_path):
    import dataclasses

    from attention_paths.base.serialise import read_checked
    from attention_paths.tasks.pruning.experiment import pruning_summary

    res = _committed_with_curves()["paper-network"]
    cp = res.cumulative
    read_checked(pr.PruningResult, *pruning_summary(res), tmp_path)  # as stored: accepted
    bad_p = dataclasses.replace(cp, p_value={**cp.p_value, "test": 0.5})
    with pytest.raises(ValueError, match=r"cumulative.p_value\[test\]"):
        read_checked(pr.PruningResult, *pruning_summary(dataclasses.replace(res, cumulative=bad_p)), tmp_path)
    score = cp.curves["theory score"]
    moved = dataclasses.replace(score, drop={**score.drop, "MNIST": score.drop["MNIST"] + 1.0})
    bad_curve = dataclasses.replace(cp, curves={**cp.curves, "theory score": moved})
    with pytest.raises(ValueError, match="unpruned accuracy minus"):
        read_checked(pr.PruningResult, *pruning_summary(dataclasses.replace(res, cumulative=bad_curve)), tmp_path)
    shuffled = dataclasses.replace(score, order=score.order[::-1])
    with pytest.raises(ValueError, match="does not follow the scores' order"):
        read_checked(
            pr.PruningResult,
            *pruning_summary(
                dataclasses.replace(
                    res, cumulative=dataclasses.replace(cp, curves={**cp.curves, "theory score": shuffled})
                )
            ),
            tmp_path,
        )
