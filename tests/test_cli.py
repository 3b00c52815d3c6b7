"""The command line validates its arguments before computing (issue 18, group 3)."""

import json
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
    """``--sampler`` offers ``sampling.SAMPLER_NAMES``, the built-in ``SAMPLER_KINDS`` first (read without JAX)."""
    from attention_paths import sampling
    from attention_paths.__main__ import _parser, _subparser

    for command in ("omniglot-theory", "reproduce"):
        sub = _subparser(_parser(), command)
        action = next(a for a in sub._actions if "--sampler" in a.option_strings)
        assert tuple(action.choices) == tuple(sampling.SAMPLER_NAMES)
        assert tuple(action.choices)[:2] == tuple(sampling.SAMPLER_KINDS) == ("rao-blackwell", "full")


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


# ------------------------------------------------------------------------------------------ issue 35 §7, 37 §3, §5
def _help(capsys, command) -> str:
    with pytest.raises(SystemExit) as exc:
        main([command, "--help"])
    assert exc.value.code == 0
    return capsys.readouterr().out


def test_each_subcommand_lists_only_its_own_options(capsys):
    """Issue 35 §7: ``hmc --help`` lists what hmc takes, and not the options of training or reproduce."""
    hmc = _help(capsys, "hmc")
    assert all(f in hmc for f in ("--scale", "--out", "--cpu-devices", "--save-samples", "--device"))
    assert not any(f in hmc for f in ("--seeds", "--retrain", "--network", "--max-steps", "--workers", "--sampling"))
    train = _help(capsys, "omniglot-train")
    assert all(f in train for f in ("--seed ", "--network", "--max-steps", "--resume-from", "--precision"))
    assert not any(f in train for f in ("--seeds", "--sampling", "--no-sample", "--save-samples", "--workers"))
    theory = _help(capsys, "omniglot-theory")
    assert all(f in theory for f in ("--network", "--train-missing", "--no-sample", "--sampling", "--sampler"))
    with pytest.raises(SystemExit):
        main(["--help"])
    listing = capsys.readouterr().out
    from attention_paths.runs.registry import COMMANDS, EXPERIMENTS

    assert all(name in listing and e.help[:30] in " ".join(listing.split()) for name, e in EXPERIMENTS.items())
    assert all(name in listing for name in COMMANDS)


@pytest.mark.parametrize(
    "argv, named",
    [
        (["omniglot-train", "--seeds", "1"], "omniglot-train does not take --seeds (ensemble takes it)"),
        (["hmc", "--retrain"], "hmc does not take --retrain (reproduce takes it)"),
        (["ensemble", "--seed", "1"], "ensemble does not take --seed (omniglot-train takes it)"),
        (
            ["theory", "--network", "paper"],
            "theory does not take --network (omniglot-sampling, omniglot-theory, omniglot-train, pruning, ",
        ),
        (["reproduce", "--net", "paper"], "reproduce does not take --net;"),  # no abbreviation of --network
        (
            ["reproduce", "--widths", "10"],
            "reproduce does not take --widths (analyse, omniglot-sampling, omniglot-theory take it)",
        ),
        (["omniglot-train", "--max", "3"], "omniglot-train does not take --max;"),  # nor of --max-steps
    ],
)
def test_an_option_the_command_does_not_take_is_an_error_naming_it(tmp_path, capsys, monkeypatch, argv, named):
    """Issue 37 §5: ``omniglot-train --seeds 1`` (meant ``--seed``) trained seed 42; now any option the command
    does not take, or an abbreviation, stops before anything runs, naming it and the commands that take it."""
    from attention_paths.tasks.omniglot import training

    monkeypatch.setattr(training, "train", lambda *a, **k: pytest.fail("trained despite a wrong option"))
    err = _error(capsys, [*argv, "--out", str(tmp_path / "o")])
    assert named in err and err.strip().splitlines()[-1].startswith(f"python -m attention_paths {argv[0]}: error:")
    assert not (tmp_path / "o").exists()


def test_options_before_the_command_go_to_it(capsys):
    """As with the one flat parser of before, ``--scale paper hmc`` is ``hmc --scale paper``, and still checked."""
    from attention_paths.__main__ import _parse, _parser

    args = _parse(_parser(), ["--scale", "paper", "--debug", "hmc", "--out", "o"])
    assert (args.experiment, args.scale, args.debug, args.out) == ("hmc", "paper", True, "o")
    err = _error(capsys, ["--seeds", "1", "omniglot-train"])
    assert "omniglot-train does not take --seeds (ensemble takes it)" in err


def test_the_command_line_derives_from_the_experiment_records():
    """Issue 35 §1: every experiment of the registry is a subcommand with exactly its record's options (and the
    common ones); each option's keyword is a parameter of the run function; every function a record names
    exists; ``runs.experiments`` serves the same records."""
    import inspect

    from attention_paths.__main__ import SUBCOMMANDS, _parser, _subparser
    from attention_paths.runs import experiments
    from attention_paths.runs.registry import COMMON_OPTIONS, EXPERIMENTS, resolve

    assert experiments.EXPERIMENTS is EXPERIMENTS and set(EXPERIMENTS) < set(SUBCOMMANDS)
    parser = _parser()
    for name, exp in EXPERIMENTS.items():
        flags = {f for a in _subparser(parser, name)._actions for f in a.option_strings} - {"-h", "--help"}
        assert flags == {o.flag for o in COMMON_OPTIONS + exp.options}, name
        run = exp.resolve("run")
        params = inspect.signature(run).parameters
        assert {"progress"} | {o.keyword for o in exp.options if o.keyword} <= set(params), name
        assert set(exp.resolve("configs")) == {"quick", "paper"}, name
        assert isinstance(exp.resolve("result"), type), name
        for field in ("summary", "reader", "claims", "stored", "samples"):
            assert getattr(exp, field) is None or callable(exp.resolve(field)), (name, field)
        assert all(callable(resolve(t)) for t in exp.tables), name
        assert exp.headline and "wall_seconds" in exp.headline, name
    with pytest.raises(ValueError, match="unknown experiment 'omniglot-train'"):
        experiments.run_experiment("omniglot-train")


def test_the_printed_headline_is_the_summary_without_its_bulk(tmp_path, monkeypatch, capsys):
    """The command line runs the record's run and summary functions, writes the whole summary and prints the
    record's headline keys of it, in the summary's order."""
    import json

    import numpy as np

    from attention_paths.runs import results
    from attention_paths.tasks import toy

    summary = {"experiment": "theory", "scale": "quick", "config": {"P": 1}, "per_width": [{"N": 10.0}]}
    summary |= {"gp_accuracy_percent": 81.5, "gp_generalization_error": 0.25, "solve_seconds": 1.5}
    monkeypatch.setattr(toy, "theory_demo", lambda scale, progress: ("result of", scale, progress))
    monkeypatch.setattr(toy, "theory_summary", lambda res: (dict(summary, seen=list(res)), {"x": np.arange(3.0)}))
    assert main(["theory", "--scale", "paper", "--out", str(tmp_path), "--quiet"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert list(printed) == ["experiment", "scale", "gp_accuracy_percent", "gp_generalization_error", "solve_seconds",
                             "wall_seconds"]  # fmt: skip
    assert printed["gp_accuracy_percent"] == 81.5 and printed["scale"] == "quick"  # the summary's own values
    stored, arrays = results.read(tmp_path)
    assert stored["seen"] == ["result of", "paper", False] and stored["per_width"] == [{"N": 10.0}]
    assert "provenance" in stored and stored["wall_seconds"] == printed["wall_seconds"]
    np.testing.assert_array_equal(arrays["x"], [0.0, 1.0, 2.0])


@pytest.mark.parametrize("command", ["theory", "posterior", "hmc", "omniglot-theory", "pruning", "omniglot-train"])
def test_every_command_that_writes_a_folder_takes_its_lock(tmp_path, capsys, monkeypatch, command):
    """Issue 37 §3: a second run on a folder another run holds stops at once, naming the holder (pid and
    command), before anything is computed."""
    from attention_paths.runs.lock import results_lock
    from attention_paths.tasks.omniglot import training

    monkeypatch.setattr(training, "train", lambda *a, **k: pytest.fail("trained in a locked folder"))
    out = tmp_path / "o"
    with results_lock(out, command="python -m attention_paths theory --out o (the first run)"):
        assert main([command, "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"results folder {out} is in use by another run" in err
    assert f"pid {os.getpid()}," in err and "command: python -m attention_paths theory --out o (the first run)" in err
    assert sorted(p.name for p in out.iterdir()) == [".lock"]  # nothing written


def test_run_experiment_takes_the_folder_lock_unless_its_caller_holds_it(tmp_path, monkeypatch):
    """The library call is guarded too; ``lock=False`` is for a caller that holds the lock (the command line)."""
    from attention_paths.runs import experiments
    from attention_paths.runs.lock import ResultsFolderLocked, results_lock
    from attention_paths.tasks import toy

    monkeypatch.setattr(toy, "theory_demo", lambda scale, progress: pytest.fail("ran in a locked folder"))
    with results_lock(tmp_path, command="the other run"):
        with pytest.raises(ResultsFolderLocked, match=f"in use by another run .*pid {os.getpid()},.*the other run"):
            experiments.run_experiment("theory", "quick", tmp_path, progress=False)
    monkeypatch.setattr(toy, "theory_demo", lambda scale, progress: "ran")
    monkeypatch.setattr(toy, "theory_summary", lambda res: ({"experiment": "theory", "ran": res}, {}))
    with results_lock(tmp_path):
        summary = experiments.run_experiment("theory", "quick", tmp_path, progress=False, lock=False)
    assert summary["ran"] == "ran" and (tmp_path / "summary.json").exists()


def test_two_processes_on_one_output_folder(tmp_path):
    """Issue 37 §3: `theory` started while another process holds the folder exits 2 at once naming that
    process; once the holder is gone, the folder is free."""
    out = tmp_path / "o"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys\nfrom attention_paths.runs.lock import results_lock\n"
            f"with results_lock({str(out)!r}):\n    print('held', flush=True)\n    sys.stdin.readline()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        second = _run(["theory", "--out", str(out), "--quiet"])
        assert second.returncode == 2 and "Traceback" not in second.stderr, second.stderr
        line = second.stderr.strip().splitlines()[-1]
        assert "in use by another run (host " in line and f"pid {holder.pid}," in line and "command: " in line
        for command in ("theory", "omniglot-train", "pruning", "hmc"):  # at once: before torch or numpy loads
            code = (
                "import sys\nfrom attention_paths.__main__ import main\n"
                f"rc = main([{command!r}, '--out', {str(out)!r}, '--quiet'])\n"
                "print(rc, *[m for m in ('torch', 'numpy', 'jax') if m in sys.modules])"
            )
            probe = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
            assert probe.stdout.split() == ["2"] and f"pid {holder.pid}," in probe.stderr, (command, probe)
        assert not (out / "summary.json").exists() and not (out / "last.pt").exists()
    finally:
        holder.communicate("\n", timeout=60)  # releases the lock, and closes the pipes
    from attention_paths.runs.lock import results_lock

    with results_lock(out):  # the lock went with the process
        pass


@pytest.mark.parametrize("command", ["omniglot-theory", "pruning"])
def test_a_network_that_is_not_committed_is_trained_only_when_asked(tmp_path, capsys, monkeypatch, command):
    """Issue 37 §5: ``--network`` of a registered network that is not committed (paper-2x8, in a checkout whose
    data/ holds another network only) is an error naming the network and the command that trains it, unless
    --train-missing; an unregistered one (paper-seed7) is an argument error."""
    from attention_paths.tasks.omniglot import training
    from attention_paths.tasks.oneshot import experiment as oneshot_experiment
    from attention_paths.tasks.pruning import experiment as pruning_experiment

    def no_training(*args, **kwargs):
        raise AssertionError("the network would be trained here")

    monkeypatch.setattr(training, "train", no_training)
    monkeypatch.setenv("ATTENTION_PATHS_REPO", str(_checkout_with(tmp_path, "paper-seed1")))
    for module in (oneshot_experiment, pruning_experiment):
        monkeypatch.setattr(module, "load_network", no_training)
    out = tmp_path / "o"
    assert main([command, "--network", "paper-2x8", "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "network 'paper-2x8' is not committed" in err
    assert "41,240 steps" in err and "python -m attention_paths omniglot-train --network paper-2x8" in err
    assert "--train-missing" in err and not (out / "summary.json").exists()
    with pytest.raises(AssertionError, match="would be trained here"):  # asked: it goes on to train
        main([command, "--network", "paper-2x8", "--train-missing", "--out", str(out), "--quiet"])
    assert "unknown network 'paper-seed7'" in _error(capsys, [command, "--network", "paper-seed7"])


def _checkout_with(tmp_path, name: str) -> Path:
    """A checkout (for ``ATTENTION_PATHS_REPO``) whose ``data/`` holds a copy of committed network ``name``."""
    import shutil

    root = tmp_path / "checkout"
    (root / "lib" / "attention_paths").mkdir(parents=True)
    (root / "_config.yml").write_text("title: test\n")
    shutil.copytree(ROOT / "data" / f"omniglot-{name}", root / "data" / f"omniglot-{name}")
    (root / "data" / "README.md").write_text("test\n")
    return root


def test_ensemble_status_on_a_damaged_network_record_is_one_line_naming_it(tmp_path, capsys, monkeypatch):
    """Issue 37 §5: ``ensemble --status`` on a damaged committed ``record.json`` (edited in place; not JSON;
    without its SHA-256), its seal rewritten to match in the last two, is one line naming the file, exit 2."""
    from attention_paths.tasks.omniglot.checkpoints import checkpoint_sha256, seal_network_folder

    root = _checkout_with(tmp_path, "paper-seed1")
    folder = root / "data" / "omniglot-paper-seed1"
    record = folder / "record.json"
    text = record.read_text()
    record.write_text(text.replace('"sha256"', '"sha257"', 1))  # same size, the seal not rewritten
    argv = ["ensemble", "--status", "--seeds", "1", "--out", str(tmp_path / "out")]
    out = _run(argv, ATTENTION_PATHS_REPO=str(root))
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert out.stderr.strip().splitlines() == [
        f"python -m attention_paths: error: {record} is damaged or was edited: its SHA-256 differs from the one in "
        f"{folder / 'files.json'} (--debug shows the traceback)"
    ]
    monkeypatch.setenv("ATTENTION_PATHS_REPO", str(root))
    for damaged, problem in ((text[:100], "is damaged (not valid JSON"), (text.replace('"exported"', '"x"', 1), "")):
        record.write_text(damaged)
        try:  # the sealer refuses a record that is not JSON; a forger writes the seal by hand
            seal_network_folder(folder, reason="test: damaged together with its seal")
        except ValueError:
            seal = json.loads((folder / "files.json").read_text())
            seal["files_sha256"]["record.json"] = checkpoint_sha256(record)
            (folder / "files.json").write_text(json.dumps(seal))
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and str(record) in err and problem in err, err
    record.write_text(text)
    seal_network_folder(folder)
    assert main(argv) == 0 and "paper-seed1.train" in capsys.readouterr().out  # the repaired folder is read


@pytest.mark.parametrize(
    "name, folder",
    [
        ("hmc", "hmc-paper"),
        ("omniglot-theory", "omniglot-theory/paper-sizes-paper-network"),
        ("pruning", "pruning/paper-network"),
    ],
)
def test_the_headline_names_keys_the_summary_has(name, folder):
    """Every headline key of a record is a key of the experiment's summary (a committed run's; the command line
    adds ``wall_seconds``), and the headline leaves out the bulk (per-seed, per-width and per-combination
    tables, provenance)."""
    import json

    from attention_paths.runs.registry import EXPERIMENTS

    keys = set(json.loads((ROOT / "data" / folder / "summary.json").read_text())) | {"wall_seconds"}
    headline = set(EXPERIMENTS[name].headline)
    assert headline <= keys, headline - keys
    bulk = {"provenance", "config", "seed_sets", "sampled", "per_width", "singles", "combinations", "solver"}
    assert not headline & bulk and (keys - headline) & bulk


@pytest.mark.parametrize(
    "argv", [["omniglot-theory", "--help"], ["omniglot-train", "--seeds", "1"], ["pruning", "--network", "paper-seed7"]]
)
def test_subcommand_help_and_option_errors_load_nothing_heavy(argv):
    """Issue 35 §7: a subcommand's --help, a wrong option and a bad network name answer from the registry's
    records alone, before torch, numpy, JAX or dask load."""
    code = (
        "import sys\nfrom attention_paths.__main__ import main\ntry:\n    main(%r)\nexcept SystemExit as e:\n"
        "    print('EXIT', e.code, *[m for m in ('torch', 'numpy', 'jax', 'dask', 'scipy') if m in sys.modules])"
    ) % (argv,)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.stdout.split()[-2:] == ["EXIT", "0" if "--help" in argv else "2"], (out.stdout, out.stderr)


@pytest.mark.parametrize(
    "argv, named",
    [
        (["--widths", "10,x"], "expected ints separated by commas, got '10,x'"),
        (["--taus", "0.5,hot"], "expected floats separated by commas"),
        (["--widths", "10,7"], "--widths must be distinct values of the scale's grid"),
        (["--taus", "0.1,0.25"], "a restricted grid must keep the panel point"),
    ],
)
def test_a_restricted_theory_grid_is_checked_before_anything_loads(tmp_path, capsys, monkeypatch, argv, named):
    """``omniglot-theory --widths/--taus`` (the 2 x 8 network's restricted grid): a malformed list, a value off
    the scale's grid or a grid without the panel point is an error naming it, before any network loads."""
    from attention_paths.tasks.omniglot import training

    monkeypatch.setattr(training, "load_network", lambda *a, **k: pytest.fail("loaded despite a bad grid"))
    full = ["omniglot-theory", "--scale", "paper", "--no-sample", *argv, "--out", str(tmp_path / "o")]
    if "expected" in named:  # malformed: argparse's usage error
        err = _error(capsys, full)
    else:  # off the grid: the run's first check, reported in one line with exit status 2
        assert main(full) == 2
        err = capsys.readouterr().err
    assert named in err
