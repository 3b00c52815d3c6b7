"""The command line validates its arguments before computing (issue 18, group 3)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from attention_paths.__main__ import main

ROOT = Path(__file__).resolve().parents[1]


def _error(capsys, argv) -> str:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    return capsys.readouterr().err


def test_out_that_is_a_file_or_unwritable_fails_first(tmp_path, capsys):
    f = tmp_path / "file"
    f.write_text("x")
    assert "is a file" in _error(capsys, ["theory", "--out", str(f)])
    assert "is a file" in _error(capsys, ["reproduce", "--status", "--out", str(f)])
    if os.geteuid() != 0:  # root can write anywhere
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
        assert "cannot be written" in _error(capsys, ["theory", "--out", str(ro)])


@pytest.mark.parametrize("value", ["", ",", " , "])
def test_an_empty_stage_list_is_an_error(tmp_path, capsys, value):
    assert "names no stage" in _error(capsys, ["reproduce", "--only", value, "--out", str(tmp_path / "r")])
    assert not (tmp_path / "r").exists() or not any((tmp_path / "r").iterdir())


@pytest.mark.parametrize("steps", ["0", "-3"])
def test_max_steps_must_be_positive(tmp_path, capsys, steps):
    err = _error(capsys, ["omniglot-train", "--max-steps", steps, "--out", str(tmp_path / "t")])
    assert "--max-steps must be a positive" in err
    assert not (tmp_path / "t" / "last.pt").exists()
    from attention_paths.tasks.omniglot import training as tr

    with pytest.raises(ValueError, match="max_steps"):
        tr.train(tr.TrainConfig(steps=1), tmp_path / "t2", max_steps=0)


def test_cli_runs_as_a_module_and_reports_usage_errors(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "attention_paths", "reproduce", "--only", ",", "--out", str(tmp_path / "x")],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert out.returncode == 2 and "names no stage" in out.stderr
