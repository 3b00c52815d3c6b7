"""Re-deriving a committed run's derived numbers (runs.rederive, issue 49 §3): only derived fields change, the
record keeps its entries and names the re-derivation, and a committed run re-derived again is unchanged."""

import json
import shutil
from pathlib import Path

import pytest

from attention_paths.runs import rederive as rd
from attention_paths.runs import results

DATA = Path(__file__).resolve().parents[2] / "data"


def test_a_committed_run_rederived_again_is_unchanged(tmp_path):
    folder = tmp_path / "run"
    shutil.copytree(DATA / "pruning" / "paper-network", folder)
    before = {n: (folder / n).read_bytes() for n in (results.SUMMARY, results.ARRAYS)}
    record = json.loads((folder / results.FILES).read_text())
    assert record["rederived"] and record["rederived"][-1]["git_dirty"] is False  # committed re-derived, clean
    out = rd.rederive(folder, "pruning", "again", allow_dirty=True)
    assert out == {"changed": [], "added_arrays": []}
    assert {n: (folder / n).read_bytes() for n in before} == before
    again = json.loads((folder / results.FILES).read_text())
    assert again["rederived"][:-1] == record["rederived"] and again["rederived"][-1]["what"] == "again"
    assert {k: v for k, v in again.items() if k not in ("rederived",)} == {
        k: v for k, v in record.items() if k not in ("rederived",)
    }


def test_a_change_outside_the_derived_fields_is_refused(tmp_path, monkeypatch):
    folder = tmp_path / "run"
    shutil.copytree(DATA / "omniglot-theory" / "paper-sizes-paper-2x8-network", folder)
    summary = json.loads((folder / results.SUMMARY).read_text())
    summary["claims"][0]["passed"] = not summary["claims"][0]["passed"]  # a stored verdict flipped, resealed
    (folder / results.SUMMARY).write_text(json.dumps(summary, indent=2))
    results.write_files_record(folder, {k: v for k, v in json.loads((folder / results.FILES).read_text()).items()})
    monkeypatch.setitem(rd.DERIVED, "omniglot-theory", ())
    with pytest.raises(ValueError, match=r"would change \['claims'\]"):
        rd.rederive(folder, "omniglot-theory", "x", allow_dirty=True)
    monkeypatch.undo()
    assert rd.rederive(folder, "omniglot-theory", "x", allow_dirty=True)["changed"] == ["claims"]  # recomputed
    with pytest.raises(ValueError, match="cannot re-derive 'hmc'"):
        rd.rederive(folder, "hmc", "x")


@pytest.mark.parametrize(
    "sub, experiment, index",
    [("omniglot-theory/paper-sizes-paper-network", "omniglot-theory", 1), ("pruning/paper-network", "pruning", 2)],
)
def test_a_resealed_flipped_verdict_is_refused(tmp_path, sub, experiment, index):
    """A stored claim whose verdict no longer follows from the run's numbers (flipped, then the digests rewritten)
    is refused on reading, naming the claim (issue 52's first case, on the experiments whose claims are
    recomputable from what they store)."""
    from attention_paths.runs import experiments

    folder = tmp_path / "run"
    shutil.copytree(DATA / sub, folder)
    summary = json.loads((folder / results.SUMMARY).read_text())
    cid = summary["claims"][index]["id"]
    summary["claims"][index]["passed"] = not summary["claims"][index]["passed"]
    (folder / results.SUMMARY).write_text(json.dumps(summary, indent=2))
    record = json.loads((folder / results.FILES).read_text())
    results.write_files_record(folder, {k: v for k, v in record.items() if k not in ("format", "files_sha256")})
    with pytest.raises(ValueError, match=rf"claims\[{cid}\]\.passed"):
        experiments.load_run(folder, experiment)
