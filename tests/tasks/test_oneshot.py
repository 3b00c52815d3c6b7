"""The theory on top of the trained Omniglot transformer: hand-off, grid, temperature selection, saved runs."""

import dataclasses
import json

import numpy as np
import pytest
import torch
from helpers import synthetic_oneshot_data

import attention_paths as ap
from attention_paths.runs import experiments, results
from attention_paths.tasks import oneshot as osh
from attention_paths.tasks.omniglot import data as om
from attention_paths.tasks.omniglot.model import InContextTransformer


def test_balanced_indices_order_and_shortage():
    y = np.array([-1, 1, 1, -1, 1, -1, -1, 1.0])
    np.testing.assert_array_equal(osh.balanced_indices(y, 2), [1, 2, 0, 3])
    with pytest.raises(ValueError, match="per label"):
        osh.balanced_indices(y, 5)


def test_select_temperatures_protocols_and_ties():
    taus = [0.1, 0.5, 1.0]
    acc = {
        "val": np.array([[60.0, 70.0], [65.0, 70.0], [50.0, 71.0]]),
        "test": np.array([[80.0, 50.0], [60.0, 55.0], [61.0, 52.0]]),
    }
    ours = osh.select_temperatures(acc, taus, "val")
    np.testing.assert_array_equal(ours["tau"], [0.5, 1.0])
    np.testing.assert_array_equal(ours["accuracy"]["test"], [60.0, 52.0])  # the test set never picks
    paper = osh.select_temperatures(acc, taus, "test")
    np.testing.assert_array_equal(paper["tau"], [0.1, 0.5])
    tie = osh.select_temperatures({"val": np.array([70.0, 70.0, 69.0])}, taus, "val")  # GP line, tie: first
    assert float(tie["tau"]) == 0.1
    with pytest.raises(ValueError, match="cannot select"):
        osh.select_temperatures(acc, taus, "MNIST")


def test_gd_order_parameter_is_the_gram_of_explicit_path_weights():
    net = InContextTransformer(d_model=6, d_qk=4, seed=3)
    with torch.no_grad():
        for layer in range(2):
            net.v[layer].weight.normal_()
    a = net.readout.weight.detach().double()[0]
    V = [net.v[l].weight.detach().double().reshape(4, 6, 6) for l in range(2)]
    w = torch.stack([a @ V[1][h2] @ V[0][h1] for h1 in range(4) for h2 in range(4)])  # path (h1, h2)
    np.testing.assert_allclose(osh.gd_order_parameter(net), (w @ w.T).numpy(), rtol=1e-10, atol=1e-12)


def test_grid_continuation_matches_cold_solves_and_gp_limit():
    data = synthetic_oneshot_data(np.random.default_rng(0))
    grid = osh.theory_grid(data, (10, 100000), (0.5, 0.1))
    assert grid.U.shape == (2, 2, 16, 16) and list(grid.taus) == [0.1, 0.5]
    assert grid.grad_max.max() <= 1e-8
    for i, tau in enumerate(grid.taus):
        cold = ap.solve(
            ap.Action(ap.PathKernel(data.features["train"]), data.y["train"], tau, ap.Architecture.uniform((4, 4), 10))
        )
        np.testing.assert_allclose(grid.U[i, 0], cold.U, atol=1e-5)
        assert np.abs(grid.U[i, 1] - np.eye(16)).max() < 0.01  # N = 1e5: the GP point
        gp = osh.gp_line(data, [tau])
        for s in osh.EVAL_SETS:  # the widest network predicts like the GP
            assert abs(grid.accuracy[s][i, 1] - gp["accuracy"][s][0]) <= 100 / 30 + 1e-9


def test_edge_scan_and_paired_predictions_agree_with_the_grid_and_the_selection():
    data = synthetic_oneshot_data(np.random.default_rng(2))
    grid = osh.theory_grid(data, (10, 1000), (0.5,))
    edge = osh.edge_scan(data, 10, [0.5])  # a cold solve at a grid point gives the grid's accuracies
    gp = osh.gp_line(data, [0.5])
    for s in osh.EVAL_SETS:
        assert edge["theory"][s][0] == pytest.approx(grid.accuracy[s][0, 0], abs=1e-9)
        assert edge["gp"][s][0] == pytest.approx(gp["accuracy"][s][0], abs=1e-9)
    assert edge["max_grad"] <= 1e-8
    res = osh.run_oneshot("quick", sample=False, data=data)
    slices = res.slices()
    sel = res.select["val"]
    for s in osh.EVAL_SETS:  # the stored per-episode predictions are those of the selected temperatures
        sl, y = slices[s], data.y[s]
        cmp = osh.paired_comparison(res.paired.theory[sl], res.paired.gp[sl], y)
        assert cmp == res.paired_by_set()[s]
        assert cmp["diff"] == pytest.approx(sel["theory"].accuracy[s][0] - float(sel["gp"].accuracy[s]), abs=1e-9)
        assert cmp["only_theory"] - cmp["only_gp"] == round(cmp["diff"] * cmp["n"] / 100) and cmp["n"] == len(y)
    xi = np.random.default_rng(3).standard_normal((5, 16, 192))  # the full-weight sampler's inputs
    np.testing.assert_allclose(ap.features_to_path_inputs(ap.path_features(xi)), xi, rtol=1e-13)
    with pytest.raises(ValueError, match="kind"):
        osh.with_budget({"sampler": {}}, {"kind": "gibbs"})
    assert osh.with_budget(
        {"sampler": {"num_chains": 2}, "kind": "rao-blackwell"}, {"kind": "full", "num_chains": 4}
    ) == {"sampler": {"num_chains": 4}, "kind": "full"}


def test_run_summary_round_trip_and_damaged_files(tmp_path):
    data = synthetic_oneshot_data(np.random.default_rng(1))
    res = osh.run_oneshot("quick", sample=False, data=data)
    assert isinstance(res, osh.OneShotResult) and res.panel.U.shape == (16, 16)
    # the strong label paths (5 and 9: heads (1)2,(2)2 and (1)3,(2)2) get the largest diagonal entries
    assert set(np.argsort(np.diag(res.panel.U))[-2:]) == {5, 9}
    summary, arrays = osh.oneshot_summary(res)
    assert {c["id"] for c in summary["claims"]} == {"I1", "I2-ID", "I2-MNIST", "I2-FMNIST", "I2-limit", "I5"}
    results.write(tmp_path, summary, arrays)
    back = experiments.load_run(tmp_path, "omniglot-theory")
    assert isinstance(back, osh.OneShotResult) and back.data is None  # the same type, without the features
    np.testing.assert_array_equal(back.U, res.U)
    np.testing.assert_array_equal(back.panel.U, res.panel.U)
    for on in ("val", "test"):  # the reloaded selection finds the same grid indices
        for k in ("theory", "gp"):
            np.testing.assert_array_equal(back.select[on][k].index, res.select[on][k].index)
            np.testing.assert_array_equal(back.select[on][k].tau, res.select[on][k].tau)
    assert back.paired_by_set() == res.paired_by_set()
    assert back.claims == summary["claims"] == osh.oneshot_claims(back)  # claims recomputed on the reloaded run
    again, again_arrays = osh.oneshot_summary(back)
    assert json.loads(json.dumps(again, default=lambda a: a.tolist())) == json.loads(
        json.dumps(summary, default=lambda a: a.tolist())
    )
    assert sorted(again_arrays) == sorted(arrays)
    assert experiments.load_run(tmp_path / "nothing", "omniglot-theory") is None
    (tmp_path / "arrays.npz").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="arrays.npz does not match the SHA-256"):
        experiments.load_run(tmp_path, "omniglot-theory")
    with pytest.raises(ValueError, match="corrupted"):  # the sealer refuses to record the damage as content
        results.write_files_record(tmp_path)
    np.savez(tmp_path / "arrays.npz")  # a readable (empty) arrays file, and another experiment's summary
    (tmp_path / "summary.json").write_text(json.dumps({"experiment": "hmc"}))
    results.write_files_record(tmp_path)
    with pytest.raises(ValueError, match="not an omniglot-theory run"):
        experiments.load_run(tmp_path, "omniglot-theory")


def test_fast_mean_predictor_equals_the_kernel_form():
    rng = np.random.default_rng(2)
    X, Xt = rng.standard_normal((30, 7, 4)), rng.standard_normal((11, 7, 4))
    y = np.sign(rng.standard_normal(30))
    A = rng.standard_normal((4, 4))
    U = A @ A.T
    K = ap.renormalized_kernel(U, X) + 0.3 * np.eye(30)
    expected = ap.renormalized_kernel(U, X, Xt).T @ np.linalg.solve(K, y)
    np.testing.assert_allclose(ap.predict(U, X, y, 0.3, Xt, return_var=False).mean, expected, rtol=1e-10)


# ------------------------------------------------------------------------------------------ real data
def _data_or_skip():
    try:
        om.omniglot_tree(download=False)
        om.load_ood("MNIST", download=False)
    except om.DatasetMissingError:
        pytest.skip("no Omniglot / MNIST under $ATTENTION_PATHS_DATA (run .ci/run)")


@pytest.mark.slow
def test_extracted_features_reproduce_the_load_network():
    """Hand-off: the theory's path features (its float64 attention from x0 and the trained Q/K) with the
    network's value path give the network's own outputs; sets are balanced and in their documented order."""
    _data_or_skip()
    from attention_paths.tasks.omniglot.training import load_network

    net, rec = load_network("quick", train_if_missing=False)
    cfg = dataclasses.asdict(
        dataclasses.replace(osh.ONESHOT_EXPERIMENT["quick"], P=20, n_eval=20, train_batches=1, eval_pool=128)
    )
    data = osh.extract(net, cfg, record=rec)
    net64 = net.double()
    v = (net64.path_weights() @ net64.w_in.weight.detach()).numpy()  # [16, 192]: w^pi W_in
    for name, X in data.features.items():
        assert X.shape == (20, 192, 16)
        f = np.sqrt(192 * 16) * np.einsum("pi,nip->n", v, X)
        np.testing.assert_allclose(f, data.network_output[name], rtol=1e-9, atol=1e-9)
        np.testing.assert_array_equal(data.y[name], np.repeat([1.0, -1.0], 10))
    # the training episodes repeat the network's first training draws (same seed, same sampler)
    from attention_paths.tasks.omniglot.episodes import sample_episodes

    first = sample_episodes(
        om.load_split("train").images, 128, np.random.default_rng(rec["config"]["seed"]), drawing_seed=0
    )
    pos = np.flatnonzero(first.y > 0)[:10]
    x0 = net64.tokens(first.subset(pos))
    xi = ap.path_features(ap.path_inputs(x0.transpose(1, 2), net64.theory_layers(), np.full(48, 1 / 48)))
    np.testing.assert_allclose(xi, data.features["train"][:10], rtol=1e-12)
    assert data.info["ood_counts"]["MNIST"] == {"class0": 980, "class1": 1135}


def test_assert_claims_expected_failures_must_stay_failures():
    from attention_paths.runs.claims import assert_claims, format_claims

    claims = [
        {"id": "A", "claim": "a", "passed": True, "detail": "1"},
        {"id": "B", "claim": "b", "passed": False, "detail": "2"},
    ]
    assert "[FAIL] B: b" in format_claims(claims)
    assert_claims(claims, {"B": "known"})
    with pytest.raises(AssertionError, match="claims failed"):
        assert_claims(claims)
    with pytest.raises(AssertionError, match="now pass"):
        assert_claims(claims, {"A": "stale", "B": "known"})
    with pytest.raises(AssertionError, match="unknown"):
        assert_claims(claims, {"B": "known", "Z": "typo"})


@pytest.mark.slow
def test_full_weight_sampling_of_the_oneshot_theory():
    """The paper scale's sampler (full-weight NUTS on the path inputs rebuilt from the features) runs through
    the pipeline and follows the theory's predictions."""
    import warnings

    data = synthetic_oneshot_data(np.random.default_rng(0))
    sampling_cfg = {
        "widths": (10,),
        "tau": 0.5,
        "kind": "full",
        "sampler": dict(num_chains=2, num_warmup=60, num_samples=60, seed=0, chain_method="sequential"),
    }
    with warnings.catch_warnings(record=True):  # a deliberately short run: its diagnostics warnings are kept here
        smp = osh.sample_oneshot(data, {"sampling": sampling_cfg})[10]
    assert smp.kind == "full" and smp.U.shape == (2, 60, 16, 16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = osh.run_oneshot("quick", sample=False, data=data, samples={10: smp})
        summary, arrays = osh.oneshot_summary(res)
    assert res.sampled[10].kind == "full" and res.samples[10] is smp
    assert summary["sampled"]["10"]["kind"] == "full" and summary["sampled"]["10"]["corr"] > 0.7
    assert arrays["sample_N10_mean"].shape == (sum(len(data.y[s]) for s in osh.EVAL_SETS),)


# ------------------------------------------------------------------------------------------ other architectures
def _synthetic_data_of(heads, rng, P=40, n=30):
    """One-shot data of a network with ``heads`` per layer: features with a label direction in paths 1 and
    Pi - 2, so that the theory has something to find."""
    n_paths = int(np.prod(heads))

    def feats(m):
        y = np.where(np.arange(m) < m // 2, 1.0, -1.0)
        X = rng.standard_normal((m, 12, n_paths)) / np.sqrt(12 * n_paths)
        X[:, 0, 1] += 0.6 * y / np.sqrt(12 * n_paths)
        X[:, 0, n_paths - 2] += 0.4 * y / np.sqrt(12 * n_paths)
        return X, y

    features, ys = {}, {}
    for name in ("train",) + osh.EVAL_SETS:
        features[name], ys[name] = feats(P if name == "train" else n)
    outputs = {k: v + 0.1 for k, v in ys.items()}
    return osh.OneShotData(features, ys, outputs, np.eye(n_paths), {"synthetic": True}, heads)


def test_oneshot_data_carries_its_heads_and_old_files_default_to_the_paper_network(tmp_path):
    data = _synthetic_data_of((2, 3), np.random.default_rng(0))
    assert data.heads == (2, 3) and data.n_paths == 6
    osh.save_oneshot_data(data, tmp_path / "d.npz")
    back = osh.load_oneshot_data(tmp_path / "d.npz")
    assert back.heads == (2, 3)
    np.testing.assert_array_equal(back.features["train"], data.features["train"])
    # a file written before the heads were recorded reloads as the paper's 2 x 4 network ...
    old = _synthetic_data_of((4, 4), np.random.default_rng(0))
    osh.save_oneshot_data(old, tmp_path / "old.npz")
    arrays = dict(np.load(tmp_path / "old.npz"))
    del arrays["heads"]
    np.savez(tmp_path / "old.npz", **arrays)
    assert osh.load_oneshot_data(tmp_path / "old.npz").heads == osh.LEGACY_HEADS == (4, 4)
    # ... and one of another architecture without its heads is refused, naming the file and the mismatch
    arrays = dict(np.load(tmp_path / "d.npz"))
    del arrays["heads"]
    np.savez(tmp_path / "d.npz", **arrays)
    with pytest.raises(ValueError, match=r"d\.npz: one-shot data of a network with heads per layer \(4, 4\) need 16"):
        osh.load_oneshot_data(tmp_path / "d.npz")
    with pytest.raises(ValueError, match=r"heads per layer \(3, 3\) need 9 paths"):
        osh.OneShotData(data.features, data.y, data.network_output, data.U_gd, {}, (3, 3))


@pytest.mark.parametrize("heads", [(3, 3), (2, 2, 2)])
def test_the_oneshot_run_reads_its_architecture_from_the_data(tmp_path, heads):
    """The whole chapter's computation on data of 2 layers x 3 heads and 3 layers x 2 heads: order parameters
    over H^L paths, the architecture of every solve the data's, a results folder that reloads with the same
    heads."""
    data = _synthetic_data_of(heads, np.random.default_rng(1))
    n_paths = int(np.prod(heads))
    res = osh.run_oneshot("quick", sample=False, data=data)
    n_t, n_w = len(res.taus), len(res.widths)
    assert res.U.shape == (n_t, n_w, n_paths, n_paths) and res.panel.U.shape == (n_paths, n_paths)
    assert res.heads == heads and [len(h) for h in res.panel.head_scores] == list(heads)
    # the panel's U is the solve of this architecture (a cold solve of Architecture.uniform(heads, 10))
    i_t, i_n = res.panel.index
    act = ap.Action(ap.PathKernel(data.features["train"]), data.y["train"], 0.5, ap.Architecture.uniform(heads, 10))
    cold = ap.solve(act)
    assert len(cold.Us) == len(heads) and cold.Us[-1].shape == (heads[-1], heads[-1])
    np.testing.assert_allclose(res.U[i_t, i_n], cold.U, atol=1e-6)
    assert res.panel.check["max_abs_dU"] < 1e-6
    np.testing.assert_allclose(res.U[:, -1], np.broadcast_to(np.eye(n_paths), (n_t, n_paths, n_paths)), atol=0.01)
    assert np.linalg.eigvalsh(res.panel.U).min() > 0
    summary, arrays = osh.oneshot_summary(res)
    results.write(tmp_path, summary, arrays)
    back = experiments.load_run(tmp_path, "omniglot-theory")
    assert back.heads == heads
    np.testing.assert_array_equal(back.U, res.U)


@pytest.mark.slow
@pytest.mark.parametrize("n_layers, n_heads", [(2, 3), (3, 2)])
def test_another_architecture_through_export_grid_theory_and_pruning(n_layers, n_heads):
    """A 2 x 3 and a 3 x 2 network (random weights) through export, grid, theory and pruning: the export
    records the heads, every array has H^L paths, and the path form (features, per-path outputs) reproduces
    the layer-wise forward pass, pruned or not."""
    _data_or_skip()
    from attention_paths.tasks import pruning as pr
    from attention_paths.tasks.omniglot.episodes import fixed_episodes

    heads, n_paths = (n_heads,) * n_layers, n_heads**n_layers
    net = InContextTransformer(d_model=16, d_qk=8, n_layers=n_layers, n_heads=n_heads, seed=3)
    rec = {"config": {"d_model": 16, "d_qk": 8, "n_layers": n_layers, "n_heads": n_heads, "seed": 3}}
    cfg = dataclasses.asdict(
        dataclasses.replace(osh.ONESHOT_EXPERIMENT["quick"], P=20, n_eval=20, train_batches=1, eval_pool=128)
    )
    data = osh.extract(net, cfg, record=rec)
    assert data.heads == heads and data.U_gd.shape == (n_paths, n_paths)
    net64 = net.double()
    v = (net64.path_weights() @ net64.w_in.weight.detach()).numpy()  # [Pi, 192]
    for name, X in data.features.items():  # the theory's features with the value path = the network's output
        assert X.shape == (20, 192, n_paths)
        f = np.sqrt(192 * n_paths) * np.einsum("pi,nip->n", v, X)
        np.testing.assert_allclose(f, data.network_output[name], rtol=1e-9, atol=1e-9)
    grid = osh.theory_grid(data, [10, 1e5], [0.5])
    assert grid.U.shape == (1, 2, n_paths, n_paths)
    np.testing.assert_allclose(grid.U[0, 1], np.eye(n_paths), atol=0.01)
    pan = osh.panel(data, grid.U[0, 0], n_align=5)
    assert [len(h) for h in pan["head_scores"]] == list(heads)
    side = pr.theory_side_drops(grid.U[0, 0], data, 0.5)
    assert sorted(side) == sorted(pr.head_name(h) for h in pr.all_heads(heads))
    stab = pr.score_stability(grid.U, grid.widths, grid.taus, (0, 0), heads)
    assert stab.shape == (1, 2) and stab[0, 0] == pytest.approx(1.0)
    # network-side pruning through per-path outputs = the layer-wise forward with heads removed
    eps = fixed_episodes(om.load_split("test").images, 24, 5, 0)
    F = pr.path_outputs(net, eps)
    assert F.shape == (24, n_paths)
    x0 = net64.tokens(eps)
    with torch.no_grad():
        np.testing.assert_allclose(net64.path_forward(x0).numpy(), net64(x0).numpy(), rtol=1e-10, atol=1e-12)
        for pruned in ([], [(0, 1)], [(n_layers - 1, 0), (0, n_heads - 1)]):
            direct = net64.set_pruned(pruned)(x0).numpy()
            np.testing.assert_allclose(pr.pruned_outputs(F, pruned, heads), direct, rtol=1e-10, atol=1e-12)
    net64.set_pruned([])
    with pytest.raises(ValueError, match=r"do not fit heads per layer \(4, 4\)"):
        pr.pruned_outputs(F, [])
