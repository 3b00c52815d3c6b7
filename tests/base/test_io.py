"""Atomic result files (base.io): a write that fails leaves the old file and no temporary behind, and damaged
files are refused with their name."""

import json

import numpy as np
import pytest

from attention_paths.base import io


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    path = io.atomic_write_json(tmp_path / "deep" / "r.json", {"a": 1})
    assert json.loads(path.read_text()) == {"a": 1}

    def half(fh):
        fh.write(b'{"a": 2')
        raise KeyboardInterrupt  # interrupted mid-write

    with pytest.raises(KeyboardInterrupt):
        io.atomic_write(path, half)
    assert json.loads(path.read_text()) == {"a": 1}
    assert sorted(p.name for p in path.parent.iterdir()) == ["r.json"]


def test_json_takes_numpy_values_and_round_trips(tmp_path):
    data = {"x": np.float64(0.1), "n": np.int64(3), "v": np.arange(3), 7: (1, 2), "nan": float("nan")}
    back = io.load_json(io.atomic_write_json(tmp_path / "r.json", data))
    assert back["x"] == 0.1 and back["n"] == 3 and back["v"] == [0, 1, 2] and back["7"] == [1, 2]
    assert np.isnan(back["nan"])


def test_arrays_round_trip_bit_for_bit(tmp_path):
    a = np.random.default_rng(0).standard_normal((4, 5))
    back = io.load_npz(io.atomic_savez(tmp_path / "a.npz", a=a, b=np.arange(3)))
    assert back["a"].tobytes() == a.tobytes() and back["b"].tolist() == [0, 1, 2]


def test_damaged_and_missing_files_are_named(tmp_path):
    (tmp_path / "bad.json").write_text('{"a": ')
    (tmp_path / "bad.npz").write_bytes(b"PK\x03\x04 not a zip")
    with pytest.raises(ValueError, match="bad.json is corrupted"):
        io.load_json(tmp_path / "bad.json")
    with pytest.raises(ValueError, match="bad.npz is corrupted"):
        io.load_npz(tmp_path / "bad.npz")
    with pytest.raises(FileNotFoundError, match="missing.npz does not exist"):
        io.load_npz(tmp_path / "missing.npz")
