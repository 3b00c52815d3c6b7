"""Across trained networks (issue 23): the per-network rows, their spread and the claim tally."""

import dataclasses
import json
import math
import shutil
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from helpers import interrupted_last_pt

from attention_paths.runs import committed_ensemble as ensemble_runs
from attention_paths.runs import experiments, results
from attention_paths.tasks import ensemble, pruning

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data"


def _paper_row():
    rec = json.loads((DATA / "omniglot-paper" / "record.json").read_text())
    theory = experiments.load_run(DATA / "omniglot-theory" / "paper-sizes-paper-network", "omniglot-theory")
    prune = experiments.load_run(DATA / "pruning" / "paper-network", "pruning")
    return ensemble.network_row(42, rec, theory, prune), rec, theory, prune


def test_a_row_holds_the_committed_numbers_of_its_network():
    row, rec, theory, prune = _paper_row()
    assert row.seed == 42 and row.name == "paper" and row.precision == "float32"
    assert row.accuracy["test"] == (
        rec["accuracies"]["test"]["accuracy"],
        rec["accuracies"]["test"]["se"],
        rec["accuracies"]["test"]["episodes"],
    )
    # theory - GP is the paired comparison of the committed per-episode predictions
    n = theory.config["n_eval"]
    y = np.repeat([1.0, -1.0], n // 2)
    k = 1  # the test set is the second block (val, test, MNIST, FashionMNIST)
    th = theory.paired.theory[k * n : (k + 1) * n]
    gp = theory.paired.gp[k * n : (k + 1) * n]
    d = (np.sign(th) == y).astype(float) - (np.sign(gp) == y).astype(float)
    assert row.theory_minus_gp["test"][0] == pytest.approx(100 * d.mean())
    assert row.theory_minus_gp["test"][1] == pytest.approx(100 * d.std(ddof=1) / math.sqrt(n))
    # and agrees with the selection tables' accuracies (theory at the smallest width minus the GP)
    sel = theory.select["val"]
    assert row.theory_minus_gp["test"][0] == pytest.approx(
        sel["theory"].accuracy["test"][0] - sel["gp"].accuracy["test"], abs=1e-9
    )
    assert row.lowest["head"] == prune.order[0]
    assert row.two_lowest["heads"] == tuple(prune.order[:2])
    assert row.spearman[0] == prune.spearman["theory"].rho
    # the recorded claims (a claim added since a run was written is checked on its stored numbers: test_pruning)
    assert set(row.claims) == {c["id"] for c in theory.claims} | {c[0] for c in pruning.PRUNING_CLAIMS}
    assert {c["id"]: c["passed"] for c in prune.claims}["C3-OOD+"] is row.claims["C3-OOD+"] is False


def test_spread_and_tally_over_networks():
    row, *_ = _paper_row()
    # a second, altered network: seed 7, C3 passes, lower accuracy, not sampled (no I3)
    claims = {k: v for k, v in row.claims.items() if k != "I3"} | {"C3": True}
    other = dataclasses.replace(row, seed=7, accuracy=row.accuracy | {"test": (79.0, 0.3, 20480)}, claims=claims)
    sp = ensemble.spread([row, other])
    a = np.array([row.accuracy["test"][0], 79.0])
    assert sp["accuracy ID"]["mean"] == pytest.approx(a.mean())
    assert sp["accuracy ID"]["sd"] == pytest.approx(a.std(ddof=1))
    assert (sp["accuracy ID"]["min"], sp["accuracy ID"]["max"], sp["accuracy ID"]["n"]) == (79.0, a.max(), 2)
    tally = ensemble.claim_tally([row, other])
    assert (tally["C3"]["holds"], tally["C3"]["of"], tally["C3"]["failing"]) == (1, 2, [42])
    assert (tally["I3"]["holds"], tally["I3"]["of"]) == (1, 1)
    text = ensemble.format_tally([row, other], "C")
    assert "C3         holds on 1 of 2  (fails: seed 42)" in text and "I3" not in text
    # networks of several architectures share a seed: named by name instead
    third = dataclasses.replace(other, name="paper-3x3", seed=42, claims=claims | {"C3": False})
    named = ensemble.claim_tally([row, other, third], label="name")["C3"]
    assert (named["holds"], named["of"], named["failing"]) == (1, 3, [row.name, "paper-3x3"])
    # printed without the recipe's "paper-" prefix ("paper" itself stays)
    assert f"C3         holds on 1 of 3  (fails: {row.name}, 3x3)" in ensemble.format_tally(
        [row, other, third], "C3", "name"
    )
    named_rows = [row, dataclasses.replace(other, name="paper-seed1"), third]
    assert [line.split()[0] for line in ensemble.format_rows(named_rows, "pruning", "name").splitlines()[1:]] == [
        "paper",
        "seed1",
        "3x3",
    ]
    with pytest.raises(ValueError, match="label must be"):
        ensemble.claim_tally([row], label="arch")
    for part in ("theory", "pruning"):
        for line in (
            ensemble.format_rows([row, other], part).splitlines()
            + ensemble.format_rows(named_rows, part, "name").splitlines()
            + ensemble.format_spread([row, other], part).splitlines()
        ):
            assert len(line) <= 80, line
    assert "-" in ensemble.format_spread([row]).splitlines()[1]  # no spread for a single network
    with pytest.raises(ValueError, match="no networks"):
        ensemble.spread([])
    with pytest.raises(ValueError, match="part"):
        ensemble.format_rows([row], "both")


def test_load_members_reads_complete_commits_and_refuses_partial_ones(tmp_path):
    rows = ensemble_runs.load_members()
    assert rows and rows[0].seed == 42
    data = tmp_path / "data"
    for src, dst in (
        ("omniglot-paper", "omniglot-paper"),
        ("omniglot-theory/paper-sizes-paper-network", "omniglot-theory/paper-sizes-paper-network"),
        ("pruning/paper-network", "pruning/paper-network"),
    ):
        shutil.copytree(DATA / src, data / dst)
    assert [r.seed for r in ensemble_runs.load_members(data_dir=data)] == [42]
    shutil.copytree(DATA / "omniglot-paper-seed1", data / "omniglot-paper-seed1")  # a network without its analyses
    with pytest.raises(ValueError, match="paper-seed1 is committed only in part"):
        ensemble_runs.load_members(data_dir=data)
    status = {e["seed"]: e["state"] for e in ensemble_runs.training_status(data_dir=data)}
    assert status == {42: "committed", 1: "trained", 2: "not started", 3: "not started", 4: "not started"}
    # a theory run of another network is refused by the network's SHA-256
    shutil.rmtree(data / "omniglot-paper-seed1")
    q = data / "omniglot-theory" / "paper-sizes-paper-network" / "summary.json"
    s = json.loads(q.read_text())
    s["network_record"]["sha256"] = "0" * 64
    q.write_text(json.dumps(s))
    with pytest.raises(ValueError, match="summary.json does not match the SHA-256"):
        ensemble_runs.load_members(data_dir=data)
    results.write_files_record(q.parent)  # consistently edited: the network's SHA-256 still tells
    with pytest.raises(ValueError, match="computed on another network"):
        ensemble_runs.load_members(data_dir=data)


def test_a_committed_member_comes_back_with_its_runs_read_once(monkeypatch):
    """load_committed_member returns the row with the record and runs it was built from: each results folder
    is read once, and the row equals the one load_member gives (its registered seed by default)."""
    reads = []
    real = experiments.load_run

    def counted(folder, *args, **kwargs):
        reads.append(Path(folder).name)
        return real(folder, *args, **kwargs)

    monkeypatch.setattr(experiments, "load_run", counted)
    m = ensemble_runs.load_committed_member("paper")
    assert sorted(reads) == ["paper-network", "paper-sizes-paper-network"]
    assert m.row == ensemble_runs.load_member("paper", 42) and m.row.seed == 42
    assert m.theory.config["network"] == m.pruning.config["network"] == "paper"
    assert m.record["exported"]["sha256"] == m.theory.network_record["sha256"]
    assert m.row.spearman[0] == m.pruning.spearman["theory"].rho
    with pytest.raises(ValueError, match="trained with seed 42, not 7"):
        ensemble_runs.load_committed_member("paper", 7)
    assert [c.row for c in ensemble_runs.load_committed_members((42,))] == [m.row]


def test_a_row_takes_the_cumulative_claims_beside_its_own():
    row, _, _, prune = _paper_row()
    c7 = pruning.cumulative_claims(pruning.cumulative_pruning(prune, n_random=5, seed=0))
    ids = {c["id"] for c in c7}
    assert ids == {"C7-1", "C7-3", "C7-curve"} and not ids & set(row.claims)
    more = row.with_claims(c7)
    assert {k: more.claims[k] for k in ids} == {c["id"]: bool(c["passed"]) for c in c7}
    assert {k: v for k, v in more.claims.items() if k not in ids} == row.claims  # its own claims unchanged
    assert more.claim_details["C7-curve"] == next(c["detail"] for c in c7 if c["id"] == "C7-curve")
    flipped = more.with_claims([{**c7[0], "passed": not c7[0]["passed"]}])  # a claim it holds is replaced
    assert flipped.claims[c7[0]["id"]] is not more.claims[c7[0]["id"]] and len(flipped.claims) == len(more.claims)
    tally = ensemble.claim_tally([row, more])
    assert all(tally[k]["of"] == 1 for k in ids) and tally["C1"]["of"] == 2


def test_a_resumable_state_is_committed_and_reported(tmp_path, monkeypatch):
    """An unfinished member: its last.pt saved as data/omniglot-<name>/resume.pt with its progress; the status
    says how far it has come, the train stage's resume_state finds it, and a run of other settings is refused."""

    from attention_paths.tasks.omniglot import checkpoints

    history = [{"step": 1000, "train_loss": 1.0, "seconds": 300.0, "val": {"accuracy": 60.0, "n": 10}}]
    run = interrupted_last_pt(tmp_path / "run", "paper-seed3", history).parent
    data = tmp_path / "data"
    path = ensemble_runs.save_resume_state(run, "paper-seed3", data_dir=data)
    assert path == data / "omniglot-paper-seed3" / "resume.pt" and path.read_bytes() == (run / "last.pt").read_bytes()
    status = {e["seed"]: e for e in ensemble_runs.training_status(data_dir=data)}
    assert status[3]["state"] == "training" and (status[3]["steps_done"], status[3]["steps"]) == (1000, 41_240)
    text = ensemble_runs.format_status(list(status.values()))
    assert "seed  3 (paper-seed3): training: 1,000 of 41,240 steps (resumable)" in text
    assert max(len(line) for line in text.splitlines()) <= 80
    assert (
        checkpoints.resume_state("paper-seed3", data_dir=data) == path
        and checkpoints.resume_state("paper-seed4", data_dir=data) is None
    )
    assert ensemble_runs.load_members(data_dir=data) == []  # not a member until committed whole
    # any network by name: its state, and its evaluation history read from the resumable state
    st = ensemble_runs.network_status("paper-seed3", data_dir=data)
    assert (st["state"], st["steps_done"], st["last_evaluation"]) == ("training", 1000, history[0])
    assert ensemble_runs.network_status("paper-2x8", data_dir=data) == {"name": "paper-2x8", "state": "not started"}
    rec = ensemble_runs.training_record("paper-seed3", data_dir=data)
    assert rec["history"] == history and rec["unfinished"] and (rec["steps_done"], rec["steps"]) == (1000, 41_240)
    assert ensemble_runs.training_record("paper-2x8", data_dir=data) is None
    assert ensemble_runs.format_status([st]) == "paper-seed3: training: 1,000 of 41,240 steps (resumable)"
    with pytest.raises(ValueError, match="not a run of network paper-seed2"):
        ensemble_runs.save_resume_state(run, "paper-seed2", data_dir=data)


def test_a_committed_member_spends_its_resumable_state(tmp_path):
    """Once a member is committed whole, resume.pt and resume.json go; the note moves into record.json."""
    from attention_paths.runs.stages import spend_resume_state

    (tmp_path / "resume.pt").write_bytes(b"state")
    (tmp_path / "resume.json").write_text(json.dumps({"steps_done": 36000, "note": "paused once"}))
    (tmp_path / "record.json").write_text(json.dumps({"steps_done": 41240}))
    spend_resume_state(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["record.json"]
    assert json.loads((tmp_path / "record.json").read_text()) == {"steps_done": 41240, "training_note": "paused once"}
    (tmp_path / "resume.json").write_text(json.dumps({"note": "another"}))  # an existing note is kept
    spend_resume_state(tmp_path)
    assert json.loads((tmp_path / "record.json").read_text())["training_note"] == "paused once"
    (tmp_path / "resume.json").write_text('{"note": "cut')  # damaged: named, and nothing is removed
    with pytest.raises(ValueError, match=r"resume record .*resume.json is damaged \(not valid JSON"):
        spend_resume_state(tmp_path)
    assert (tmp_path / "resume.json").exists()


def test_limit_gaps_find_the_cell_farthest_from_the_gp_limit():
    taus = [0.01, 0.1, 1.0]
    grid = {s: np.full((3, 4), 70.0) for s in ("val", "test")}
    gp = {s: np.full(3, 70.0) for s in ("val", "test")}
    grid["test"][0, -1], grid["test"][0, -2] = 64.0, 61.0  # far at the lowest temperature, closing with N
    grid["val"][2, -1] = 71.5  # the largest gap at any other temperature
    run = SimpleNamespace(widths=[10, 100, 1000, 5000], taus=taus, grid_accuracy=grid, gp_grid_accuracy=gp)
    lim = ensemble.limit_gaps(run)
    assert lim["widths"] == [1000, 5000]
    assert lim["worst"] == ("test", 0.01, 6.0, 9.0)
    assert lim["worst_above"] == pytest.approx(1.5)
    assert np.asarray(lim["gap"]["test"]).shape == (3, 2)


def test_limit_gaps_agree_with_the_committed_limit_claim():
    """The I2-limit claim's detail names the largest gap per set at the largest width: the same numbers."""
    row, _, theory, _ = _paper_row()
    detail = row.claim_details["I2-limit"]
    for s, g in row.limit["gap"].items():
        assert f"{s} {max(x[1] for x in g):.1f}" in detail
    assert row.limit["worst"][2] == pytest.approx(max(max(x[1] for x in g) for g in row.limit["gap"].values()))


def test_limit_gap_over_some_temperatures_is_the_largest_cell_among_them():
    row, _, theory, _ = _paper_row()
    assert ensemble.limit_gap(row.limit) == row.limit["worst"][:3]
    taus = [float(t) for t in theory.taus]
    # over tau >= 0.025 (the grid without its lowest temperature): the worst_above of limit_gaps, recomputed
    s, tau, g = ensemble.limit_gap(row.limit, 0.025)
    assert tau >= 0.025 and g == pytest.approx(row.limit["worst_above"])
    i, gp = taus.index(tau), np.asarray(theory.gp_grid_accuracy[s])
    assert g == pytest.approx(abs(np.asarray(theory.grid_accuracy[s])[i, -1] - gp[i]))
    with pytest.raises(ValueError, match="no temperature of the grid"):
        ensemble.limit_gap(row.limit, 10.0)


def _theory(name: str):
    return experiments.load_run(DATA / "omniglot-theory" / f"paper-sizes-{name}-network", "omniglot-theory")


def test_the_gp_on_every_temperature_is_the_best_validation_cell_of_list_and_grids():
    run = _theory("paper")
    got = ensemble.gp_on_every_temperature(run)
    cells = [(float(t), run.gp_accuracy["val"][i]) for i, t in enumerate(run.gp_taus)]
    cells += [(float(t), float(np.asarray(run.gp_grid_accuracy["val"])[i])) for i, t in enumerate(run.taus)]
    assert got["accuracy"]["val"] == max(v for _, v in cells)
    assert (got["tau"], got["accuracy"]["val"]) == next(c for c in cells if c[1] == got["accuracy"]["val"])
    # a tie keeps the reference's own choice: the GP list's selected temperature, and its gains are theory - GP
    sel = run.select["val"]
    if got["source"] == "list":
        assert got["tau"] == float(sel["gp"].tau)
        for s in pruning.EVAL_SETS:
            assert got["gain"][s] == pytest.approx(sel["theory"].accuracy[s][0] - sel["gp"].accuracy[s], abs=1e-12)
    # a grid temperature better on validation is chosen, with its accuracies on every set
    grid = {s: np.asarray(a, dtype=float).copy() for s, a in run.gp_grid_accuracy.items()}
    grid["val"][3] = 99.0
    better = ensemble.gp_on_every_temperature(dataclasses.replace(run, gp_grid_accuracy=grid))
    assert (better["source"], better["tau"]) == ("grid", float(run.taus[3]))
    assert better["gain"]["test"] == pytest.approx(sel["theory"].accuracy["test"][0] - grid["test"][3])
    with pytest.raises(ValueError, match="network"):
        ensemble.gp_on_every_temperature(run, _theory("paper-seed1"))
    with pytest.raises(ValueError, match="at least one"):
        ensemble.gp_on_every_temperature()


def test_the_2x8_gp_prefers_the_grids_lowest_temperature():
    """The 2 x 8 network's full grid (tau = 0.01 to 1.5): the GP chosen on validation over the grid's GP lines is
    its tau = 0.01 cell, better on validation than the edge (0.025) of the reference's own GP list; so was it
    against the tau = 0.01 supplement of the restricted grid that the full grid replaced (the same cell)."""
    main = _theory("paper-2x8")
    got = ensemble.gp_on_every_temperature(main)
    j = [float(t) for t in main.taus].index(0.01)
    assert (got["source"], got["tau"]) == ("grid", 0.01)
    assert got["accuracy"]["val"] == float(np.asarray(main.gp_grid_accuracy["val"])[j]) > max(main.gp_accuracy["val"])
    th = main.select["val"]["theory"]
    for s in pruning.EVAL_SETS:
        assert got["gain"][s] == pytest.approx(th.accuracy[s][0] - float(np.asarray(main.gp_grid_accuracy[s])[j]))
    # the reference's list alone keeps its own choice, the list's lowest temperature
    assert float(main.select["val"]["gp"].tau) == min(float(t) for t in main.gp_taus) == 0.025
    old = DATA / "superseded"
    restricted, low = (
        experiments.load_run(old / f"omniglot-theory-paper-2x8-{n}", "omniglot-theory")
        for n in ("restricted-grid", "low-tau")
    )
    before = ensemble.gp_on_every_temperature(restricted, low)
    assert (before["tau"], before["accuracy"]) == (got["tau"], got["accuracy"])


def test_the_limit_table_fits_80_columns():
    row, *_ = _paper_row()
    lines = ensemble.format_limit([row]).splitlines()
    assert max(len(line) for line in lines) <= 80 and lines[-1].split()[:3] == ["42", row.limit["worst"][0], "0.01"]


def test_the_precision_control_is_committed_whole_and_is_not_a_member():
    """data/omniglot-paper-bf16: seed 42's recipe in bfloat16, with its theory and pruning runs computed on it."""
    from attention_paths.runs import committed_ensemble as ensemble_runs

    name, seed = ensemble_runs.BF16_CONTROL
    records = ensemble_runs.load_records_of(name)  # one name as a string: that network
    assert list(records) == [name] and records[name]["precision"] == "bfloat16"
    assert records[name]["config"]["seed"] == seed and records[name]["accuracies"]["test"]["episodes"] >= 20_000
    row = ensemble_runs.load_member(name, seed)
    assert row.name == name and row.precision == "bfloat16"
    assert name not in [r.name for r in ensemble_runs.load_members()]


def _copy_member(name: str, data: Path, as_name: str | None = None) -> None:
    """Copy a committed member's three folders (network, theory, pruning) under ``data``, optionally filed as
    ``as_name``."""
    src, dst = ensemble_runs.member_folders(name), ensemble_runs.member_folders(as_name or name, data)
    for k in src:
        shutil.copytree(src[k], dst[k])


def test_the_ensemble_readers_refuse_what_they_were_not_asked(tmp_path):
    """Issue 37 §4: a name and a seed that disagree, a duplicate seed or name, an unknown name and a registered
    but uncommitted one are errors naming them."""
    with pytest.raises(ValueError, match="network 'paper-seed1' was trained with seed 1, not 42"):
        ensemble_runs.load_member("paper-seed1", 42)
    with pytest.raises(ValueError, match=r"seeds \(42, 42\) name a network more than once \(seed 42\)"):
        ensemble_runs.load_members(seeds=(42, 42))
    with pytest.raises(ValueError, match=r"name a network more than once \(seed 1\)"):
        ensemble_runs.load_records(seeds=(1, 2, 1))
    with pytest.raises(ValueError, match="unknown network 'paper-bf61'"):
        ensemble_runs.load_records_of(["paper-bf61"])
    with pytest.raises(ValueError, match="'paper-bf16' is asked for more than once"):
        ensemble_runs.load_records_of(["paper-bf16", "paper-bf16"])
    with pytest.raises(FileNotFoundError, match=r"network 'paper-2x8' is not committed: .*omniglot-paper-2x8 holds no"):
        ensemble_runs.load_records_of(["paper-2x8"], data_dir=tmp_path)
    assert ensemble_runs.load_member("paper-seed1", 1).seed == 1


def test_a_member_relabelled_as_another_seed_is_refused(tmp_path):
    """Seed 3's network and runs filed as seed 2, its record's seed edited and every seal rewritten to match:
    the weights' own configuration says seed 3; with the record honest, the registry's seed does."""
    from attention_paths.tasks.omniglot import checkpoints

    _copy_member("paper-seed3", tmp_path, "paper-seed2")
    folder = ensemble_runs.member_folders("paper-seed2", tmp_path)["network"]
    with pytest.raises(ValueError, match="named network 'paper-seed2'.*another configuration"):
        ensemble_runs.load_member("paper-seed2", 2, tmp_path)
    rec = json.loads((folder / "record.json").read_text())
    rec["config"]["seed"] = 2
    (folder / "record.json").write_text(json.dumps(rec))
    checkpoints.seal_network_folder(folder)
    with pytest.raises(ValueError, match=r"model.pt was trained with other settings \(seed 3\) than its record"):
        ensemble_runs.load_member("paper-seed2", 2, tmp_path)


def test_a_row_is_a_typed_record_with_its_temperatures():
    """Issue 35 §5: the row is a frozen dataclass with attribute access; the validation-selected temperatures
    are fields, equal to the ones the I2 claims' details print; as_dict is what the ensemble summary stores."""
    row, _, theory, _ = _paper_row()
    assert isinstance(row, ensemble.NetworkRow) and dataclasses.is_dataclass(row)
    with pytest.raises(dataclasses.FrozenInstanceError):
        row.seed = 1
    detail = row.claim_details["I2-ID"]  # "theory ...% at N=... (tau T) vs GP ...% (tau G): ..."
    assert f"(tau {row.theory_tau:g}) vs GP" in detail and f"(tau {row.gp_tau:g}):" in detail
    assert (row.theory_tau, row.gp_tau) == (0.5, 0.05)
    d = row.as_dict()
    assert list(d) == [f.name for f in dataclasses.fields(ensemble.NetworkRow)] and d["seed"] == 42
    assert json.loads(json.dumps(d))["lowest"]["head"] == row.lowest["head"]


def test_load_run_of_a_required_run_names_the_missing_folder(tmp_path):
    """Issue 37 §4: a misspelt folder asked for by name is an error naming it (with the near names beside it);
    without ``required`` a run not computed is still ``None``."""
    shutil.copytree(DATA / "pruning" / "paper-network", tmp_path / "paper-network")
    with pytest.raises(FileNotFoundError, match=r"paper-netwrok does not exist; did you mean paper-network\?"):
        experiments.load_run(tmp_path / "paper-netwrok", "pruning", required=True)
    assert experiments.load_run(tmp_path / "paper-netwrok", "pruning") is None
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match=r"empty holds no pruning run \(no summary.json\)"):
        experiments.load_run(tmp_path / "empty", "pruning", required=True)
    copy = experiments.load_run(tmp_path / "paper-network", "pruning", required=True)
    assert copy.order == experiments.load_run(DATA / "pruning" / "paper-network", "pruning").order


def test_a_committed_member_is_sealed_and_reads_back(tmp_path):
    """commit_member copies a finished member into data/, spends its resumable state and seals the network
    folder again: the readers accept it, and its record is covered."""
    from attention_paths.base.provenance import DirtyTreeError
    from attention_paths.runs.stages import commit_member
    from attention_paths.tasks.omniglot import checkpoints

    name, out, data = "paper-seed1", tmp_path / "out", tmp_path / "data"
    src = ensemble_runs.member_folders(name)
    for part, folder, files in (
        ("train", src["network"], ("model.pt", "record.json")),
        ("omniglot-theory", src["theory"], (results.SUMMARY, results.ARRAYS)),
        ("pruning", src["pruning"], (results.SUMMARY, results.ARRAYS)),
    ):
        stage = out / f"{name}.{part}"
        stage.mkdir(parents=True)
        for f in files:
            shutil.copyfile(folder / f, stage / f)
        record = {"stage": f"{name}.{part}", "key": "k", "provenance": {}, "wall_seconds": 1.0}
        results.write_record(stage, record | {"files": results.file_hashes(stage)})
    net = ensemble_runs.member_folders(name, data)["network"]
    net.mkdir(parents=True)
    (net / "resume.pt").write_bytes(b"an interrupted training's state")
    (net / "resume.json").write_text(json.dumps({"steps_done": 20000, "note": "paused once"}))
    checkpoints.seal_network_folder(net)
    # a network evaluated from uncommitted code is refused by name (issue 36 §4); its own record is clean
    dirty = tmp_path / "dirty"
    shutil.copytree(out, dirty / "out")
    train = dirty / "out" / f"{name}.train"
    rec = json.loads((train / "record.json").read_text())
    rec["evaluation"]["provenance"] |= {"git_dirty": True, "git_changes": ["lib/attention_paths/x.py"]}
    (train / "record.json").write_text(json.dumps(rec))
    results.write_record(train, results.read_record(train) | {"files": results.file_hashes(train)})
    with pytest.raises(
        DirtyTreeError, match=r"record.json into data/: .*uncommitted changes \(lib/attention_paths/x.py"
    ):
        commit_member(dirty / "out", name, data_dir=dirty / "data")
    assert not (dirty / "data").exists()
    commit_member(dirty / "out", name, data_dir=dirty / "data", allow_dirty=True)
    assert (
        json.loads((ensemble_runs.member_folders(name, dirty / "data")["network"] / "record.json").read_text()) == rec
    )
    commit_member(out, name, data_dir=data)
    assert sorted(p.name for p in net.iterdir()) == ["files.json", "model.pt", "record.json"]
    assert sorted(checkpoints.verify_network_folder(net)["files_sha256"]) == ["model.pt", "record.json"]
    record = ensemble_runs.load_records_of(name, data)[name]
    # the member's record already had its training note: kept, so the committed record is the same
    assert record == json.loads((src["network"] / "record.json").read_text())
    assert record["training_note"] != "paused once"
    row = ensemble_runs.load_member(name, 1, data)
    assert (row.seed, row.name, row.spearman) == (1, name, ensemble_runs.load_member(name, 1).spearman)


def test_the_old_ensemble_module_names_are_deprecated_aliases():
    """Issue 35 §5: the three modules named ensemble.py have distinct names; the two renamed ones answer to
    their old names for one release, with a DeprecationWarning naming the new one."""
    from attention_paths import runs
    from attention_paths.runs import committed_ensemble
    from attention_paths.tasks import omniglot
    from attention_paths.tasks.omniglot import members

    with pytest.warns(DeprecationWarning, match="runs.ensemble is now attention_paths.runs.committed_ensemble"):
        assert runs.ensemble is committed_ensemble
    with pytest.warns(DeprecationWarning, match="omniglot.ensemble is now attention_paths.tasks.omniglot.members"):
        assert omniglot.ensemble is members
    with pytest.raises(AttributeError, match="has no attribute 'ensembel'"):
        runs.ensembel
