"""Issue 36 §4: a network committed under data/ names a commit that reproduces it.  The export refuses code
with uncommitted changes, naming the files, unless told to record the full git diff; a clean checkout
records its commit and ``git_dirty`` false; a committed record is re-recorded only when its numbers are
reproduced exactly."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from attention_paths.base import provenance
from attention_paths.base.provenance import DirtyTreeError, code_changes, committed_code_provenance
from attention_paths.tasks.omniglot import checkpoints
from attention_paths.tasks.omniglot import members as en

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "data"


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path):
    """A git checkout with a package file under lib/, a pyproject.toml and a book page, all committed."""
    repo = tmp_path / "repo"
    (repo / "lib" / "pkg").mkdir(parents=True)
    (repo / "book").mkdir()
    (repo / "lib" / "pkg" / "model.py").write_text("WIDTH = 64\n")
    (repo / "pyproject.toml").write_text("[project]\nname = 'pkg'\n")
    (repo / "book" / "page.md").write_text("# a page\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "first")
    return repo


def test_a_clean_checkout_records_its_commit_and_git_dirty_false(repo):
    (repo / "book" / "page.md").write_text("# a page, being written\n")  # not the code: not checked
    assert code_changes(checkout=repo) == []
    prov = committed_code_provenance("an export", checkout=repo)
    assert prov["git_commit"] == _git(repo, "rev-parse", "HEAD").strip()
    assert prov["git_dirty"] is False and prov["code_paths"] == ["lib", "pyproject.toml"]
    assert "git_diff" not in prov and "git_changes" not in prov


def test_a_dirty_checkout_is_refused_by_name_and_the_override_records_the_diff(repo):
    (repo / "lib" / "pkg" / "model.py").write_text("WIDTH = 128\n")
    (repo / "lib" / "pkg" / "extra.py").write_text("NEW = 1\n")  # untracked: runs all the same
    (repo / "book" / "page.md").write_text("# a page, being written\n")
    assert code_changes(checkout=repo) == ["lib/pkg/extra.py", "lib/pkg/model.py"]
    with pytest.raises(DirtyTreeError) as err:
        committed_code_provenance("to commit network data/omniglot-x", checkout=repo)
    msg = str(err.value)
    assert "\n" not in msg and "book/page.md" not in msg
    assert msg.startswith("refusing to commit network data/omniglot-x: the code has uncommitted changes in ")
    assert "lib/pkg/extra.py, lib/pkg/model.py; commit them first, or pass allow_dirty=True" in msg
    prov = committed_code_provenance("an export", checkout=repo, allow_dirty=True)
    assert prov["git_dirty"] is True and prov["git_changes"] == ["lib/pkg/extra.py", "lib/pkg/model.py"]
    assert "-WIDTH = 64\n+WIDTH = 128" in prov["git_diff"] and "+NEW = 1" in prov["git_diff"]
    assert "page.md" not in prov["git_diff"]
    # the diff applied to the commit it names gives the same code again
    clone = repo.parent / "clone"
    _git(repo.parent, "clone", "-q", str(repo), str(clone))
    (clone / "d.patch").write_text(prov["git_diff"])
    _git(clone, "apply", "d.patch")
    assert (clone / "lib" / "pkg" / "model.py").read_text() == "WIDTH = 128\n"
    assert (clone / "lib" / "pkg" / "extra.py").read_text() == "NEW = 1\n"


def test_a_package_outside_git_is_refused(tmp_path):
    assert code_changes(checkout=tmp_path) is None
    with pytest.raises(DirtyTreeError, match="not a git checkout, so no commit names it"):
        committed_code_provenance("an export", checkout=tmp_path)
    assert committed_code_provenance("an export", checkout=tmp_path, allow_dirty=True)["git_dirty"] is None


def test_commit_network_refuses_a_dirty_tree_before_evaluating(tmp_path, monkeypatch):
    """The refusal comes before the long evaluation, and nothing is written."""
    monkeypatch.setattr(provenance, "code_changes", lambda paths, checkout=None: ["lib/attention_paths/x.py"])
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "summary.json").write_text(json.dumps({"finished": True, "config": {"steps": 1}}))
    dest = tmp_path / "data" / "omniglot-x"
    with pytest.raises(DirtyTreeError, match=r"omniglot-x: the code has uncommitted changes in lib/attention_paths/x"):
        en.commit_network(tmp_path / "run", dest)
    with pytest.raises(DirtyTreeError, match="uncommitted changes in lib/attention_paths/x.py"):
        en.record_precise_accuracies("paper-seed4", data_dir=tmp_path)
    assert not dest.exists()


def _committed(name: str, data: Path) -> Path:
    folder = data / f"omniglot-{name}"
    shutil.copytree(DATA / f"omniglot-{name}", folder)
    return folder


def _as_recorded(name: str):
    """precise_accuracies answering the committed record's numbers (the real evaluation takes minutes)."""
    rec = json.loads((DATA / f"omniglot-{name}" / "record.json").read_text())
    return {s: dict(rec["accuracies"][s]) for s in en.PRECISE_SETS}


def test_a_rerecord_must_reproduce_every_number(tmp_path, monkeypatch):
    """A re-recorded evaluation is written only when it equals the recorded one number for number; then the
    record names the clean commit and the previous provenance, and the folder is sealed with the reason."""
    name = "paper-seed4"
    folder = _committed(name, tmp_path)
    before = {f: checkpoints.checkpoint_sha256(folder / f) for f in ("model.pt", "record.json")}
    monkeypatch.setattr(en, "precise_sets", lambda root=None, test_episodes=0: None)
    changed = _as_recorded(name)
    changed["MNIST"]["mse"] += 1e-9
    monkeypatch.setattr(en, "precise_accuracies", lambda net, sets: changed)
    monkeypatch.setattr(provenance, "code_changes", lambda paths, checkout=None: [])
    with pytest.raises(ValueError, match=r"does not reproduce its record: MNIST.mse: recorded 0.41722"):
        en.rerecord_precise_accuracies(name, "recommitted", data_dir=tmp_path)
    assert {f: checkpoints.checkpoint_sha256(folder / f) for f in before} == before
    monkeypatch.setattr(en, "precise_accuracies", lambda net, sets: _as_recorded(name))
    rec = en.rerecord_precise_accuracies(name, "recommitted from a clean tree", data_dir=tmp_path)
    assert checkpoints.checkpoint_sha256(folder / "model.pt") == before["model.pt"]
    assert rec["evaluation"]["provenance"]["git_dirty"] is False
    committed = json.loads((DATA / f"omniglot-{name}" / "record.json").read_text())
    assert rec["evaluation"]["rerecorded"]["previous_provenance"] == committed["evaluation"]["provenance"]
    assert rec["accuracies"] == committed["accuracies"]
    assert checkpoints.verify_network_folder(folder)["reason"] == "recommitted from a clean tree"
    assert checkpoints.committed_checkpoint(name, tmp_path)[1] == rec
