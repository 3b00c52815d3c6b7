"""The committed paper-network runs under data/: consistent with the committed network, with the settings
they claim, and with their own arrays (the numbers the chapters show can be recomputed from them)."""
import json
from pathlib import Path

import pytest

from attention_paths.tasks import oneshot, pruning
from attention_paths.runs import results

DATA = Path(__file__).resolve().parents[2] / "data"
NETWORK_SHA = json.loads((DATA / "omniglot-paper" / "record.json").read_text())["exported"]["sha256"]


@pytest.fixture(scope="module")
def theory_run():
    return results.load_run(DATA / "omniglot-theory" / "paper-sizes-paper-network", "omniglot-theory")


@pytest.fixture(scope="module")
def pruning_run():
    return results.load_run(DATA / "pruning" / "paper-network", "pruning")


def test_theory_run_is_the_paper_setting_on_the_committed_network(theory_run):
    run = theory_run
    assert run["data"]["network_sha256"] == NETWORK_SHA
    cfg, paper = run["config"], oneshot.ONESHOT_EXPERIMENT["paper"]
    for key in ("P", "n_eval", "panel_N", "panel_tau"):
        assert cfg[key] == paper[key], key
    assert [float(w) for w in run["widths"]] == list(paper["widths"]) and len(run["taus"]) == 10
    assert run["solver"]["max_grad"] <= 1e-8  # every one of the 100 solves converged
    assert all(run["network_accuracy"][s] > 50 for s in oneshot.EVAL_SETS)


def test_theory_run_sampling_meets_its_diagnostics(theory_run):
    s = theory_run["sampled"]["10"]
    d, sampler = s["diagnostics"], s["settings"]["sampler"]
    assert s["kind"] == "full" and sampler["num_chains"] >= 4
    assert d["rhat_U_max"] <= 1.05 and d["ess_bulk_U_min"] >= 100
    assert d["divergences"] <= 0.02 * sampler["num_chains"] * sampler["num_samples"]  # 25 of 2,000, reported


def test_theory_run_paired_predictions_reproduce_its_selected_accuracies(theory_run):
    run = theory_run
    sel = run["select"]["val"]
    for s, c in oneshot.run_paired(run).items():
        assert c["diff"] == pytest.approx(sel["theory"]["accuracy"][s][0] - sel["gp"]["accuracy"][s], abs=1e-9), s
        assert c["n"] == run["config"]["n_eval"]


def test_pruning_run_recomputes_from_its_path_outputs(pruning_run):
    run = pruning_run
    assert run["network_record"]["sha256"] == NETWORK_SHA
    assert run["n_episodes"]["test"] >= 2048 and run["n_episodes"]["MNIST"] == 2115
    assert run["n_episodes"]["FashionMNIST"] == 2000  # all T-shirt/trouser test images
    a = run["arrays"]
    for s in run["n_episodes"]:
        F, y = a[f"F_{s}"], a[f"y_{s}"]
        full = pruning.correct(pruning.pruned_outputs(F), y)
        assert 100 * full.mean() == pytest.approx(run["unpruned"][s], abs=1e-9)
        for name, e in run["singles"].items():  # every single-head drop, from the stored per-path outputs
            head = pruning.parse_heads(f"{int(name[1]) - 1}-{int(name[3]) - 1}")
            d, se = pruning.drop_with_error(full, pruning.correct(pruning.pruned_outputs(F, head), y))
            assert d == pytest.approx(e["drop"][s], abs=1e-9) and se == pytest.approx(e["drop_se"][s], abs=1e-9)


def test_damaged_committed_runs_are_refused(tmp_path, pruning_run):
    import shutil

    src = DATA / "pruning" / "paper-network"
    shutil.copytree(src, tmp_path / "run")
    (tmp_path / "run" / "arrays.npz").write_bytes(b"truncated")
    with pytest.raises(ValueError, match="corrupted"):
        results.load_run(tmp_path / "run", "pruning")
    summary = json.loads((src / "summary.json").read_text())
    summary["n_episodes"]["test"] += 1
    shutil.copy(src / "arrays.npz", tmp_path / "run" / "arrays.npz")
    (tmp_path / "run" / "summary.json").write_text(json.dumps(summary))
    with pytest.raises(ValueError, match="does not match"):
        results.load_run(tmp_path / "run", "pruning")
