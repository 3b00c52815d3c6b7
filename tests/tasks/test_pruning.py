"""Head pruning: scores, the path-sum form of a pruned network, combinations, statistics."""

import numpy as np
import pytest
import torch

import attention_paths as ap
from attention_paths.tasks import pruning as pr
from attention_paths.tasks.omniglot.episodes import sample_episodes
from attention_paths.tasks.omniglot.model import InContextTransformer


def test_head_scores_of_a_hand_built_U():
    """U with one non-zero diagonal entry on path (h1, h2) = (2, 3) (0-based (1, 2)) and one off-diagonal pair."""
    U = np.zeros((16, 16))
    U[1 * 4 + 2, 1 * 4 + 2] = 2.0  # path (1)2 -> (2)3
    U[0, 15] = U[15, 0] = -1.0  # paths (1)1->(2)1 and (1)4->(2)4
    s = ap.head_scores(U, (4, 4), normalize=False)
    np.testing.assert_allclose(s[0], [2.0, 2.0, 0.0, 2.0])  # layer-1 heads: 1 (|-1| twice), 2 (2), 4 (|-1| twice)
    np.testing.assert_allclose(s[1], [2.0, 0.0, 2.0, 2.0])
    order = pr.score_order(ap.head_scores(U, (4, 4)))
    assert order[:2] == [(0, 2), (1, 1)]  # the two zero-score heads, lower layer first
    combos = pr.combinations_from_scores(ap.head_scores(U, (4, 4)))
    assert combos["2 lowest"] == [(0, 2), (1, 1)]
    assert combos["2 lowest of layer 1"][0] == (0, 2) and len(combos["3 lowest of layer 2"]) == 3


def test_path_coefficients_and_bad_pruning():
    np.testing.assert_allclose(pr.path_coefficients(), np.full(16, 0.25))
    c = pr.path_coefficients([(0, 1), (1, 3)])
    assert c[1 * 4 + 0] == 0 and c[0 * 4 + 3] == 0
    np.testing.assert_allclose(c[0], 1 / 3)  # 1/sqrt(3) per layer
    with pytest.raises(ValueError, match="all heads of layer 2"):
        pr.path_coefficients([(1, 0), (1, 1), (1, 2), (1, 3)])
    with pytest.raises(ValueError, match="no head"):
        pr.path_coefficients([(2, 0)])
    assert pr.parse_heads("0-1, 1-3") == [(0, 1), (1, 3)]
    with pytest.raises(ValueError, match="no head"):
        pr.parse_heads("0-4")


def _random_episodes(n, seed):
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, size=(6, 3, 32, 32), dtype=np.uint8)
    return sample_episodes(images, n, rng, drawing_seed=None)


def test_path_sum_reproduces_the_pruned_network_exactly():
    """The pruned network's forward pass equals the path-sum form, for the empty set and for pruned heads."""
    net = InContextTransformer(d_model=16, d_qk=8, seed=5).double()
    eps = _random_episodes(12, 0)
    F = pr.path_outputs(net, eps)
    x0 = net.tokens(eps)
    for heads in ([], [(0, 2)], [(0, 1), (1, 3), (1, 0)]):
        with torch.no_grad():
            direct = net.set_pruned(heads)(x0).numpy()
        np.testing.assert_allclose(pr.pruned_outputs(F, heads), direct, rtol=1e-10, atol=1e-12)
    net.set_pruned([])
    with torch.no_grad():
        unpruned = net(x0).numpy()
    c = pr.correct(pr.pruned_outputs(F, []), eps.y)
    np.testing.assert_array_equal(c, pr.correct(unpruned, eps.y))  # empty pruning = unpruned accuracy, exactly
    assert pr.drop_with_error(c, c) == (0.0, 0.0)
    with pytest.raises(ValueError, match="all heads of layer 1"):
        net.set_pruned([(0, h) for h in range(4)])(x0)


def test_drop_standard_error_and_spearman_interval():
    full = np.array([1, 1, 1, 0, 1, 0, 1, 1] * 25, bool)
    pruned = full.copy()
    pruned[:20] = False
    d, se = pr.drop_with_error(full, pruned)
    diff = full.astype(float) - pruned
    assert d == pytest.approx(100 * diff.mean()) and se == pytest.approx(100 * diff.std(ddof=1) / np.sqrt(200))
    # drops that grow with the score give rho = 1 and an interval near 1
    rng = np.random.default_rng(0)
    n = 400
    c_full = np.ones(n, bool)
    per = {pr.head_name(h): rng.random(n) > 0.05 * (k + 1) for k, h in enumerate(pr.ALL_HEADS)}
    scores = [np.arange(1, 5) / 8, np.arange(5, 9) / 8]
    out = pr.spearman_with_ci(scores, per, c_full, 300, 0)
    assert out.rho > 0.9 and out.ci95[0] > 0.5 and out.ci95[1] <= 1.0


def test_magnitude_scores_are_value_matrix_norms():
    net = InContextTransformer(d_model=8, d_qk=4, seed=1)
    s = pr.magnitude_scores(net)
    V = net.v[1].weight.detach().double().reshape(4, 8, 8)
    raw = [float(torch.linalg.norm(V[h])) for h in range(4)]
    top = max(
        max(float(torch.linalg.norm(net.v[l].weight.detach().double().reshape(4, 8, 8)[h])) for h in range(4))
        for l in range(2)
    )
    np.testing.assert_allclose(s[1], np.array(raw) / top, rtol=1e-12)
    assert max(x.max() for x in s) == pytest.approx(1.0)


def test_the_committed_run_prints_within_80_columns():
    """The pruning table and its statistics fit the book's text column (issue 26), with every head listed."""
    from pathlib import Path

    from attention_paths.runs import experiments

    res = experiments.load_run(Path(__file__).resolve().parents[2] / "data" / "pruning" / "paper-network", "pruning")
    table, stats = pr.format_table(res).splitlines(), pr.format_statistics(res).splitlines()
    assert max(len(line) for line in table + stats) <= 80
    # a header, the unpruned row, three group titles and one row per pruned network
    assert len(table) == 2 + 3 + len(res.singles) + len(res.combinations) + len(res.reference_combinations)
    lowest = res.order[0]
    row = next(line for line in table if line.startswith(f"  {lowest} "))
    assert f"{res.singles[lowest].drop['test']:+.1f} ±" in row
    assert stats[0].split(": ")[1].startswith(f"{res.spearman['theory'].rho:+.2f}")
