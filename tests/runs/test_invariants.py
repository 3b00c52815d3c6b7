"""Issue 37 §2: content checked where it is read.  Each case edits a copy of a committed run and rewrites its
digest record to match (so the SHA-256 check passes, as after a careful forger or a buggy writer): the reader
must still refuse it, with a ``ValueError`` naming the folder, the field and the problem.  And issue 37's note:
``results.write`` seals only the files the current run wrote."""

import json
from pathlib import Path

import numpy as np
import pytest
from helpers import rewritten_run

from attention_paths.runs import experiments, results

DATA = Path(__file__).resolve().parents[2] / "data"
HMC, THEORY, PRUNING = "hmc-paper", "omniglot-theory/paper-sizes-paper-network", "pruning/paper-network"
KIND = {HMC: "hmc", THEORY: "omniglot-theory", PRUNING: "pruning"}
RB10, FULL10 = "main_N10_rao-blackwell", "main_N10_full"


def _rewritten(tmp_path, src: str, edit_summary=None, edit_arrays=None) -> Path:
    """A copy of committed run ``src`` edited, with its digest record regenerated to match."""
    run = rewritten_run(tmp_path, DATA / src, edit_summary, edit_arrays)
    results.verify_files(run)  # the digests pass: only the content checks can refuse it
    return run


def _symmetric_nan(U):
    """A NaN at U[2] (0, 1) and (1, 0): a seed set's sweep, stored once (in arrays.npz) since hmc layout 2."""
    U[2, 0, 1] = U[2, 1, 0] = np.nan
    return U


def _indefinite(a, key, index):
    """Push the smallest eigenvalue of ``a[key][index]`` to minus a tenth of its largest, the diagonal kept positive."""
    U = a[key].copy()
    w, v = np.linalg.eigh(U[index])
    U[index] = U[index] - (w[0] + 0.1 * w[-1]) * np.outer(v[:, 0], v[:, 0])
    assert np.linalg.eigvalsh(U[index])[0] < 0 and (np.diagonal(U[index]) > 0).all()
    a[key] = U


def _swap_extreme_scores(s):
    lo, hi = s["order"][0], s["order"][-1]
    s["scores"][lo], s["scores"][hi] = s["scores"][hi], s["scores"][lo]


def _set(path, value):
    """An edit of the summary entry at ``path`` (keys and indices)."""

    def edit(s):
        for k in path[:-1]:
            s = s[k]
        s[path[-1]] = value

    return edit


def _arr(key, f):
    def edit(a):
        a[key] = f(a[key].copy())

    return edit


def _nan_at(index):
    def f(x):
        x[index] = np.nan
        return x

    return f


CASES = {
    # the twenty edits of issue 37 §2, and a few more of the same kinds
    "hmc accuracy 196.3 %": (
        HMC,
        _set(["sampled", RB10, "accuracy"], 196.3),
        None,
        r"'sampled\[main_N10_rao-blackwell\]\.accuracy' = 196\.3 is not an accuracy",
    ),
    "hmc posterior mean cut to 100 of 1,000": (
        HMC,
        None,
        _arr(f"sample_{RB10}_mean", lambda x: x[:100]),
        r"\.mean' has shape \(100,\), expected \(1000,\)",
    ),
    "hmc NaN in U": (
        HMC,
        None,
        _arr("seed_sets_0_sweep_U", _symmetric_nan),
        r"'seed_sets_0_sweep_U' holds 2 non-finite value\(s\)",  # refused by the sealer, naming the array
    ),
    "hmc 2x2 U_hat for a 4-path network": (
        HMC,
        None,
        _arr(f"sample_{FULL10}_U_hat", lambda x: x[:2, :2]),
        r"U_hat' has shape \(2, 2\), expected \(4, 4\)",
    ),
    "hmc run filed as N = 10 says N = 30": (
        HMC,
        _set(["sampled", FULL10, "N"], 30),
        None,
        r"'sampled\[main_N10_full\]' holds the run 'main_N30_full'",
    ),
    "hmc kernel_GP missing": (HMC, None, lambda a: a.pop("kernels_GP"), r"'kernels' lack \['GP'\]"),
    "hmc U with its paths permuted": (
        HMC,
        None,
        _arr("seed_sets_0_sweep_U", lambda U: U[:, [1, 0, 2, 3]][:, :, [1, 0, 2, 3]]),
        r"'sets\[0\]\.head_scores' are not the head scores of U",
    ),
    "hmc sweep accuracy 196.3 %": (
        HMC,
        _set(["seed_sets", 1, "sweep", "accuracy", 0], 196.3),
        None,
        r"'sets\[1\]\.sweep\.accuracy' = 196\.3 is not an accuracy",
    ),
    "hmc widths reversed": (HMC, None, None, r"'sets\[0\]\.sweep\.widths' = \[1000\.0, .* not strictly increasing"),
    "theory U indefinite": (
        THEORY,
        None,
        lambda a: _indefinite(a, "U", (0, 3)),
        r"'U' is not positive semi-definite \(smallest eigenvalue -",
    ),
    "theory NaN in U": (THEORY, None, _arr("U", _nan_at((1, 1, 0, 0))), r"'U' holds non-finite values|non-finite"),
    "theory head scores of the two layers swapped": (
        THEORY,
        lambda s: s["panel"]["head_scores"].reverse(),
        None,
        r"'panel\.head_scores' are not the head scores of the panel's U",
    ),
    "theory network accuracy 250 %": (
        THEORY,
        _set(["network_accuracy", "test"], 250.0),
        None,
        r"'network_accuracy' = 250 is not an accuracy",
    ),
    "theory widths reversed": (
        THEORY,
        lambda s: s["widths"].reverse(),
        None,
        r"'widths' = \[10000\.0, .* is not strictly increasing",
    ),
    "theory sampled U_hat 2x2": (
        THEORY,
        None,
        _arr("sample_N10_U_hat", lambda x: x[:2, :2]),
        r"'sampled\[10\]\.U_hat' has shape \(2, 2\), expected \(16, 16\)",
    ),
    "theory selected accuracy 101 %": (
        THEORY,
        _set(["select", "val", "gp", "accuracy", "MNIST"], 101.0),
        None,
        r"'select\[val\]\[gp\]\.accuracy\[MNIST\]' = 101",
    ),
    "pruning order reversed": (
        PRUNING,
        lambda s: s["order"].reverse(),
        None,
        r"'order' = .* is not sorted by ascending score",
    ),
    "pruning single-head drop NaN": (
        PRUNING,
        _set(["singles", "(1)3", "drop", "test"], float("nan")),
        None,
        r"'singles\[\(1\)3\]\.drop\[test\]' holds non-finite values",
    ),
    "pruning single-head accuracy -5 %": (
        PRUNING,
        _set(["singles", "(2)1", "accuracy", "MNIST"], -5.0),
        None,
        r"'singles\[\(2\)1\]\.accuracy\[MNIST\]' = -5 is not an accuracy",
    ),
    "pruning lowest and highest scores swapped": (
        PRUNING,
        _swap_extreme_scores,
        None,
        r"'order' = .* is not sorted by ascending score",
    ),
    "pruning '2 lowest' made of the two highest": (
        PRUNING,
        _set(["combinations", "2 lowest", "heads"], ["(2)2", "(2)3"]),
        None,
        r"'combinations\[2 lowest\]\.heads' = .* not the 2 lowest-scoring",
    ),
    "pruning drop not the accuracy's": (
        PRUNING,
        _set(["pairs", "(1)1,(1)2", "drop", "FashionMNIST"], 0.0),
        None,
        r"'pairs\[\(1\)1,\(1\)2\]\.drop\[FashionMNIST\]' = 0 is not the unpruned",
    ),
}


def _hmc_reversed_widths(s, a):
    """Every sweep's widths reversed, with its per-width numbers and its U."""
    for k, rec in enumerate(s["seed_sets"]):
        for sweep in ("sweep", "noisy_sweep"):
            for what in ("widths", "accuracy", "grad_max", "hessian_min_eig", "iterations"):
                rec[sweep][what].reverse()
            a[f"seed_sets_{k}_{sweep}_U"] = a[f"seed_sets_{k}_{sweep}_U"][::-1].copy()


SPECIAL = {"hmc widths reversed": _hmc_reversed_widths}


@pytest.mark.parametrize("case", list(CASES))
def test_a_consistently_edited_run_is_refused_naming_field_and_problem(tmp_path, case):
    src, edit_summary, edit_arrays, match = CASES[case]
    if case in SPECIAL:  # edits of the summary and arrays together
        both = {}

        def edit_summary(s):
            both["s"] = s

        def edit_arrays(a):
            SPECIAL[case](both["s"], a)

    run = tmp_path / Path(src).name
    with pytest.raises(ValueError, match=match) as err:  # by the reader, or (a NaN) by the sealer already
        experiments.load_run(_rewritten(tmp_path, src, edit_summary, edit_arrays), KIND[src])
    assert str(run) in str(err.value)  # the folder is named


@pytest.mark.parametrize("src", [HMC, THEORY, PRUNING])
def test_the_committed_runs_meet_their_invariants(src):
    res = experiments.load_run(DATA / src, KIND[src])
    res.check(DATA / src)  # loading checked them already; the check is the type's own, callable on any result


def test_results_write_seals_only_the_files_it_wrote(tmp_path):
    """A stale result.pkl of another run in the folder is removed, neither sealed nor left to be read."""
    results.write_result(tmp_path, {"another": "run"})
    results.write(tmp_path, {"experiment": "demo", "x": 1}, {"a": np.arange(3.0)})
    record = json.loads((tmp_path / results.FILES).read_text())
    assert sorted(record["files_sha256"]) == ["arrays.npz", "summary.json"]
    assert not (tmp_path / results.RESULT).exists()
    results.write(tmp_path, {"experiment": "demo", "x": 2}, {"a": np.arange(3.0)}, result={"this": "run"})
    record = json.loads((tmp_path / results.FILES).read_text())
    assert sorted(record["files_sha256"]) == ["arrays.npz", "result.pkl", "summary.json"]
    summary, arrays = results.read(tmp_path)
    assert summary["x"] == 2 and arrays["a"].tolist() == [0.0, 1.0, 2.0]
