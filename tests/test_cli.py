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
    from attention_paths.tasks.omniglot import recipe
    from attention_paths.tasks.omniglot import training as tr

    with pytest.raises(ValueError, match="max_steps"):
        tr.train(recipe.TrainConfig(steps=1), tmp_path / "t2", max_steps=0)


def test_cli_runs_as_a_module_and_reports_usage_errors(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "attention_paths", "reproduce", "--only", ",", "--out", str(tmp_path / "x")],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert out.returncode == 2 and "names no stage" in out.stderr


def _run(args, timeout=120, **env):
    return subprocess.run(
        [sys.executable, "-m", "attention_paths", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=timeout,
        env={**os.environ, **env},
    )


@pytest.mark.parametrize("value", ["2,-5,10", "0,10,10", "2,10,1", "2,0,10"])
def test_sampling_budget_is_checked_before_computing(tmp_path, capsys, value):
    err = _error(capsys, ["omniglot-theory", "--sampling", value, "--out", str(tmp_path / "o")])
    assert "need at least 1 chain, 1 warm-up step and 2 draws" in err
    assert not any((tmp_path / "o").glob("*"))


def test_network_and_seed_arguments(tmp_path, capsys):
    assert "seed 42 is the network named 'paper'" in _error(capsys, ["pruning", "--network", "paper-seed42"])
    assert "unknown network" in _error(capsys, ["pruning", "--network", "seed1"])
    assert "--threads must be positive" in _error(capsys, ["omniglot-train", "--threads", "0", "--out", str(tmp_path)])
    assert "distinct non-negative" in _error(capsys, ["ensemble", "--seeds", "1,1", "--out", str(tmp_path)])
    assert "integers separated by commas" in _error(capsys, ["ensemble", "--seeds", "1,x", "--out", str(tmp_path)])


def test_user_errors_are_one_line_without_a_traceback(tmp_path):
    """Issue 24, group 6: a missing dataset, a bad switch or a locked folder is one line and exit status 2;
    --debug shows the traceback."""
    out = _run(
        ["pruning", "--out", str(tmp_path / "p")],
        ATTENTION_PATHS_DATA=str(tmp_path / "none"),
        ATTENTION_PATHS_OFFLINE="1",
    )
    assert out.returncode == 2 and "Traceback" not in out.stderr
    line = out.stderr.strip().splitlines()[-1]
    assert line.startswith("python -m attention_paths: error:") and "ATTENTION_PATHS_DATA" in line
    out = _run(["theory", "--out", str(tmp_path / "t")], ATTENTION_PATHS_QUIET="maybe")
    assert out.returncode == 2 and "Traceback" not in out.stderr and "ATTENTION_PATHS_QUIET='maybe'" in out.stderr
    out = _run(["theory", "--debug", "--out", str(tmp_path / "t")], ATTENTION_PATHS_QUIET="maybe")
    assert out.returncode != 0 and "Traceback" in out.stderr


@pytest.mark.slow
def test_a_scheduler_address_that_is_no_scheduler_fails_within_seconds(tmp_path):
    """Issue 24, group 6: --scheduler at a closed port, or at a server that never completes Dask's handshake,
    fails in about 15 s naming the address."""
    import socket
    import threading
    import time

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    port = srv.getsockname()[1]
    held = []
    stop = threading.Event()

    def accept():  # accept and keep connections open, never answering (like an HTTP server waiting)
        srv.settimeout(0.5)
        while not stop.is_set():
            try:
                held.append(srv.accept()[0])
            except OSError:
                pass

    threading.Thread(target=accept, daemon=True).start()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]  # bound, never listening: connections are refused
        try:
            for p, what in ((port, "never completed Dask's handshake"), (closed, "tcp://127.0.0.1")):
                t0 = time.perf_counter()
                out = _run(
                    ["reproduce", "--scheduler", f"tcp://127.0.0.1:{p}", "--only", "data", "--out", str(tmp_path)]
                )
                assert time.perf_counter() - t0 < 60
                assert out.returncode == 2 and f"tcp://127.0.0.1:{p}" in out.stderr and what in out.stderr
                assert "Traceback" not in out.stderr
        finally:
            stop.set()
            for c in held:
                c.close()
            srv.close()


def test_the_sampler_choices_are_the_samplers_the_package_has():
    """``--sampler`` spells out ``sampling.SAMPLER_KINDS`` (the parser must not import JAX to know them)."""
    from attention_paths import sampling
    from attention_paths.__main__ import _parser, _subparser

    for command in ("omniglot-theory", "reproduce"):
        sub = _subparser(_parser(), command)
        action = next(a for a in sub._actions if "--sampler" in a.option_strings)
        assert tuple(action.choices) == tuple(sampling.SAMPLER_KINDS)


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["--network", "paper-2x8"], dict(n_layers=2, n_heads=8, d_qk=64, seed=42)),
        (["--network", "paper-3x3"], dict(n_layers=3, n_heads=3, d_qk=128, seed=42)),
        (["--network", "paper-seed3"], dict(n_layers=2, n_heads=4, d_qk=128, seed=3)),
        (["--scale", "paper", "--seed", "2"], dict(n_layers=2, n_heads=4, d_qk=128, seed=2)),
    ],
)
def test_omniglot_train_trains_the_named_network(tmp_path, monkeypatch, argv, expected):
    """`omniglot-train --network NAME` trains that network's configuration (the other architectures too)."""
    from attention_paths.tasks.omniglot import training

    seen = {}

    def fake_train(cfg, out, **kwargs):
        seen["cfg"] = cfg
        return {"history": []}

    monkeypatch.setattr(training, "train", fake_train)
    assert main(["omniglot-train", *argv, "--out", str(tmp_path / "t"), "--quiet"]) == 0
    cfg = seen["cfg"]
    assert {k: getattr(cfg, k) for k in expected} == expected and cfg.steps == 41_240
