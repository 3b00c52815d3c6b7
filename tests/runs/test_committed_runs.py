"""The committed paper-network runs under data/: consistent with the committed network, with the settings
they claim, and with their own arrays (the numbers the chapters show can be recomputed from them)."""

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from helpers import rewritten_run

from attention_paths.runs import experiments, results
from attention_paths.tasks import markov, oneshot, pruning

DATA = Path(__file__).resolve().parents[2] / "data"
NETWORK_SHA = json.loads((DATA / "omniglot-paper" / "record.json").read_text())["exported"]["sha256"]


def _written_back_bytes(tmp_path, folder, summary, arrays) -> None:
    """The reloaded run written again by results.write is the committed folder byte for byte: summary.json
    (the format line aside where an older folder has none) and arrays.npz."""
    results.write(tmp_path, summary, arrays)
    new, old = ((f / results.SUMMARY).read_text() for f in (tmp_path, folder))
    if '"format"' not in old.split("\n", 2)[1]:  # written before the results format existed
        new = "\n".join(line for line in new.split("\n") if line != f'  "format": {results.FORMAT},')
    assert new == old
    assert (tmp_path / results.ARRAYS).read_bytes() == (folder / results.ARRAYS).read_bytes()


@pytest.fixture(scope="module")
def theory_run():
    return experiments.load_run(DATA / "omniglot-theory" / "paper-sizes-paper-network", "omniglot-theory")


@pytest.fixture(scope="module")
def pruning_run():
    return experiments.load_run(DATA / "pruning" / "paper-network", "pruning")


def test_theory_run_is_the_paper_setting_on_the_committed_network(theory_run):
    run = theory_run
    assert isinstance(run, oneshot.OneShotResult)
    assert run.data_info["network_sha256"] == NETWORK_SHA
    cfg, paper = run.config, oneshot.ONESHOT_EXPERIMENT["paper"]
    for key in ("P", "n_eval", "panel_N", "panel_tau"):
        assert cfg[key] == getattr(paper, key), key
    assert [float(w) for w in run.widths] == list(paper.widths) and len(run.taus) == 10
    assert run.solver["max_grad"] <= 1e-8  # every one of the 100 solves converged
    assert all(run.network_accuracy[s] > 50 for s in oneshot.EVAL_SETS)


def test_theory_run_sampling_meets_its_diagnostics(theory_run):
    s = theory_run.sampled[10]
    d, sampler = s.diagnostics, s.settings["sampler"]
    assert s.kind == "full" and sampler["num_chains"] >= 4
    assert d["rhat_U_max"] <= 1.05 and d["ess_bulk_U_min"] >= 100
    assert d["divergences"] <= 0.02 * sampler["num_chains"] * sampler["num_samples"]  # 25 of 2,000, reported


def test_theory_run_paired_predictions_reproduce_its_selected_accuracies(theory_run):
    run = theory_run
    sel = run.select["val"]
    for s, c in run.paired_by_set().items():
        assert c["diff"] == pytest.approx(sel["theory"].accuracy[s][0] - sel["gp"].accuracy[s], abs=1e-9), s
        assert c["n"] == run.config["n_eval"]


@pytest.mark.parametrize("name", sorted(p.name for p in (DATA / "omniglot-theory").iterdir()))
def test_every_committed_theory_run_writes_back_the_summary_it_was_read_from(name, tmp_path):
    """Live and reloaded results are one type: serialising a reloaded run (issue 35 §2) gives its committed
    summary key for key and value for value (claims recomputed from the reloaded numbers equal the stored ones;
    the quick network's, older, lacks the edge scan and paired predictions and gets none), and its arrays."""
    folder = DATA / "omniglot-theory" / name
    summary, arrays = oneshot.oneshot_summary(experiments.load_run(folder, "omniglot-theory"))
    stored = json.loads((folder / "summary.json").read_text())
    stored.pop("format", None)  # written by results.write
    assert json.loads(json.dumps(summary, default=lambda a: a.tolist())) == stored
    stored_arrays = np.load(folder / "arrays.npz")
    assert sorted(arrays) == sorted(stored_arrays.files)
    for k in arrays:
        np.testing.assert_array_equal(arrays[k], stored_arrays[k])
    _written_back_bytes(tmp_path, folder, summary, arrays)  # and its files, byte for byte (SUMMARY_ORDER)


def test_pruning_run_recomputes_from_its_path_outputs(pruning_run):
    run = pruning_run
    assert isinstance(run, pruning.PruningResult)
    assert run.network_record["sha256"] == NETWORK_SHA
    assert run.n_episodes["test"] >= 2048 and run.n_episodes["MNIST"] == 2115
    assert run.n_episodes["FashionMNIST"] == 2000  # all T-shirt/trouser test images
    for s in run.n_episodes:
        F, y = run.F[s], run.y[s]
        full = pruning.correct(pruning.pruned_outputs(F), y)
        assert 100 * full.mean() == pytest.approx(run.unpruned[s], abs=1e-9)
        for name, e in run.singles.items():  # every single-head drop, from the stored per-path outputs
            head = pruning.parse_heads(f"{int(name[1]) - 1}-{int(name[3]) - 1}")
            d, se = pruning.drop_with_error(full, pruning.correct(pruning.pruned_outputs(F, head), y))
            assert d == pytest.approx(e.drop[s], abs=1e-9) and se == pytest.approx(e.drop_se[s], abs=1e-9)


@pytest.mark.parametrize("name", sorted(p.name for p in (DATA / "pruning").iterdir()))
def test_every_committed_pruning_run_writes_back_the_summary_it_was_read_from(name, tmp_path):
    """Live and reloaded results are one type: serialising the reloaded run (issue 35 §2) gives the committed
    summary, key for key and value for value (its wall time and provenance included; claims recomputed from
    the reloaded numbers equal the stored ones), and the committed arrays."""
    folder = DATA / "pruning" / name
    run = experiments.load_run(folder, "pruning")
    summary, arrays = pruning.pruning_summary(run)
    stored = json.loads((folder / "summary.json").read_text())
    stored.pop("format", None)  # written by results.write
    assert json.loads(json.dumps(summary, default=lambda a: a.tolist())) == stored
    stored_arrays = np.load(folder / "arrays.npz")
    assert list(arrays) == stored_arrays.files  # the same arrays, in the same order
    for k in arrays:
        np.testing.assert_array_equal(arrays[k], stored_arrays[k])
    _written_back_bytes(tmp_path, folder, summary, arrays)


def test_damaged_committed_runs_are_refused(tmp_path, pruning_run):
    """Issue 24, group 1: every committed run is checked against the SHA-256 of its files where it is read."""
    import shutil

    src = DATA / "pruning" / "paper-network"
    shutil.copytree(src, tmp_path / "run")
    (tmp_path / "run" / "arrays.npz").write_bytes(b"truncated")
    with pytest.raises(ValueError, match="arrays.npz does not match the SHA-256"):
        experiments.load_run(tmp_path / "run", "pruning")
    # a consistent edit of the summary alone (its record regenerated) still fails the shape checks
    summary = json.loads((src / "summary.json").read_text())
    summary["n_episodes"]["test"] += 1
    shutil.copy(src / "arrays.npz", tmp_path / "run" / "arrays.npz")
    (tmp_path / "run" / "summary.json").write_text(json.dumps(summary))
    with pytest.raises(ValueError, match="summary.json does not match the SHA-256"):
        experiments.load_run(tmp_path / "run", "pruning")
    results.write_files_record(tmp_path / "run")
    with pytest.raises(ValueError, match=r"field 'F\[test\]' has shape \(16384, 16\), expected \(16385, 16\)"):
        experiments.load_run(tmp_path / "run", "pruning")
    (tmp_path / "run" / "record.json").unlink()
    with pytest.raises(ValueError, match="has no record.json"):
        experiments.load_run(tmp_path / "run", "pruning")


def _negate(a, key):
    a[key] = -a[key]


def _cut(a, key, n):
    a[key] = a[key][:n]


def _asymmetric(a, key):
    a[key] = a[key].copy()
    a[key][0, 1] += 1.0


def _nan_first(a, key):
    a[key] = a[key].copy()
    a[key].flat[0] = np.nan


@pytest.mark.parametrize(
    "folder, experiment, edit_summary, edit_arrays, match",
    [
        (
            "omniglot-theory/paper-sizes-paper-network",
            "omniglot-theory",
            None,
            lambda a: _negate(a, "U"),
            "'U' is not positive semi-definite",
        ),
        (
            "omniglot-theory/paper-sizes-paper-network",
            "omniglot-theory",
            lambda s: s["grid_accuracy"].update({"test": np.zeros((10, 10)).tolist()}),
            None,
            r"'grid_accuracy\[test\]' is zero everywhere",
        ),
        (
            "omniglot-theory/paper-sizes-paper-network",
            "omniglot-theory",
            None,
            lambda a: _cut(a, "panel_mean", 100),
            "shape",
        ),
        ("pruning/paper-network", "pruning", None, lambda a: _cut(a, "y_test", 100), r"'y\[test\]' has shape \(100,\)"),
        (
            "pruning/paper-network",
            "pruning",
            lambda s: s.update(order=["(9)9"] * 8),
            None,
            r"'order' = .* does not name",
        ),
        ("hmc-paper", "hmc", None, lambda a: _nan_first(a, "sample_main_N10_rao-blackwell_mean"), "non-finite"),
        ("pruning/paper-network", "pruning", lambda s: s.update(format=99), None, "results format 99, newer"),
        (  # issue 52: a solve that did not converge
            "omniglot-theory/paper-sizes-paper-network",
            "omniglot-theory",
            lambda s: s["solver"].update(max_grad=1e6),
            None,
            r"'solver.max_grad' = 1e\+06 is not a converged solve's final gradient \(tolerance 1e-08\)",
        ),
        (  # the validation-selected temperature moved to one that is not the best on validation
            "omniglot-theory/paper-sizes-paper-network",
            "omniglot-theory",
            lambda s: s["select"]["val"]["theory"]["tau"].__setitem__(0, 0.25),
            None,
            r"'select\[val\]\[theory\].index' = \[5, .* is not the best temperature on val, \[6,",
        ),
        (
            "omniglot-sampling/paper-network-N500",
            "omniglot-sampling",
            lambda s: s["solver"]["500"].update(grad_max=3e-5),
            None,
            r"'solver\[500\].grad_max' = 3e-05 is not a converged solve",
        ),
        (
            "hmc-paper",
            "hmc",
            None,
            lambda a: _asymmetric(a, "kernels_GP"),
            r"'kernels\[GP\]' is not a symmetric matrix",
        ),
        (
            "hmc-paper",
            "hmc",
            None,
            lambda a: _negate(a, "sample_main_N10_rao-blackwell_mcse"),
            r"'sampled\[main_N10_rao-blackwell\].mcse' holds a negative value",
        ),
        (
            "omniglot-sampling/paper-network-N500",
            "omniglot-sampling",
            None,
            lambda a: _negate(a, "sample_N500_mcse"),
            r"'sampled\[500\].mcse' holds a negative Monte Carlo standard error",
        ),
    ],
)
def test_consistently_edited_runs_fail_their_content_checks(
    tmp_path, folder, experiment, edit_summary, edit_arrays, match
):
    with pytest.raises(ValueError, match=match):  # refused by the sealer (a NaN) or by the reader
        experiments.load_run(rewritten_run(tmp_path, DATA / folder, edit_summary, edit_arrays), experiment)


def test_a_same_size_edit_of_a_sampled_accuracy_is_refused(tmp_path):
    """96.3 -> 99.3 in data/hmc-paper/summary.json: same size, refused by the SHA-256 of the file."""
    import shutil

    shutil.copytree(DATA / "hmc-paper", tmp_path / "hmc")
    path = tmp_path / "hmc" / "summary.json"
    text = path.read_text()
    assert '"accuracy": 96.3,' in text
    edited = text.replace('"accuracy": 96.3,', '"accuracy": 99.3,', 1)
    assert len(edited) == len(text)
    path.write_text(edited)
    with pytest.raises(ValueError, match="summary.json does not match the SHA-256"):
        experiments.load_run(tmp_path / "hmc", "hmc")


def test_every_committed_run_lists_the_sha256_of_its_files():
    for summary in DATA.rglob("summary.json"):
        record = json.loads((summary.parent / "record.json").read_text())
        assert {"summary.json", "arrays.npz"} <= set(record["files_sha256"]), summary.parent
        results.verify_files(summary.parent)


def test_hmc_paper_run_is_complete_mixed_and_agrees_with_a_fresh_theory():
    """data/hmc-paper: its files match their record, every chain mixed, its config is the paper scale's, and its
    theory numbers are those this code computes on the reference's inputs (a fresh solve at N = 10)."""
    folder = DATA / "hmc-paper"
    record = json.loads((folder / "record.json").read_text())
    for name, sha in record["files_sha256"].items():
        assert hashlib.sha256((folder / name).read_bytes()).hexdigest() == sha, name
    run = experiments.load_run(folder, "hmc")
    paper = markov.MARKOV_EXPERIMENT["paper"]
    assert isinstance(run, markov.MarkovResult) and not run.live
    assert run.config.sampler["num_chains"] >= 4 and run.config.sampler["num_samples"] >= 500
    keys = {(e.network, e.N, e.kind) for e in run.sampled.values()}
    for net in ("main", "noisy"):
        assert {(net, N, "rao-blackwell") for N in paper.sampling[net]["rao-blackwell"]} <= keys
        assert {(net, N, "full") for N in paper.sampling[net]["full"]} <= keys
    ref = run.headline
    assert ref.seeds.generator == "torch-reference"
    task = markov.make_markov_task("main", markov.MarkovSeeds.reference(), paper.P, paper.P_test)
    noisy = markov.make_markov_task("noisy", markov.MarkovSeeds.reference(), paper.P, paper.P_test)
    for e in run.sampled.values():
        assert e.diagnostics["rhat_U_max"] <= 1.05 and e.diagnostics["ess_bulk_U_min"] >= 400
        assert e.mean.shape == (run.config.P_test,)
        y = (task if e.network == "main" else noisy).y_test
        # the stored accuracy is that of the stored posterior means on the reference's test sequences
        assert e.accuracy == pytest.approx(100 * np.mean(np.sign(e.mean) == y), abs=1e-9)
    sw = markov.theory_sweep(task, (10,), paper.tau)
    assert abs(sw.accuracy[0] - ref.sweep.accuracy[0]) < 1e-9
    np.testing.assert_allclose(sw.U[0], ref.sweep.U[0], atol=1e-6)


def test_the_committed_hmc_run_reloads_and_writes_back_its_summary(tmp_path):
    """data/hmc-paper, reloaded as a MarkovResult and written again by the serialiser, gives its committed
    summary.json and arrays.npz back byte for byte (layout 2; its claims are those it was written with)."""
    folder = DATA / "hmc-paper"
    run = experiments.load_run(folder, "hmc")
    summary, arrays = markov.markov_summary(run)
    assert summary["layout"] == markov.MarkovResult.LAYOUT == 2
    results.write(tmp_path, summary, arrays)
    for name in (results.SUMMARY, results.ARRAYS):
        assert (tmp_path / name).read_bytes() == (folder / name).read_bytes(), name


# the last commit whose data/hmc-paper is in hmc layout 1 (the hand-written summary); migrated to layout 2 since
LAYOUT1_COMMIT = "070233f4185419626ed5d0dce6581f9b7bf0db7f"


def _layout1_copy(tmp_path) -> Path:
    """data/hmc-paper as committed in layout 1 (from git), or a skip where the history is not at hand."""
    import subprocess

    root, run = DATA.parent, tmp_path / "hmc-layout1"
    run.mkdir()
    for name in (results.SUMMARY, results.ARRAYS, results.FILES):
        try:
            out = subprocess.run(
                ["git", "-C", str(root), "show", f"{LAYOUT1_COMMIT}:data/hmc-paper/{name}"],
                capture_output=True,
                check=True,
                timeout=60,
            )
        except (OSError, subprocess.SubprocessError):
            pytest.skip(f"the git history with data/hmc-paper in layout 1 ({LAYOUT1_COMMIT[:10]}) is not at hand")
        (run / name).write_bytes(out.stdout)
    return run


def test_a_layout1_hmc_run_reads_with_a_warning_as_the_same_run_and_migrates_to_the_committed_files(tmp_path):
    """The committed layout-1 files of data/hmc-paper (before the serialiser): read with a FutureWarning that
    the layout is deprecated, they give the same result as the migrated folder, every value equal (arrays byte
    for byte); written again, they are the committed layout-2 files byte for byte; the migration's record
    names the layout-1 files it replaced and why."""
    from test_experiment_contract import _same

    old = _layout1_copy(tmp_path)
    assert "layout" not in json.loads((old / results.SUMMARY).read_text())
    with pytest.warns(FutureWarning, match="layout 1, which is deprecated"):
        run = experiments.load_run(old, "hmc")
    migrated = experiments.load_run(DATA / "hmc-paper", "hmc")
    _same(run, migrated, stored_only=True)
    results.write(tmp_path / "again", *markov.markov_summary(run))
    for name in (results.SUMMARY, results.ARRAYS):
        assert (tmp_path / "again" / name).read_bytes() == (DATA / "hmc-paper" / name).read_bytes(), name
    # every layout-1 array is in the new file byte for byte (renamed), its duplicates equal what is kept
    first, now = np.load(old / results.ARRAYS), np.load(DATA / "hmc-paper" / results.ARRAYS)
    renamed = {
        f"set{k}_U_{n}": f"seed_sets_{k}_{s}_U"
        for k in range(6)
        for n, s in (("main", "sweep"), ("noisy", "noisy_sweep"))
    }
    for key in first.files:
        new = renamed.get(key, "kernels_" + key[7:] if key.startswith("kernel_") and key != "kernel_subset" else key)
        if key == "widths":
            np.testing.assert_array_equal(first[key], migrated.headline.sweep.widths)
            continue
        assert first[key].dtype == now[new].dtype and first[key].tobytes() == now[new].tobytes(), key
    record = json.loads((DATA / "hmc-paper" / results.FILES).read_text())
    migration = record["migrations"][-1]
    layout1_record = json.loads((old / results.FILES).read_text())
    assert migration["previous_files_sha256"] == layout1_record["files_sha256"]
    assert "layout 1 -> 2" in migration["what"] and migration["reason"]


def test_an_hmc_run_of_an_unknown_layout_is_refused(tmp_path):
    """A summary.json that records a layout this code does not write (a later one) is refused, naming it."""
    run = rewritten_run(tmp_path, DATA / "hmc-paper", lambda s: s.update(layout=3))
    with pytest.raises(ValueError, match="layout 3 of MarkovResult, not layout 2"):
        experiments.load_run(run, "hmc")


SAMPLING_RUNS = sorted((DATA / "omniglot-sampling").glob("*")) if (DATA / "omniglot-sampling").exists() else []


@pytest.mark.parametrize("folder", SAMPLING_RUNS, ids=[f.name for f in SAMPLING_RUNS])
def test_committed_sampling_runs_record_what_they_did_and_diagnostics_that_agree(folder):
    """Issue 49 §2: each committed omniglot-sampling run is of the network its record names, was made by the
    command its record holds, with the settings it reports, and its diagnostics are those of its own draws:
    divergences summed over the chains, shares and acceptance in [0, 1], R-hat >= 1 (or not computed, one
    chain), effective sample sizes positive and at most 4 x the draws, the theory solve converged and
    certified, and the stored agreement that of the stored order parameters."""
    run = experiments.load_run(folder, "omniglot-sampling", required=True)
    record = json.loads((folder / "record.json").read_text())
    net = json.loads((DATA / f"omniglot-{run.config['network']}" / "record.json").read_text())
    assert run.network_record["sha256"] == net["exported"]["sha256"]
    assert record["code"]["git_dirty"] is False and record["code"]["git_commit"] == run.provenance["git_commit"]
    cmd = record["command"]
    assert cmd.startswith("python -m attention_paths omniglot-sampling --scale paper")
    assert f"--network {run.config['network']}" in cmd or run.config["network"] == "paper"
    for N, smp in run.sampled.items():
        st, d = smp.settings["sampler"], smp.diagnostics
        assert {k: st[k] for k in ("num_chains", "num_warmup", "num_samples", "seed")} == {
            k: run.config["sampler"][k] for k in ("num_chains", "num_warmup", "num_samples", "seed")
        }
        assert smp.kind == run.config["kind"] and smp.settings["arch"]["widths"][0] == N
        assert (
            d["divergences"] == sum(d["divergences_per_chain"]) and len(d["divergences_per_chain"]) == st["num_chains"]
        )
        assert 0 <= d["mean_accept_prob"] <= 1 and 0 <= d["share_at_depth_limit"] <= 1
        assert d["tree_depth_median"] <= st["max_tree_depth"] and d["mean_tree_steps"] <= 2 ** st["max_tree_depth"]
        draws = st["num_chains"] * st["num_samples"]
        for k in ("ess_bulk_U_min", "ess_bulk_U_median", "ess_bulk_outputs_min"):
            assert 0 < d[k] <= 4 * draws, k
        for k in ("rhat_U_max", "rhat_outputs_max"):
            assert d[k] >= 1.0 or (st["num_chains"] == 1 and np.isnan(d[k])), k
        assert run.solver[N]["converged"] and run.solver[N]["hessian_min_eig"] > 0 and run.solver[N]["grad_max"] <= 1e-8
        assert smp.sets["test"]["n"] == run.data_info["n_eval"] and abs(smp.corr) <= 1
