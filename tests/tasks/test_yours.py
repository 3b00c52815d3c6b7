"""Issue 51 §2: ``analyse`` and ``prune`` of a reader's own network, as commands and as functions: the folder
reads back through the registry, the pruned state dict's own forward pass is the curve's point, and every bad
input is refused with an error naming it."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import attention_paths as ap
from attention_paths.runs import experiments, results
from attention_paths.tasks.yours import (
    MultiheadStack,
    load_data,
    marked_tokens,
    run_analyse,
    run_prune,
    train_stack,
)
from attention_paths.tasks.yours.prune import PRUNED_TOLERANCE

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def user(tmp_path_factory):
    """A reader's folder: a small trained stack saved with torch.save, a module with an entry point returning
    it, and the data as an .npz (training set and two evaluation sets)."""
    folder = tmp_path_factory.mktemp("user")
    x, y = marked_tokens(900, seed=3)
    model = MultiheadStack(n_heads=2, seed=3)
    train_stack(model, x[:500], y[:500], steps=60, batch=128, seed=3)
    torch.save(model.eval(), folder / "model.pt")
    (folder / "mine.py").write_text(
        "import torch\n\n\ndef build():\n"
        "    return torch.load(__file__.replace('mine.py', 'model.pt'), weights_only=False)\n"
    )
    np.savez(
        folder / "data.npz",
        x_train=x[:300],
        y_train=y[:300],
        x_test=x[500:800],
        y_test=y[500:800],
        x_other=x[800:],
        y_other=y[800:],
    )
    return folder


def _cli(args, cwd):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "lib"), str(cwd)])}
    return subprocess.run(
        [sys.executable, "-m", "attention_paths", *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=600
    )


def _command(experiment: str, args: list, cwd, out):
    """Run ``python -m attention_paths <experiment> <args> --quiet --out <out>`` in ``cwd``; its folder read back
    through the registry."""
    run = _cli([experiment, *args, "--quiet", "--out", str(out)], cwd)
    assert run.returncode == 0, run.stderr
    return experiments.load_run(out, experiment, required=True)


def test_analyse_command_writes_a_folder_that_reads_back_through_the_registry(user):
    out = user / "analysis"
    args = ["--model", "mine:build", "--data", "data.npz", "--widths", "10,100", "--taus", "0.5,1"]
    res = _command("analyse", args, user, out)
    assert res.heads == (2, 2) and res.U.shape == (2, 2, 4, 4) and sorted(res.accuracy) == ["other", "test"]
    assert res.config["model"] == "mine:build" and res.model["path_sum_check"] < 1e-12
    assert "files_sha256" in json.loads((out / results.FILES).read_text())
    # the same numbers as the function on the saved model (one code path)
    again = run_analyse(
        "quick",
        model=torch.load(user / "model.pt", weights_only=False),
        data=user / "data.npz",
        widths=(10, 100),
        taus=(0.5, 1.0),
    )
    np.testing.assert_allclose(res.U, again.U, rtol=1e-12, atol=1e-14)
    for s in res.accuracy:
        np.testing.assert_array_equal(res.accuracy[s], again.accuracy[s])
    # the GP limit: at a very large width U is the identity to the accuracy of the solve
    big = run_analyse("quick", model=str(user / "model.pt"), data=user / "data.npz", widths=(10**7,), taus=(0.5,))
    np.testing.assert_allclose(big.U[0, 0], np.eye(4), atol=1e-4)
    np.testing.assert_allclose(big.accuracy["test"][0, 0], big.gp_accuracy["test"][0], atol=0.34)


def test_a_stored_analysis_whose_numbers_disagree_is_refused(user, tmp_path):
    src = user / "analysis"
    if not (src / "summary.json").exists():
        pytest.skip("needs the command's folder")
    shutil.copytree(src, tmp_path / "run")
    summary, arrays = results.read(tmp_path / "run")
    arrays["head_scores"] = arrays["head_scores"][..., ::-1].copy()  # consistent file, contradicting numbers
    results.write(tmp_path / "run", {k: v for k, v in summary.items() if k != "format"}, arrays)
    with pytest.raises(ValueError, match="head_scores"):
        experiments.load_run(tmp_path / "run", "analyse")


def test_prune_command_saves_a_state_dict_whose_forward_is_the_curve(user):
    out = user / "pruned"
    args = ["--model", str(user / "model.pt"), "--data", "data.npz", "--remove", "1", "--n-random", "20"]
    res = _command("prune", args, user, out)
    assert len(res.removed) == 1 and res.removed == res.curves["theory score"].order[:1]
    assert res.random.drop["test"].shape == (20, 3)
    net = MultiheadStack(n_heads=2).double()
    net.load_state_dict(res.state_dict())
    x, y = load_data(user / "data.npz").sets["test"]
    with torch.no_grad():
        own = net(torch.as_tensor(x, dtype=torch.float64)).numpy()
    point = res.curves["theory score"].accuracy["test"][1]
    assert 100 * np.mean(np.where(own > 0, 1.0, -1.0) == y) == pytest.approx(point, abs=1e-12)
    F = res.F["test"]
    c = ap.adapt(torch.load(user / "model.pt", weights_only=False)).coefficients(
        [(int(res.removed[0][1]) - 1, int(res.removed[0][3]) - 1)]
    )
    assert np.abs(own - F @ c).max() <= PRUNED_TOLERANCE * np.abs(F @ c).max()
    # the curves are recomputed on reading; a resealed edit of one is refused
    summary, arrays = results.read(out)
    key = next(k for k in arrays if k.startswith("curves") and "accuracy_test" in k)
    arrays[key] = arrays[key] + 1.0
    results.write(out, {k: v for k, v in summary.items() if k != "format"}, arrays)
    with pytest.raises(ValueError, match="curves"):
        experiments.load_run(out, "prune")


@pytest.mark.parametrize(
    "change, message",
    [
        ({"y_train": lambda a: (a > 0).astype(float)}, "labels must be \\+1 or -1"),
        ({"y_train": lambda a: np.ones_like(a)}, "needs both classes"),
        ({"x_train": lambda a: np.where(np.arange(a.size).reshape(a.shape) == 5, np.nan, a)}, "NaN"),
        ({"x_test": lambda a: a[:0], "y_test": lambda a: a[:0]}, "is empty"),
        ({"y_test": lambda a: a[:-1]}, "one label per input"),
        ({"y_other": None}, "x_other but no y_other"),
        ({"extra": lambda a: None}, "not x_<set> / y_<set>"),
    ],
)
def test_bad_data_is_refused_by_name(user, tmp_path, change, message):
    arrays = dict(np.load(user / "data.npz"))
    for k, f in change.items():
        if f is None:
            arrays.pop(k)
        elif k == "extra":
            arrays["extra"] = np.zeros(3)
        else:
            arrays[k] = f(arrays[k])
    with pytest.raises(ValueError, match=message):
        load_data(arrays)


def test_bad_grid_model_and_paths_are_refused_by_name(user, capsys):
    model = str(user / "model.pt")
    with pytest.raises(ValueError, match=r"AnalyseConfig.widths must be >= 1"):
        run_analyse("quick", model=model, data=user / "data.npz", widths=(0, 10))
    with pytest.raises(ValueError, match=r"AnalyseConfig.taus must be > 0"):
        run_analyse("quick", model=model, data=user / "data.npz", taus=(-1.0,))
    with pytest.raises(ValueError, match="neither a file nor a 'module:function'"):
        run_analyse("quick", model="no such model", data=user / "data.npz")
    with pytest.raises(ValueError, match="cannot import the model's entry point"):
        run_analyse("quick", model="nowhere_module:build", data=user / "data.npz")
    with pytest.raises(FileNotFoundError, match="the data file"):
        run_analyse("quick", model=model, data=user / "missing.npz")
    with pytest.raises(ValueError, match="cannot remove 3 heads"):
        run_prune("quick", model=model, data=user / "data.npz", remove=3, n_random=2)
    run = _cli(["analyse", "--model", model, "--data", "data.npz", "--taus", "0", "--out", str(user / "bad")], user)
    assert run.returncode == 2 and "AnalyseConfig.taus must be > 0" in run.stderr
