"""Issue 37 §1 and §5: every file of a committed network folder covered by a digest its readers check, the
resume state as one unit with its precision, a full disk reported as such, and dataset errors that say what
went wrong."""

import errno
import json
import os
import shutil
from pathlib import Path

import pytest
import torch
from helpers import interrupted_last_pt

from attention_paths.runs import committed_ensemble as ensemble_runs
from attention_paths.tasks.omniglot import checkpoints, recipe
from attention_paths.tasks.omniglot import data as om
from attention_paths.tasks.omniglot import training as tr

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "data"


def _copy(src: str, data: Path, dst: str | None = None) -> Path:
    folder = data / f"omniglot-{dst or src}"
    shutil.copytree(DATA / f"omniglot-{src}", folder)
    return folder


def _same_size_edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert len(old) == len(new) and text.count(old) >= 1
    path.write_text(text.replace(old, new))


def _legacy_last_pt(run: Path) -> Path:
    """A ``last.pt`` of paper-2x8 at step 4,000 in the format the trainings of before issue 37 wrote (no
    precision), as the committed resume states of paper-2x8 and paper-3x3 were until they were committed whole."""
    history = [{"step": 4000, "train_loss": 0.5, "seconds": 60.0, "val": {"accuracy": 79.0, "n": 12800}}]
    return interrupted_last_pt(run, "paper-2x8", history)


@pytest.fixture
def legacy_pair(tmp_path) -> Path:
    """A data folder holding a resume pair of paper-2x8 at step 4,000, committed from a legacy last.pt."""
    data = tmp_path / "legacy"
    ensemble_runs.save_resume_state(_legacy_last_pt(tmp_path / "legacy-run").parent, "paper-2x8", data_dir=data)
    return data


def test_the_committed_network_folders_are_sealed_and_read_back():
    """Every committed network folder has a seal whose digests match its files, recorded with its reason."""
    folders = sorted(p for p in DATA.glob("omniglot-*") if p.name not in ("omniglot-theory", "omniglot-sampling"))
    assert len(folders) == 9 and all(p.name.removeprefix("omniglot-") in recipe.NETWORKS for p in folders)
    for folder in folders:
        seal = checkpoints.verify_network_folder(folder)
        sealed = sorted(seal["files_sha256"])
        assert sealed in (["model.pt", "record.json"], ["resume.json", "resume.pt"]), folder
        assert ("migration" in seal["reason"] or "committed" in seal["reason"]) and seal["format"] == 1
        for f, sha in seal["files_sha256"].items():
            assert checkpoints.checkpoint_sha256(folder / f) == sha


def test_a_same_size_edit_of_an_accuracy_is_refused_by_every_reader(tmp_path):
    """Seed 4's meta-test accuracy 80.93 -> 90.93 in record.json: refused by load_records_of, load_network,
    committed_checkpoint and the ensemble status, each naming the file."""
    folder = _copy("paper-seed4", tmp_path)
    assert ensemble_runs.load_records_of(["paper-seed4"], tmp_path)["paper-seed4"]["accuracies"]["test"][
        "accuracy"
    ] == pytest.approx(80.9326171875)
    _same_size_edit(folder / "record.json", '"accuracy": 80.9326171875', '"accuracy": 90.9326171875')
    match = r"omniglot-paper-seed4/record.json is damaged or was edited: its SHA-256 differs from the one in"
    with pytest.raises(ValueError, match=match):
        ensemble_runs.load_records_of(["paper-seed4"], tmp_path)
    with pytest.raises(ValueError, match=match):
        tr.load_network("paper-seed4", train_if_missing=False, data_dir=tmp_path)
    with pytest.raises(ValueError, match=match):
        ensemble_runs.load_records(seeds=(4,), data_dir=tmp_path)
    with pytest.raises(ValueError, match=match):
        ensemble_runs.training_status(seeds=(4,), data_dir=tmp_path)


def test_an_edited_seed_is_refused_with_or_without_its_seal(tmp_path):
    """A record whose seed was edited 1 -> 2: the seal refuses it; rewritten with its seal, the record's
    configuration is not the registry's; the same files filed as seed 2 are refused by the weights' own
    configuration."""
    folder = _copy("paper-seed1", tmp_path)
    _same_size_edit(folder / "record.json", '"seed": 1,', '"seed": 2,')
    with pytest.raises(ValueError, match="record.json is damaged or was edited"):
        checkpoints.committed_checkpoint("paper-seed1", tmp_path)
    checkpoints.seal_network_folder(folder)
    with pytest.raises(ValueError, match="named network 'paper-seed1'.*another configuration"):
        checkpoints.committed_checkpoint("paper-seed1", tmp_path)
    folder.rename(tmp_path / "omniglot-paper-seed2")  # now filed as seed 2, record and seal agreeing
    assert checkpoints.committed_checkpoint("paper-seed2", tmp_path)[1]["config"]["seed"] == 2
    with pytest.raises(ValueError, match="other settings than its record.json"):
        tr.load_network("paper-seed2", train_if_missing=False, data_dir=tmp_path)


def test_a_folder_without_its_seal_or_with_an_unsealed_file_is_refused(tmp_path):
    folder = _copy("quick", tmp_path)
    (folder / "resume.json").write_text("{}")
    with pytest.raises(ValueError, match=r"omniglot-quick/resume.json is not covered by .*files.json"):
        checkpoints.committed_checkpoint("quick", tmp_path)
    (folder / "resume.json").unlink()
    (folder / "files.json").write_text('{"format": 1, "files_sha256": {"model.pt": ')
    with pytest.raises(ValueError, match=r"network seal .*files.json is damaged \(not valid JSON"):
        checkpoints.committed_checkpoint("quick", tmp_path)
    (folder / "files.json").unlink()
    with pytest.raises(ValueError, match=r"omniglot-quick has no files.json"):
        checkpoints.committed_checkpoint("quick", tmp_path)
    (folder / "model.pt").unlink()
    with pytest.raises(ValueError, match=r"holds network 'quick' only in part: model.pt missing"):
        checkpoints.committed_checkpoint("quick", tmp_path)
    assert checkpoints.committed_checkpoint("paper", tmp_path) is None  # nothing committed: None


def test_a_damaged_record_names_the_file_even_when_resealed(tmp_path):
    """Invalid JSON and a record without its exported digest, each sealed as if good: ValueError naming the
    file, not a bare JSONDecodeError or KeyError; the ensemble status says the same."""
    folder = _copy("paper-seed2", tmp_path)
    (folder / "record.json").write_text('{"config": {"seed": 2')
    damaged = r"network record .*omniglot-paper-seed2/record.json is damaged \(not valid"
    with pytest.raises(ValueError, match=damaged):  # the sealer refuses to bless it
        checkpoints.seal_network_folder(folder)
    seal = json.loads((folder / "files.json").read_text())  # a forged seal instead
    seal["files_sha256"]["record.json"] = checkpoints.checkpoint_sha256(folder / "record.json")
    (folder / "files.json").write_text(json.dumps(seal))
    with pytest.raises(ValueError, match=damaged):
        ensemble_runs.training_status(seeds=(2,), data_dir=tmp_path)
    rec = json.loads((DATA / "omniglot-paper-seed2" / "record.json").read_text())
    rec.pop("exported")
    (folder / "record.json").write_text(json.dumps(rec))
    checkpoints.seal_network_folder(folder)
    with pytest.raises(ValueError, match=r"record.json is damaged or incomplete: it has no field exported.sha256"):
        checkpoints.committed_checkpoint("paper-seed2", tmp_path)


def test_a_legacy_resume_pair_reads_the_checkpoints_own_step(legacy_pair):
    """A resume pair committed from a last.pt of the format of before issue 37 (as paper-2x8's and paper-3x3's
    were while they trained): sealed, the step from resume.pt, the precision the legacy float32; a committed
    network has none."""
    state = checkpoints.read_resume_state("paper-2x8", legacy_pair)
    assert (state["steps_done"], state["steps"], state["precision"]) == (4000, 41_240, "float32")
    assert state["progress"]["steps_done"] == 4000 and state["path"] == legacy_pair / "omniglot-paper-2x8" / "resume.pt"
    assert checkpoints.resume_state("paper-2x8", legacy_pair) == state["path"]
    for name in ("paper", "paper-2x8"):  # committed whole: no resumable state left
        assert checkpoints.read_resume_state(name) is None


def test_a_half_or_disagreeing_resume_pair_is_refused_by_name(tmp_path, legacy_pair):
    """resume.json without resume.pt (or the other way round) is refused, not read as 'training' or 'not
    started'; a resume.json whose steps disagree with resume.pt, rewritten with its seal, is refused too."""
    folder = tmp_path / "omniglot-paper-2x8"
    shutil.copytree(legacy_pair / "omniglot-paper-2x8", folder)
    pt = (folder / "resume.pt").read_bytes()
    (folder / "resume.pt").unlink()
    with pytest.raises(ValueError, match=r"resume.json has no resume.pt beside it"):
        checkpoints.read_resume_state("paper-2x8", tmp_path)
    (folder / "resume.pt").write_bytes(pt)
    (folder / "resume.json").unlink()
    with pytest.raises(ValueError, match=r"resume.pt has no resume.json beside it"):
        checkpoints.resume_state("paper-2x8", tmp_path)
    shutil.copyfile(legacy_pair / "omniglot-paper-2x8" / "resume.json", folder / "resume.json")
    step = checkpoints.read_resume_state("paper-2x8", tmp_path)["steps_done"]  # 4,000
    other = 9000 if step != 9000 else 8000  # a same-size edit while the step has four digits
    _same_size_edit(folder / "resume.json", f'"steps_done": {step},', f'"steps_done": {other},')
    with pytest.raises(ValueError, match=r"resume.json is damaged or was edited"):
        checkpoints.read_resume_state("paper-2x8", tmp_path)
    checkpoints.seal_network_folder(folder)
    with pytest.raises(ValueError, match=rf"resume.json says steps_done = {other}, but .*resume.pt has {step}"):
        checkpoints.read_resume_state("paper-2x8", tmp_path)
    (folder / "resume.json").write_text("{not json")
    checkpoints.seal_network_folder(folder)
    with pytest.raises(ValueError, match=r"resume record .*resume.json is damaged \(not valid JSON"):
        checkpoints.read_resume_state("paper-2x8", tmp_path)


def test_a_last_pt_of_the_running_trainings_format_is_committable(tmp_path):
    """The running trainings write last.pt in the format of before this issue (no precision): save_resume_state
    commits one byte for byte, sealed, with its precision recorded, and reads back at its own step."""
    run = _legacy_last_pt(tmp_path / "run").parent
    ck = torch.load(run / "last.pt", weights_only=False)
    assert "precision" not in ck
    with pytest.raises(ValueError, match="records precision float32, not bfloat16"):
        ensemble_runs.save_resume_state(run, "paper-2x8", data_dir=tmp_path, precision="bfloat16")
    path = ensemble_runs.save_resume_state(run, "paper-2x8", data_dir=tmp_path)
    assert path.read_bytes() == (run / "last.pt").read_bytes()
    progress = json.loads((path.parent / "resume.json").read_text())
    assert (progress["steps_done"], progress["precision"], progress["network"]) == (ck["step"], "float32", "paper-2x8")
    assert sorted(checkpoints.verify_network_folder(path.parent)["files_sha256"]) == ["resume.json", "resume.pt"]
    assert checkpoints.read_resume_state("paper-2x8", tmp_path)["steps_done"] == ck["step"]
    with pytest.raises(ValueError, match="not a run of network paper-3x3"):
        ensemble_runs.save_resume_state(run, "paper-3x3", data_dir=tmp_path)


TINY = dict(d_model=32, d_qk=8, steps=40, eval_every=20, val_episodes=64, test_episodes=64, ood_episodes=20)


def _omniglot_or_skip():
    if not (Path(tr.config.data_root()) / "omniglot-py").exists():
        pytest.skip("Omniglot not available offline")


def test_precision_is_part_of_the_resumable_state_and_a_full_disk_is_named(tmp_path, monkeypatch):
    """A float32 run resumed in bfloat16 is refused (and its files left as they were); a full disk while
    writing a checkpoint is a DiskFullError naming the folder, with no partial file left, and the same command
    with space again finishes the run."""
    _omniglot_or_skip()
    cfg = recipe.TrainConfig(**TINY)
    out = tmp_path / "run"
    tr.train(cfg, out, progress=False, max_steps=20, threads=1)
    ck = torch.load(out / "last.pt", weights_only=False)
    assert (ck["precision"], ck["step"]) == ("float32", 20)
    before = {f: (out / f).read_bytes() for f in ("last.pt", "best.pt", "summary.json")}
    with pytest.raises(ValueError, match=r"last.pt was trained in float32 up to step 20; resuming it in bfloat16"):
        tr.train(cfg, out, progress=False, precision="bfloat16", threads=1)
    assert before == {f: (out / f).read_bytes() for f in ("last.pt", "best.pt", "summary.json")}

    real_save = torch.save

    def full_disk(obj, fh):  # a part of the file is written, then the disk is full
        fh.write(b"\0" * 4096)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(checkpoints.torch, "save", full_disk)
    with pytest.raises(checkpoints.DiskFullError, match=rf"no space left on the disk of {out}") as err:
        tr.train(cfg, out, progress=False, threads=1)
    assert err.value.errno == errno.ENOSPC
    assert sorted(p.name for p in out.iterdir()) == ["best.pt", "last.pt", "summary.json"]  # no partial file
    assert before["last.pt"] == (out / "last.pt").read_bytes()
    monkeypatch.setattr(checkpoints.torch, "save", real_save)
    summary = tr.train(cfg, out, progress=False, threads=1)
    assert summary["finished"] and [r["step"] for r in summary["history"]] == [20, 40]
    assert summary["precision"] == "float32"


def test_load_ood_lets_a_real_error_through(monkeypatch):
    """With ATTENTION_PATHS_OFFLINE=maybe the message is about the variable, not 'MNIST was not found'; an
    unexpected error of torchvision's reader is not turned into 'not found' either."""
    raw = Path(om.data_root()) / "MNIST" / "raw"
    if not (raw / "t10k-labels-idx1-ubyte").exists():
        pytest.skip("MNIST not available offline")
    monkeypatch.setenv("ATTENTION_PATHS_OFFLINE", "maybe")
    with pytest.raises(ValueError, match="ATTENTION_PATHS_OFFLINE='maybe' is not a boolean") as err:
        om.load_ood("MNIST")
    assert not isinstance(err.value, om.DatasetMissingError)
    monkeypatch.setenv("ATTENTION_PATHS_OFFLINE", "1")

    class Broken:
        resources = om.torchvision.datasets.MNIST.resources

        def __init__(self, *args, **kwargs):
            raise RuntimeError("invalid magic number 2050 in t10k-labels-idx1-ubyte")

    monkeypatch.setattr(om.torchvision.datasets, "MNIST", Broken)
    with pytest.raises(RuntimeError, match="invalid magic number"):
        om.load_ood("MNIST")

    class Absent(Broken):
        def __init__(self, *args, **kwargs):
            raise RuntimeError("Dataset not found. You can use download=True to download it")

    monkeypatch.setattr(om.torchvision.datasets, "MNIST", Absent)
    with pytest.raises(om.DatasetMissingError, match="MNIST was not found"):
        om.load_ood("MNIST")


def test_an_edited_unpacked_label_file_without_its_gz_is_detected(tmp_path):
    """Issue 37 §1: every MNIST test label set to 1 in the unpacked file, with no .gz beside it (same size, so
    the header check passes): refused by name through the official files' SHA-256; the intact file loads."""
    src = Path(om.data_root()) / "MNIST" / "raw"
    if not (src / "t10k-labels-idx1-ubyte").exists():
        pytest.skip("MNIST not available offline")
    raw = tmp_path / "MNIST" / "raw"
    raw.mkdir(parents=True)
    for f in src.iterdir():
        if not f.name.endswith(".gz"):
            shutil.copyfile(f, raw / f.name)
    assert len(om.load_ood("MNIST", root=tmp_path, download=False)["test"]) == 980 + 1135
    labels = raw / "t10k-labels-idx1-ubyte"
    data = bytearray(labels.read_bytes())
    data[8:] = bytes([1]) * (len(data) - 8)
    labels.write_bytes(bytes(data))
    with pytest.raises(om.DatasetDamagedError, match=r"t10k-labels-idx1-ubyte is damaged: its SHA-256 .* official"):
        om.load_ood("MNIST", root=tmp_path, download=False)


@pytest.mark.parametrize(
    "argv, precision",
    [
        (["--network", "paper-bf16"], "bfloat16"),
        (["--network", "paper-seed1"], "auto"),
        (["--network", "paper-bf16", "--precision", "float32"], "float32"),
    ],
)
def test_omniglot_train_uses_the_registered_precision(tmp_path, monkeypatch, argv, precision):
    """`omniglot-train --network NAME` trains the registry entry: its configuration and its precision, unless
    --precision says otherwise (a resume in another precision is then refused by train itself)."""
    from attention_paths.__main__ import main

    seen = {}

    def fake_train(cfg, out, **kwargs):
        seen.update(cfg=cfg, **kwargs)
        return {"history": []}

    monkeypatch.setattr(tr, "train", fake_train)
    assert main(["omniglot-train", *argv, "--out", str(tmp_path / "t"), "--quiet"]) == 0
    name = argv[1]
    assert seen["precision"] == precision and seen["cfg"] == recipe.network_config(name)


def test_resuming_from_a_damaged_committed_pair_is_refused(tmp_path, legacy_pair):
    """`--resume-from data/omniglot-<name>/resume.pt`: the pair is checked against its seal before resuming."""
    _omniglot_or_skip()
    folder = tmp_path / "omniglot-paper-2x8"
    shutil.copytree(legacy_pair / "omniglot-paper-2x8", folder)
    step = json.loads((folder / "resume.json").read_text())["steps_done"]
    other = 9000 if step != 9000 else 8000
    _same_size_edit(folder / "resume.json", f'"steps_done": {step},', f'"steps_done": {other},')
    with pytest.raises(ValueError, match=r"omniglot-paper-2x8/resume.json is damaged or was edited"):
        tr.train(recipe.network_config("paper-2x8"), tmp_path / "out", progress=False, resume_from=folder / "resume.pt")
    assert not (tmp_path / "out" / "last.pt").exists()


def test_torchs_short_write_error_is_a_full_disk_and_other_errors_pass(tmp_path, monkeypatch):
    """torch reports a full disk as RuntimeError("[enforce fail ...] unexpected pos ..."): a DiskFullError naming
    the folder, with the temporary file removed; an error that is not about space passes unchanged."""

    def short_write(obj, fh):
        fh.write(b"\0" * 100)
        raise RuntimeError("[enforce fail at inline_container.cc:595] . unexpected pos 64 vs 0")

    monkeypatch.setattr(checkpoints.torch, "save", short_write)
    with pytest.raises(checkpoints.DiskFullError, match=rf"no space left on the disk of {tmp_path} .*unexpected pos"):
        checkpoints._atomic_torch_save({"model": {}}, tmp_path / "last.pt")
    assert list(tmp_path.iterdir()) == []

    def other(obj, fh):
        raise RuntimeError("cannot pickle this object")

    monkeypatch.setattr(checkpoints.torch, "save", other)
    with pytest.raises(RuntimeError, match="^cannot pickle this object$"):
        checkpoints._atomic_torch_save({"model": {}}, tmp_path / "last.pt")
    monkeypatch.setattr(checkpoints.torch, "save", lambda obj, fh: (_ for _ in ()).throw(PermissionError(13, "denied")))
    with pytest.raises(PermissionError):
        checkpoints._atomic_torch_save({"model": {}}, tmp_path / "last.pt")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "edit, message",
    [
        (
            lambda r: r["accuracies"]["test"].update(accuracy=180.0),
            r"accuracies.test.accuracy = 180.0 is not an accuracy",
        ),
        (lambda r: r["accuracies"]["MNIST"].update(accuracy=float("nan")), r"accuracies.MNIST.accuracy = nan"),
        (lambda r: r["accuracies"]["test"].update(episodes=5), r"accuracies.test.accuracy = .* is not a whole number"),
        (lambda r: r["accuracies"]["test"].update(se=0.1), r"accuracies.test.se = 0.1 is not the binomial"),
        (lambda r: r["history"][-1]["val"].update(n=0), r"history\[\d+\].val has 0 episodes"),
    ],
)
def test_a_record_whose_accuracies_contradict_themselves_is_neither_sealed_nor_read(tmp_path, edit, message):
    """Issue 52: a meta-test accuracy of 180 %, a NaN MNIST accuracy, 5 episodes with the 20,480-episode standard
    error kept, a wrong standard error, an empty evaluation: the sealer refuses to seal the record, and a forged
    seal does not get it read."""
    folder = _copy("paper-seed3", tmp_path)
    rec = json.loads((folder / "record.json").read_text())
    edit(rec)
    (folder / "record.json").write_text(json.dumps(rec))
    with pytest.raises(ValueError, match=message):
        checkpoints.seal_network_folder(folder)
    seal = json.loads((folder / "files.json").read_text())
    seal["files_sha256"]["record.json"] = checkpoints.checkpoint_sha256(folder / "record.json")
    (folder / "files.json").write_text(json.dumps(seal))
    with pytest.raises(ValueError, match=message):
        checkpoints.committed_checkpoint("paper-seed3", tmp_path)


def test_a_network_checked_before_a_run_is_hashed_once_within_it(tmp_path, monkeypatch):
    """Issue 50: inside ``verified_once`` (what ``run_experiment`` wraps ``require_network`` and the run in) the
    folder is verified once, then handed over; a file rewritten in between is verified anew (and an edit is
    refused); outside it every read verifies."""
    folder = _copy("quick", tmp_path)
    calls = []
    real = checkpoints.verify_network_folder
    monkeypatch.setattr(checkpoints, "verify_network_folder", lambda f: calls.append(f) or real(f))
    with checkpoints.verified_once():
        path, record = checkpoints.committed_checkpoint("quick", tmp_path)
        net, rec = tr.load_network("quick", train_if_missing=False, data_dir=tmp_path)
        assert len(calls) == 1 and rec["sha256"] == record["exported"]["sha256"]
        record["config"]["steps"] = -1  # the caller's copy: the one handed over later is intact
        assert checkpoints.committed_checkpoint("quick", tmp_path)[1]["config"]["steps"] > 0 and len(calls) == 1
        rec_path = folder / "record.json"
        text = rec_path.read_text()
        i = text.index('"accuracy": ') + len('"accuracy": ')
        rec_path.write_text(text[:i] + ("1" if text[i] != "1" else "2") + text[i + 1 :])  # same size
        st = rec_path.stat()
        os.utime(rec_path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))  # past the clock's resolution
        with pytest.raises(ValueError, match="record.json is damaged or was edited"):
            checkpoints.committed_checkpoint("quick", tmp_path)
        assert len(calls) == 2
    rec_path.write_text(text)
    for _ in range(2):
        checkpoints.committed_checkpoint("quick", tmp_path)
    assert len(calls) == 4 and checkpoints._VERIFIED is None
