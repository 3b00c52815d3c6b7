"""Staged runs (issue 9): skipping, invalidation, corruption recovery, and the Dask parallel path."""

import json
import os
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from helpers import synthetic_oneshot_data
from toy_stages import toy_source, toy_stages

from attention_paths.base import provenance
from attention_paths.base.io import atomic_savez, load_npz
from attention_paths.runs import claims as cl
from attention_paths.runs import pipeline as pl
from attention_paths.runs import results, stages
from attention_paths.runs.registry import EXPERIMENTS


def _records(out):
    return {p.parent.name: json.loads(p.read_text()) for p in Path(out).glob(f"*/{results.RECORD}")}


def _statuses(res):
    return {k: v["status"] for k, v in res.items()}


def test_runs_then_skips_everything(tmp_path):
    stages = toy_stages()
    first = pl.run_pipeline(stages, tmp_path, progress=False)
    assert set(_statuses(first).values()) == {"ran"}
    z = load_npz(tmp_path / "merge" / "z.npz")["z"]
    x = load_npz(tmp_path / "source" / "x.npz")["x"]
    np.testing.assert_array_equal(z, np.stack([x**2 + s for s in (0.0, 1.0, 2.0, 3.0)]))
    mtimes = {n: (tmp_path / n / results.RECORD).stat().st_mtime_ns for n in first}
    second = pl.run_pipeline(stages, tmp_path, progress=False)
    assert set(_statuses(second).values()) == {"skipped"}
    assert mtimes == {n: (tmp_path / n / results.RECORD).stat().st_mtime_ns for n in first}
    assert "done" in pl.status_table(stages, tmp_path) and "stale" not in pl.status_table(stages, tmp_path)


def test_changed_settings_rerun_the_stage_and_its_dependants_only(tmp_path):
    pl.run_pipeline(toy_stages(), tmp_path, progress=False)
    keys = {n: r["key"] for n, r in _records(tmp_path).items()}
    changed = toy_stages(shifts=(0.0, 1.0, 2.5, 3.0))
    assert results.stage_state(tmp_path / "part-2", pl.stage_keys(changed)["part-2"])[0] == "stale"
    res = _statuses(pl.run_pipeline(changed, tmp_path, progress=False))
    assert res == {
        "source": "skipped",
        "part-0": "skipped",
        "part-1": "skipped",
        "part-2": "ran",
        "part-3": "skipped",
        "merge": "ran",
    }
    new = {n: r["key"] for n, r in _records(tmp_path).items()}
    assert [n for n in keys if keys[n] != new[n]] == ["merge", "part-2"] or sorted(
        n for n in keys if keys[n] != new[n]
    ) == ["merge", "part-2"]
    # an upstream change invalidates everything below it
    res = _statuses(pl.run_pipeline(toy_stages(seed=1, shifts=(0.0, 1.0, 2.5, 3.0)), tmp_path, progress=False))
    assert set(res.values()) == {"ran"}


def _edit_code(monkeypatch, files=None):
    """Pretend the package's source changed (all of it, or just ``files``)."""
    real = provenance.code_version

    def edited(names=None):
        touched = files is None or not names or any(Path(n).name in files for n in names)
        return real(names) + ("-edited" if touched else "")

    for module in (pl, results, cl):  # the modules that compare code versions
        monkeypatch.setattr(module, "code_version", edited)


def test_code_version_enters_the_key(monkeypatch):
    stages = toy_stages() + [pl.Stage("narrow", toy_source, {"n": 3, "seed": 0}, code=("base/io.py",))]
    before = pl.stage_keys(stages)
    _edit_code(monkeypatch, files={"claims.py"})  # an edit outside the narrow stage's files
    after = pl.stage_keys(stages)
    assert all(before[n] != after[n] for n in before if n != "narrow") and before["narrow"] == after["narrow"]
    _edit_code(monkeypatch, files={"io.py"})
    assert pl.stage_keys(stages)["narrow"] != before["narrow"]
    with pytest.raises(ValueError, match="do not exist"):
        pl.Stage("x", toy_source, code=("nope.py",))


def test_truncated_output_is_detected_and_recomputed(tmp_path):
    stages = toy_stages()
    pl.run_pipeline(stages, tmp_path, progress=False)
    good = (tmp_path / "part-1" / "y.npz").read_bytes()
    with open(tmp_path / "part-1" / "y.npz", "r+b") as fh:  # a run killed mid-copy, a full disk...
        fh.truncate(len(good) // 2)
    state, reason = results.stage_state(tmp_path / "part-1", pl.stage_keys(stages)["part-1"])
    assert state == "corrupt" and "bytes" in reason
    with pytest.raises(ValueError, match="corrupted"):
        load_npz(tmp_path / "part-1" / "y.npz")
    res = _statuses(pl.run_pipeline(stages, tmp_path, progress=False))
    assert res["part-1"] == "ran" and res["source"] == "skipped" and res["merge"] == "skipped"
    assert (tmp_path / "part-1" / "y.npz").read_bytes() == good
    # same size, other bytes: caught by the hash; a missing record: caught too
    (tmp_path / "part-2" / "y.npz").write_bytes(b"\0" * (tmp_path / "part-2" / "y.npz").stat().st_size)
    (tmp_path / "part-3" / results.RECORD).unlink()
    assert results.stage_state(tmp_path / "part-2")[0] == "corrupt"
    assert results.stage_state(tmp_path / "part-3")[0] == "corrupt"
    res = _statuses(pl.run_pipeline(stages, tmp_path, progress=False))
    assert res["part-2"] == res["part-3"] == "ran" and res["part-0"] == "skipped"


def _boom(ctx):
    (ctx.out / "half.txt").write_text("partial")
    raise RuntimeError("stage failed on purpose")


def test_a_failing_stage_leaves_nothing_half_written(tmp_path):
    stages = toy_stages()[:1] + [pl.Stage("bad", _boom, deps=("source",))]
    with pytest.raises(RuntimeError, match="on purpose"):
        pl.run_pipeline(stages, tmp_path, progress=False)
    assert not (tmp_path / "bad").exists()
    assert not [
        p for p in tmp_path.iterdir() if p.name.startswith(".") and p.name != results.LOCK
    ]  # the lock file stays, unlocked
    assert results.stage_state(tmp_path / "source")[0] == "done"  # finished stages stay and are reused


def test_bad_pipelines_are_refused(tmp_path):
    with pytest.raises(ValueError, match="unknown stage"):
        pl.run_pipeline([pl.Stage("a", _boom, deps=("nope",))], tmp_path, progress=False)
    with pytest.raises(ValueError, match="cycle"):
        pl.stage_keys([pl.Stage("a", _boom, deps=("b",)), pl.Stage("b", _boom, deps=("a",))])
    with pytest.raises(ValueError, match="two stages"):
        pl.stage_keys([pl.Stage("a", _boom), pl.Stage("a", _boom)])
    with pytest.raises(ValueError, match="bad stage name"):
        pl.Stage("../x", _boom)
    with pytest.raises(ValueError, match="unknown stage"):
        pl.run_pipeline(toy_stages(), tmp_path, only=["nope"], progress=False)


def test_only_runs_what_a_stage_needs(tmp_path):
    res = pl.run_pipeline(toy_stages(), tmp_path, only=["part-2"], progress=False)
    assert sorted(res) == ["part-2", "source"]


@pytest.mark.slow
def test_local_cluster_of_two_workers_matches_the_serial_path(tmp_path):
    distributed = pytest.importorskip("distributed")
    stages = toy_stages(n=5000, shifts=(0.0, 0.5, 1.0, 1.5, 2.0, 2.5))
    pl.run_pipeline(stages, tmp_path / "serial", progress=False)
    # Dask's nanny sets OMP_NUM_THREADS=1 and friends in this process's environment for its workers; restored
    # afterwards (whatever a process starts later, e.g. a chapter's kernel, must not inherit them)
    with (
        mock.patch.dict(os.environ),
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cl,
        distributed.Client(cl) as client,
    ):
        res = pl.run_pipeline(stages, tmp_path / "parallel", client=client, progress=False)
        assert set(_statuses(res).values()) == {"ran"}
        pids = {r["process"]["pid"] for r in _records(tmp_path / "parallel").values()}
        again = pl.run_pipeline(stages, tmp_path / "parallel", client=client, progress=False)
        assert set(_statuses(again).values()) == {"skipped"}
    serial, parallel = _records(tmp_path / "serial"), _records(tmp_path / "parallel")
    assert serial.keys() == parallel.keys()
    for name in serial:  # identical keys and byte-identical outputs
        assert serial[name]["key"] == parallel[name]["key"]
        assert serial[name]["files"] == parallel[name]["files"], name
        assert serial[name]["summary"] == parallel[name]["summary"], name
    assert os.getpid() not in pids  # the parallel path ran on the cluster's worker processes
    assert {r["process"]["pid"] for r in serial.values()} == {os.getpid()}


# ------------------------------------------------------------------------------------------ the reproduction
def _oneshot_data():
    return synthetic_oneshot_data(np.random.default_rng(5))


def test_oneshot_extraction_round_trip_and_damage(tmp_path):
    from attention_paths.tasks import oneshot as osh

    data = _oneshot_data()
    osh.save_oneshot_data(data, tmp_path / "d.npz")
    back = osh.load_oneshot_data(tmp_path / "d.npz")
    assert back.info == json.loads(json.dumps(data.info, default=str))
    np.testing.assert_array_equal(back.U_gd, data.U_gd)
    for field in ("features", "y", "network_output"):
        assert getattr(back, field).keys() == getattr(data, field).keys()
        for k in getattr(data, field):
            np.testing.assert_array_equal(getattr(back, field)[k], getattr(data, field)[k])
    raw = (tmp_path / "d.npz").read_bytes()
    (tmp_path / "d.npz").write_bytes(raw[: len(raw) // 3])
    with pytest.raises(ValueError, match="corrupted"):
        osh.load_oneshot_data(tmp_path / "d.npz")


def test_grid_columns_computed_apart_merge_into_the_full_grid():
    from attention_paths.tasks import oneshot as osh

    data = _oneshot_data()
    widths, taus = [10, 100, 1000, 10000], [0.1, 0.25, 0.5, 1.0]
    full = osh.theory_grid(data, widths, taus)
    parts = [osh.theory_grid(data, widths, [t]) for t in reversed(taus)]  # stage order does not matter
    merged = osh.merge_grids(parts)
    np.testing.assert_array_equal(merged.taus, full.taus)
    np.testing.assert_array_equal(merged.U, full.U)  # each column is its own continuation
    for s in full.accuracy:
        np.testing.assert_array_equal(merged.accuracy[s], full.accuracy[s])
    with pytest.raises(ValueError, match="overlap"):
        osh.merge_grids([parts[0], parts[0]])
    # the experiment accepts the merged grid and refuses one that does not cover the scale's grid
    res = osh.run_oneshot("quick", sample=False, data=data, grid=merged)
    ref = osh.run_oneshot("quick", sample=False, data=data)
    assert res.select["val"]["theory"].tau.tolist() == ref.select["val"]["theory"].tau.tolist()
    np.testing.assert_array_equal(res.panel.U, ref.panel.U)
    with pytest.raises(ValueError, match="covers"):
        osh.run_oneshot("quick", sample=False, data=data, grid=osh.merge_grids(parts[:2]))


def test_a_grid_column_file_round_trips_exactly(tmp_path):
    """The grid's file format (``grid-tau<t>/grid.npz``) lives beside the grid code: save_grid then load_grid
    gives the column back bit for bit, and merging reloaded columns equals merging the live ones."""
    from attention_paths.tasks import oneshot as osh
    from attention_paths.tasks.oneshot.grid import load_grid, save_grid

    data = _oneshot_data()
    parts = [osh.theory_grid(data, [10, 100], [t]) for t in (0.25, 1.0)]
    for i, part in enumerate(parts):
        save_grid(part, tmp_path / f"g{i}.npz")
    back = [load_grid(tmp_path / f"g{i}.npz") for i in range(2)]
    for live, reloaded in zip(parts, back, strict=True):
        assert reloaded.seconds == live.seconds and reloaded.accuracy.keys() == live.accuracy.keys()
        for k in ("widths", "taus", "U", "grad_max"):
            np.testing.assert_array_equal(getattr(reloaded, k), getattr(live, k))
        np.testing.assert_array_equal(reloaded.n_iter, live.n_iter)
    merged, merged_back = osh.merge_grids(parts), osh.merge_grids(back)
    np.testing.assert_array_equal(merged_back.U, merged.U)
    for s in merged.accuracy:
        np.testing.assert_array_equal(merged_back.accuracy[s], merged.accuracy[s])


def test_reproduce_and_ensemble_share_one_network_chain():
    """Issue 35 §5: ``reproduce`` and ``ensemble`` build a network's stages with the one
    :func:`~attention_paths.runs.stages.network_chain`: the ensemble's ``paper.`` group is reproduce's
    paper-scale chain under a prefix, without the sampling stages (settings, dependencies and GPU flags equal)."""
    repro = {s.name: s for s in stages.reproduction_stages("paper")}
    ens = {s.name[len("paper.") :]: s for s in stages.ensemble_stages((42,)) if s.name.startswith("paper.")}
    samples = {n for n in repro if n.startswith("sample-N")}
    self_contained = {"data", "theory", "posterior", "hmc", "omniglot-sampling", "analyse", "prune"}
    assert samples == {"sample-N10"} and set(ens) == set(repro) - samples - self_contained
    for name, s in ens.items():
        r = repro[name]
        assert (s.func, s.gpu, s.code, s.prefix) == (r.func, r.gpu, r.code, "paper."), name
        assert tuple(d.removeprefix("paper.") for d in s.deps) == tuple(d for d in r.deps if d not in samples)
        assert s.params == r.params, name  # so a network's results are the same in either
    assert ens["train"].options == {"threads": None} and repro["train"].options == {}
    # the self-contained experiments are the registry's, each one stage
    assert sorted(n for n in repro if n in EXPERIMENTS) == sorted(EXPERIMENTS)
    assert all(repro[n].gpu == EXPERIMENTS[n].gpu for n in ("theory", "posterior", "hmc"))


def test_reproduction_stages_form_the_documented_graph():
    from attention_paths.runs.stages import reproduction_stages

    for scale in ("quick", "paper"):
        stages = reproduction_stages(scale)
        by = {s.name: s for s in stages}
        keys = pl.stage_keys(stages)  # a valid DAG
        grids = [n for n in by if n.startswith("grid-tau")]
        assert len(grids) == (4 if scale == "quick" else 10)
        assert set(grids) <= set(by["omniglot-theory"].deps) and set(grids) <= set(by["pruning"].deps)
        assert all(by[g].deps == ("export",) for g in grids)
        assert by["train"].gpu and by["sample-N10"].gpu and not by["export"].gpu
        assert by["train"].code and not by["export"].code  # training is keyed by its own code only
        assert {"theory", "posterior", "hmc"} <= set(by) and not by["hmc"].deps
        assert len(set(keys.values())) == len(keys)
    quick, paper = pl.stage_keys(reproduction_stages("quick")), pl.stage_keys(reproduction_stages("paper"))
    assert quick["data"] == paper["data"]  # the same datasets: shared between scales
    assert quick["export"] != paper["export"]
    budget = pl.stage_keys(reproduction_stages("quick", sampling={"num_chains": 4}))
    assert budget["sample-N10"] != quick["sample-N10"] and budget["grid-tau0.5"] == quick["grid-tau0.5"]


def test_reproduce_without_sampling_keeps_every_other_stage_and_key():
    """``reproduce --no-sample`` (how the 64-path theory of the 2 x 8 network runs resumably, one temperature
    column per stage): no ``sample-N`` stage, an ``omniglot-theory`` stage that needs none, and every other
    stage the same, with the same key (its columns are the sampled run's)."""
    from attention_paths.runs.stages import reproduction_stages

    full, bare = reproduction_stages("paper"), reproduction_stages("paper", sample=False)
    by_full, by_bare = {s.name: s for s in full}, {s.name: s for s in bare}
    assert set(by_full) - set(by_bare) == {"sample-N10"} and set(by_bare) <= set(by_full)
    assert not [d for d in by_bare["omniglot-theory"].deps if d.startswith("sample-N")]
    keys_full, keys_bare = pl.stage_keys(full), pl.stage_keys(bare)
    same = [n for n in by_bare if n not in ("omniglot-theory",)]
    assert all(keys_full[n] == keys_bare[n] for n in same)
    assert keys_full["omniglot-theory"] != keys_bare["omniglot-theory"]


def _stored_result(ctx):
    results.write_result(ctx.out, {"answer": ctx.params["value"], "array": np.arange(3.0)})


def test_chapters_render_from_a_results_folder(tmp_path, monkeypatch, capsys):
    stages = [pl.Stage("demo", _stored_result, {"scale": "quick", "value": 42})]
    pl.run_pipeline(stages, tmp_path, progress=False)
    called = []
    monkeypatch.delenv("REPRO_RESULTS", raising=False)
    assert results.result_or_compute("demo", lambda: called.append(1) or "live", "quick") == "live" and called
    monkeypatch.setenv("REPRO_RESULTS", str(tmp_path))
    res = results.result_or_compute("demo", lambda: called.append(2), "quick")
    assert res["answer"] == 42 and called == [1]  # loaded, not computed
    assert "loaded from" in capsys.readouterr().out
    with pytest.raises(ValueError, match="REPRO_SCALE"):
        results.result_or_compute("demo", lambda: None, "paper")
    with pytest.raises(FileNotFoundError, match="no output of stage 'nope'"):
        results.result_or_compute("nope", lambda: None, "quick")
    with monkeypatch.context() as m:
        _edit_code(m)
        with pytest.raises(ValueError, match="other code"):
            results.result_or_compute("demo", lambda: None, "quick")
    with open(tmp_path / "demo" / "result.pkl", "ab") as fh:
        fh.write(b"tampered")
    with pytest.raises(ValueError, match="corrupt"):
        results.result_or_compute("demo", lambda: None, "quick")
    monkeypatch.setenv("REPRO_RESULTS", str(tmp_path / "missing"))
    with pytest.raises(FileNotFoundError, match="REPRO_RESULTS"):
        results.result_or_compute("demo", lambda: None, "quick")


def test_claim_records_feed_the_map(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTENTION_PATHS_CLAIMS", str(tmp_path))
    claims = [
        {"id": "A1", "claim": "x grows", "passed": True, "detail": "x: 1 -> 2"},
        {"id": "A2", "claim": "y | z", "passed": False, "detail": "y 3"},
        {"id": "A3", "claim": "w", "passed": False, "detail": "w 0"},
    ]
    with pytest.raises(AssertionError, match="A3"):
        cl.assert_claims(claims, {"A2": "known"}, chapter="demo", scale="quick")
    records = cl.load_claim_records("quick")  # recorded before asserting
    assert list(records) == ["demo"] and records["demo"]["expected_failures"] == {"A2": "known"}
    table = cl.claims_markdown(records, {"demo": "Demo", "other": "Other"})
    lines = table.splitlines()
    assert lines[0].startswith("**Demo**: computed ") and lines[2] == "| claim | computed | numbers |"
    assert lines[4] == "| A1: x grows | **agrees** | x: 1 -> 2 |"
    assert "A2: y \\| z | known deviation" in lines[5] and "**FAILS**" in lines[6]
    assert "**Other**: not computed yet" in table and "stale" not in table
    _edit_code(monkeypatch)
    assert "stale" in cl.claims_markdown(records, {"demo": "Demo"})
    (tmp_path / "quick" / "broken.json").write_text("{")
    assert "unreadable" in cl.load_claim_records("quick")["broken"]["error"]


def test_readorder_extension_moves_pages_last():
    import importlib.util
    from pathlib import Path
    from types import SimpleNamespace

    spec = importlib.util.spec_from_file_location("readorder", Path(__file__).parents[2] / "_ext" / "readorder.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    docs = ["book/api", "book/figure_map", "book/hmc", "book/theory"]
    mod._reorder(SimpleNamespace(config=SimpleNamespace(read_last=["book/figure_map", "book/absent"])), None, docs)
    assert docs == ["book/api", "book/hmc", "book/theory", "book/figure_map"]


def test_stored_hmc_result_keeps_the_headline_task_whole():
    from attention_paths.tasks.markov import MarkovResult, MarkovSeeds, MarkovTask, SeedSet, WidthSweep

    def task():
        z = np.zeros((3, 2))
        return MarkovTask("main", np.ones((4, 5, 6)), z, np.ones((7, 5, 6)), z, [], z, ("g",), z, z, z, z)

    def seed_set(k):
        a = np.array([float(k)])
        sw = WidthSweep(widths=a, U=a, accuracy=a, gp_accuracy=k, grad_max=a, hessian_min_eig=a, iterations=a)
        return SeedSet(
            k=k,
            seeds=MarkovSeeds(),
            sweep=sw,
            noisy_sweep=sw,
            gp_all=k,
            gp_g=k,
            gp_gd=k,
            alone_network=a,
            alone_mask=a,
            head_scores=[],
            noisy_diagonal_only=a,
            noisy_equalised_diagonal=a,
            main=task(),
            noisy=task(),
        )

    res = MarkovResult(
        scale="quick",
        config=None,
        sets=[seed_set(k) for k in range(3)],
        theory_seconds=0.0,
        kernels={},
        kernel_subset=np.arange(2),
        alignment={},
    )
    slim = EXPERIMENTS["hmc"].resolve("stored")(res)  # what the hmc stage keeps in result.pkl
    assert slim.sets[0].main.x_test.shape == (7, 5, 6)  # the chapter's data figure uses it
    assert all(s.main.x_test.size == 0 and s.noisy.x_train.size == 0 for s in slim.sets[1:])
    assert [s.sweep for s in slim.sets] == [s.sweep for s in res.sets]
    assert all(s.main.features_train is t.main.features_train for s, t in zip(slim.sets, res.sets, strict=True))
    assert res.sets[1].main.x_test.shape == (7, 5, 6)  # the live result is untouched


def test_a_recomputed_stage_with_new_output_reruns_its_dependants(tmp_path):
    stages = toy_stages(seed=None)  # the source draws fresh numbers every time it runs
    pl.run_pipeline(stages, tmp_path, progress=False)
    res = _statuses(pl.run_pipeline(stages, tmp_path, force=["source"], progress=False))
    assert set(res.values()) == {"ran"}  # new x: every part and the merge follow
    x = load_npz(tmp_path / "source" / "x.npz")["x"]
    np.testing.assert_array_equal(load_npz(tmp_path / "part-0" / "y.npz")["y"], x**2)
    det = toy_stages()  # deterministic: forcing reproduces the same bytes, nothing below reruns
    pl.run_pipeline(det, tmp_path / "det", progress=False)
    res = _statuses(pl.run_pipeline(det, tmp_path / "det", force=["source"], progress=False))
    assert res["source"] == "ran" and {v for k, v in res.items() if k != "source"} == {"skipped"}


# ------------------------------------------------------------------------------------------ issue 18, group 1
_SLOW_RUN = """
import os, sys, time
from attention_paths.runs.pipeline import Stage, run_pipeline
from attention_paths.base.io import atomic_savez
import numpy as np

def slow(ctx):
    atomic_savez(ctx.out / "a.npz", a=np.arange(3))
    wait = sys.argv[2]  # seconds to sleep, or a file to wait for (the test writes it when it is done)
    if wait.replace(".", "").isdigit():
        time.sleep(float(wait))
    else:
        deadline = time.time() + 300
        while not os.path.exists(wait) and time.time() < deadline:
            time.sleep(0.05)
    atomic_savez(ctx.out / "b.npz", b=np.arange(4))

if __name__ == "__main__":
    run_pipeline([Stage("slow", slow, {"v": 1})], sys.argv[1], progress=False)
    print("finished")
"""


def test_two_processes_on_one_results_folder(tmp_path):
    """A second run on a folder another live run holds is refused at once, with the holder named; the first
    run's outputs stay complete; the lock goes with the process."""
    import subprocess
    import sys
    import time

    script = tmp_path / "slow_run.py"
    script.write_text(_SLOW_RUN)
    out = tmp_path / "out"
    go = tmp_path / "go"  # the first run holds the folder until the second has been refused
    first = subprocess.Popen(
        [sys.executable, str(script), str(out), str(go)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.time() + 60
    while not list(out.glob(".slow.tmp-*")) and time.time() < deadline:
        time.sleep(0.1)
    assert list(out.glob(".slow.tmp-*")), "the first run did not start"
    second = subprocess.run([sys.executable, str(script), str(out), "0"], capture_output=True, text=True)
    go.touch()
    assert second.returncode != 0 and "in use by another run" in second.stderr and f"pid {first.pid}" in second.stderr
    stdout, stderr = first.communicate(timeout=120)
    assert first.returncode == 0 and "finished" in stdout, stderr
    state, _ = results.stage_state(out / "slow")
    assert state == "done" and set(json.loads((out / "slow" / results.RECORD).read_text())["files"]) == {
        "a.npz",
        "b.npz",
    }
    # the lock died with the process: a third run may proceed (and skips the done stage)
    third = subprocess.run([sys.executable, str(script), str(out), "0"], capture_output=True, text=True)
    assert third.returncode == 0, third.stderr


def test_a_killed_run_leaves_no_lock_and_its_leftovers_are_cleaned(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    script = tmp_path / "slow_run.py"
    script.write_text(_SLOW_RUN)
    out = tmp_path / "out"
    run = subprocess.Popen([sys.executable, str(script), str(out), "30"])
    deadline = time.time() + 60
    while not list(out.glob(".slow.tmp-*")) and time.time() < deadline:
        time.sleep(0.1)
    run.send_signal(signal.SIGKILL)
    run.wait()
    (out / ".slow.old-deadbeef").mkdir()  # as if killed between the two renames
    assert list(out.glob(".slow.tmp-*"))
    res = subprocess.run([sys.executable, str(script), str(out), "0"], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert not list(out.glob(".slow.tmp-*")) and not list(out.glob(".slow.old-*"))
    assert results.stage_state(out / "slow")[0] == "done"


@pytest.mark.parametrize(
    "damage", ["bytes", "files-null", "files-empty", "files-list", "entry", "outside", "not-object", "no-key"]
)
def test_damaged_or_ill_formed_records_mean_corrupt(tmp_path, damage):
    stages = toy_stages(n=20, shifts=(0.0,))
    pl.run_pipeline(stages, tmp_path, progress=False)
    rec_path = tmp_path / "source" / results.RECORD
    rec = json.loads(rec_path.read_text())
    if damage == "bytes":
        rec_path.write_bytes(b"\xff\xfe{" + rec_path.read_bytes()[3:])
    else:
        bad = {
            "files-null": dict(rec, files=None),
            "files-empty": dict(rec, files={}),
            "files-list": dict(rec, files=["x.npz"]),
            "entry": dict(rec, files={"x.npz": {"size": "big"}}),
            "outside": dict(rec, files={"../x.npz": rec["files"]["x.npz"]}),
            "not-object": [rec],
            "no-key": {k: v for k, v in rec.items() if k != "key"},
        }[damage]
        rec_path.write_text(json.dumps(bad))
    keys = pl.stage_keys(stages)
    state, reason = results.stage_state(tmp_path / "source", keys["source"])
    assert state == "corrupt", reason
    assert "source" in pl.status_table(stages, tmp_path)  # --status does not crash
    res = pl.run_pipeline(stages, tmp_path, progress=False)
    assert res["source"]["status"] == "ran" and results.stage_state(tmp_path / "source", keys["source"])[0] == "done"


def _group_merge(ctx):
    """A stage of a group: reads its group's source under the bare name, and the shared one."""
    x = load_npz(ctx.inputs["source"] / "x.npz")["x"]
    atomic_savez(ctx.out / "y.npz", y=x + len(ctx.inputs["shared"].name) + ctx.options.get("bump", 0))
    return {"inputs": sorted(ctx.inputs)}


def test_prefixed_groups_see_their_inputs_under_the_bare_names(tmp_path):
    """Stage.prefix (issue 23: one group of stages per network of the ensemble)."""
    st = [pl.Stage("shared", toy_source, {"n": 3, "seed": 0})]
    for g in ("a", "b"):
        st += [
            pl.Stage(f"{g}.source", toy_source, {"n": 3, "seed": ord(g)}, prefix=f"{g}."),
            pl.Stage(
                f"{g}.merge", _group_merge, {}, deps=(f"{g}.source", "shared"), prefix=f"{g}.", options={"bump": 0}
            ),
        ]
    res = pl.run_pipeline(st, tmp_path, progress=False)
    assert set(_statuses(res).values()) == {"ran"}
    rec = results.read_record(tmp_path / "b.merge")
    assert rec["summary"]["inputs"] == ["shared", "source"]
    xb = load_npz(tmp_path / "b.source" / "x.npz")["x"]
    np.testing.assert_array_equal(load_npz(tmp_path / "b.merge" / "y.npz")["y"], xb + len("shared"))
    # options do not enter the key
    st2 = [s if s.name != "a.merge" else pl.Stage(**{**s.__dict__, "options": {"bump": 5}}) for s in st]
    assert pl.stage_keys(st2) == pl.stage_keys(st)
    with pytest.raises(ValueError, match="does not start with its prefix"):
        pl.Stage("merge", toy_source, prefix="a.")
    with pytest.raises(ValueError, match="under one name"):
        pl.Stage("a.m", toy_source, deps=("a.x", "x"), prefix="a.")


def test_ensemble_stages_form_one_group_per_network():
    from attention_paths.runs.stages import ensemble_members, ensemble_stages

    stages = ensemble_stages((42, 1))
    by = {s.name: s for s in stages}
    keys = pl.stage_keys(stages)
    assert len(stages) == 1 + 2 * 14 + 1 and len(set(keys.values())) == len(keys)
    for name in ("paper", "paper-seed1"):
        grids = [n for n in by if n.startswith(f"{name}.grid-tau")]
        assert len(grids) == 10 and all(by[g].deps == (f"{name}.export",) for g in grids)
        assert set(grids) <= set(by[f"{name}.pruning"].deps) and by[f"{name}.train"].deps == ("data",)
        assert by[f"{name}.train"].params["network"] == name and by[f"{name}.train"].gpu
        assert by[f"{name}.omniglot-theory"].params["config"]["network"] == name
        assert not [s for s in by if s.startswith(f"{name}.sample")]  # no sampling in the ensemble
    assert set(by["ensemble"].deps) == {
        f"{n}.{p}" for n in ("paper", "paper-seed1") for p in ("train", "omniglot-theory", "pruning")
    }
    # the same network's stages have the same keys in any ensemble (its results are shared)
    alone = pl.stage_keys(ensemble_stages((1,)))
    assert all(alone[k] == keys[k] for k in alone if k.startswith("paper-seed1."))
    # the threads option leaves every key unchanged
    assert pl.stage_keys(ensemble_stages((42, 1), threads=1)) == keys
    assert ensemble_members() == [
        (42, "paper"),
        (1, "paper-seed1"),
        (2, "paper-seed2"),
        (3, "paper-seed3"),
        (4, "paper-seed4"),
    ]
    with pytest.raises(ValueError, match="distinct seeds"):
        ensemble_stages((1, 1))


def test_failing_claims_are_listed_with_their_reason_and_section():
    """Issue 26: no failing claim is a bare FAIL line; each gets its reason and a link to its explanation."""
    from attention_paths.runs.claims import deviations_markdown

    claims = [
        {"id": "C1", "claim": "a", "passed": True, "detail": ""},
        {"id": "C3", "claim": "b", "passed": False, "detail": ""},
    ]
    text = deviations_markdown(claims, {"C3": "head (2)1 is essential"}, {"C3": "pruning-paper"})
    assert "- **C3**: head (2)1 is essential (see {ref}`pruning-paper`)" in text and "C1" not in text
    assert deviations_markdown(claims[:1], {}, {}) == "Every claim holds on these numbers."


def test_claims_text_fits_the_column():
    """Issue 26: printed claims fit the ~83-character column (statement and numbers wrapped at 80)."""
    from attention_paths.runs.claims import format_claims

    claims = [{"id": "C5", "claim": "word " * 40, "passed": False, "detail": "1.0 " * 60}]
    text = format_claims(claims)
    assert text.startswith("[FAIL] C5: word") and max(len(line) for line in text.splitlines()) <= 80


def test_the_ensemble_summary_is_a_results_folder(tmp_path):
    """Issue 35 §5: the ``ensemble`` stage writes its table through the results writer (format version and
    digests), from one member's committed network, theory and pruning runs; a damaged byte is refused."""
    from attention_paths.base import config

    data = config.repo_data_dir()
    ctx = pl.StageContext(
        name="ensemble",
        out=tmp_path / "ensemble",
        inputs={
            "paper.train": data / "omniglot-paper",
            "paper.omniglot-theory": data / "omniglot-theory" / "paper-sizes-paper-network",
            "paper.pruning": data / "pruning" / "paper-network",
        },
        work=tmp_path / "work",
        params={"members": [[42, "paper"]]},
    )
    ctx.out.mkdir()
    tally = stages.stage_ensemble(ctx)
    summary, arrays = results.read(ctx.out)
    assert summary["format"] == results.FORMAT and summary["experiment"] == "ensemble" and arrays == {}
    assert summary["members"] == [[42, "paper"]] and [r["seed"] for r in summary["rows"]] == [42]
    assert tally == {cid: f"{t['holds']}/{t['of']}" for cid, t in summary["tally"].items()} and tally
    assert all(t["of"] == 1 for t in summary["tally"].values())
    record = json.loads((data / "omniglot-paper" / "record.json").read_text())
    assert summary["rows"][0]["accuracy"]["test"][0] == record["accuracies"]["test"]["accuracy"]
    raw = bytearray((ctx.out / results.SUMMARY).read_bytes())
    raw[-3] ^= 1
    (ctx.out / results.SUMMARY).write_bytes(bytes(raw))
    with pytest.raises(ValueError, match="summary.json"):
        results.read(ctx.out)


def test_tallied_claims_show_k_of_n_in_the_map(tmp_path, monkeypatch):
    """The architectures chapter's record: one claim per id tallied over networks (tasks.ensemble.tally_claims),
    shown as "holds on k of n" with the networks where it fails."""
    from types import SimpleNamespace

    from attention_paths.tasks import ensemble

    monkeypatch.setenv("ATTENTION_PATHS_CLAIMS", str(tmp_path))
    rows = [
        SimpleNamespace(name=n, seed=s, claims=c, claim_text={"C1": "one", "C7-1": "seven"})
        for n, s, c in (
            ("paper", 42, {"C1": True, "C7-1": False}),
            ("paper-3x3", 42, {"C1": True, "C7-1": True}),
            ("paper-2x8", 42, {"C1": True}),
        )
    ]
    recs = ensemble.tally_claims(rows, label="name")
    assert [(r["id"], r["holds"], r["of"], r["passed"]) for r in recs] == [("C1", 3, 3, True), ("C7-1", 1, 2, False)]
    assert recs[1]["detail"] == "holds on 1 of 2 networks; fails on paper"
    cl.record_claims("architectures", recs, "quick")
    table = cl.claims_markdown(cl.load_claim_records("quick"), {"architectures": "Arch"})
    assert "| C1: one | **holds on 3 of 3** | holds on 3 of 3 networks |" in table
    assert "| C7-1: seven | holds on 1 of 2 | holds on 1 of 2 networks; fails on paper |" in table
