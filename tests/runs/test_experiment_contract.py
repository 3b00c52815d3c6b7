"""Issue 35 §3: one contract, checked on every registered experiment (as scikit-learn's
``parametrize_with_checks`` checks every estimator).  For each experiment of
:data:`attention_paths.runs.registry.EXPERIMENTS`, a result (a committed run under ``data/`` for those the
chapters read back, a live run at a tiny size for the others) must

* be written by the one serialiser: its results folder is its result type's declared layout
  (:mod:`attention_paths.base.serialise`), read by ``from_folder`` alone as by the experiment's reader;
* round trip: written to a results folder and read back, every stored field is equal (the fields its type
  declares live only, ``Stored(to="live")``, are not stored);
* write back: the reloaded result writes the same bytes of ``summary.json`` and ``arrays.npz``;
* keep its claims: the claims written from the reloaded result are those written from the original;
* pickle: a pickle round trip gives equal fields;
* refuse a damaged file: a flipped byte in ``arrays.npz`` raises a ``ValueError`` naming the file.

An experiment registered later is checked by the same tests without an edit here: its registry record says
where its committed run is or how to make a tiny one (``Experiment.committed``, ``Experiment.tiny``); a
toy experiment in a package of its own is enrolled that way (the last test)."""

import dataclasses
import json
import pickle
import re
from pathlib import Path

import numpy as np
import pytest

from attention_paths.base.serialise import Stored, from_folder
from attention_paths.runs import experiments, results
from attention_paths.runs.registry import EXPERIMENTS

DATA = Path(__file__).resolve().parents[2] / "data"


def _tiny_run(exp, monkeypatch):
    """A run of ``exp`` at the quick scale with its record's ``tiny`` changes to the config."""
    configs = exp.resolve("configs")
    monkeypatch.setitem(configs, "quick", dataclasses.replace(configs["quick"], **dict(exp.tiny)))
    return exp.resolve("run")("quick", progress=False)


def _original(exp, tmp_path_factory):
    """``(original result, folder it was written to)`` of ``exp``: its committed run (the record's ``committed``,
    under data/), else a tiny run (its ``tiny``), written by the experiment's summary function."""
    if exp.committed is not None:
        original = experiments.load_run(DATA / exp.committed, exp.name, required=True)
    elif exp.tiny:
        with pytest.MonkeyPatch.context() as mp:
            original = _tiny_run(exp, mp)
    else:
        pytest.fail(
            f"experiment {exp.name!r} has neither a committed run nor a tiny size: set its record's committed or tiny"
        )
    folder = tmp_path_factory.mktemp(exp.name)
    results.write(folder, *exp.resolve("summary")(original))
    return original, folder


_CACHE: dict = {}


# a tiny run that still takes long here: posterior, 78 s on two busy cores (JAX's start and compilation)
SLOW = {"posterior"}


@pytest.fixture(params=[pytest.param(n, marks=[pytest.mark.slow] if n in SLOW else []) for n in sorted(EXPERIMENTS)])
def case(request, tmp_path_factory):
    """``(name, original result, folder it was written to)``: the original is written once per experiment."""
    name = request.param
    if name not in _CACHE:
        _CACHE[name] = _original(EXPERIMENTS[name], tmp_path_factory)
    return (name, *_CACHE[name])


def _same(a, b, where: str = "result", stored_only: bool = False) -> None:
    """Equal fields, recursively (arrays element for element, NaN equal to NaN); ``stored_only``: not the fields
    a type declares live only."""
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        assert type(a) is type(b), where
        stored = getattr(type(a), "STORED", {})
        for f in dataclasses.fields(a):
            if not stored_only or stored.get(f.name, Stored()).to != "live":
                _same(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}", stored_only)
    elif isinstance(a, dict):
        assert isinstance(b, dict) and list(a) == list(b), f"{where}: keys {list(a)} != {list(b)}"
        for k in a:
            _same(a[k], b[k], f"{where}[{k!r}]", stored_only)
    elif isinstance(a, (list, tuple)) and not isinstance(b, np.ndarray):
        assert isinstance(b, (list, tuple)) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _same(x, y, f"{where}[{i}]", stored_only)
    elif isinstance(a, (np.ndarray, np.generic, float)) or hasattr(a, "__array__"):  # arrays, tensors
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=where)
    elif type(a) is type(b) and hasattr(a, "__dict__") and not a == b:  # an object without equality: its fields
        _same(vars(a), vars(b), where, stored_only)
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


def _reader(name: str):
    if EXPERIMENTS[name].reader is None:
        pytest.skip(f"{name} has no reader (its registry record's reader is None): the chapters never read it back")


def test_round_trip(case):
    name, original, folder = case
    _reader(name)
    back = experiments.load_run(folder, name)
    assert type(back) is type(original)
    _same(back, original, stored_only=True)


def test_the_folder_is_the_serialisers(case):
    name, original, folder = case
    _reader(name)
    cls = EXPERIMENTS[name].resolve("result")
    assert getattr(cls, "EXPERIMENT", None) == name, f"{cls.__name__}.EXPERIMENT is not {name!r}"
    summary, arrays = results.read(folder)
    _same(from_folder(cls, summary, arrays, folder), experiments.load_run(folder, name), stored_only=True)


def test_write_back_gives_the_same_bytes(case, tmp_path):
    name, original, folder = case
    if EXPERIMENTS[name].reader is not None:  # the result read back, written again
        summary, arrays = EXPERIMENTS[name].resolve("summary")(experiments.load_run(folder, name))
    else:  # its summary and arrays read back, written again
        summary, arrays = results.read(folder)
    results.write(tmp_path, summary, arrays)
    for f in (results.SUMMARY, results.ARRAYS):
        assert (tmp_path / f).read_bytes() == (folder / f).read_bytes(), f
    # and the arrays are the original's, key for key
    first, again = np.load(folder / results.ARRAYS), np.load(tmp_path / results.ARRAYS)
    assert first.files == again.files
    for k in first.files:
        np.testing.assert_array_equal(first[k], again[k], err_msg=k)


def test_claims_are_those_of_the_original(case):
    name, original, folder = case
    _reader(name)
    if EXPERIMENTS[name].claims is None:
        pytest.skip(f"{name} checks no claims")
    back = experiments.load_run(folder, name)
    summarize = EXPERIMENTS[name].resolve("summary")
    written = summarize(original)[0]["claims"]
    assert summarize(back)[0]["claims"] == written and len(written) > 0
    assert json.loads((folder / results.SUMMARY).read_text())["claims"] == json.loads(json.dumps(written))
    claims = EXPERIMENTS[name].resolve("claims")
    if getattr(original, "live", True):  # the experiment's claims function, where it runs on a reloaded result
        assert claims(back) == claims(original)


def test_pickle_round_trip(case):
    name, original, folder = case
    _same(pickle.loads(pickle.dumps(original)), original)


def test_a_damaged_arrays_file_is_refused(case, tmp_path):
    import shutil

    name, original, folder = case
    shutil.copytree(folder, tmp_path / "run")
    path = tmp_path / "run" / results.ARRAYS
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one flipped byte
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=r"arrays\.npz does not match the SHA-256"):
        if EXPERIMENTS[name].reader is not None:
            experiments.load_run(tmp_path / "run", name)
        else:
            results.read(tmp_path / "run")


# ------------------------------------------------------------------------- resealed edits (issue 52)
def _resealed(folder, tmp_path, edit):
    """A copy of ``folder`` with ``edit(summary, arrays)`` applied and its digests rewritten (a reseal)."""
    import shutil

    shutil.copytree(folder, tmp_path / "run")
    summary, arrays = results.read(tmp_path / "run")
    edit(summary, arrays)
    results.write(tmp_path / "run", {k: v for k, v in summary.items() if k != "format"}, arrays)
    return tmp_path / "run"


def _some_arrays(folder) -> list[str]:
    """Up to three arrays of a folder (its first, middle and last, by name), the targets of the edits."""
    names = sorted(np.load(folder / results.ARRAYS).files)
    return sorted({names[0], names[len(names) // 2], names[-1]}) if names else []


ARRAY_EDITS = {
    "complex": lambda a: a.astype(complex) * (1 + 10j),
    "strings": lambda a: a.astype(str),
    "NaN": lambda a: np.where(np.arange(a.size).reshape(a.shape) == 0, np.nan, a.astype(float)),
}


@pytest.mark.parametrize("kind", sorted(ARRAY_EDITS))
def test_a_resealed_array_of_another_kind_is_refused_naming_it(case, tmp_path, kind):
    """For every registered experiment, with no code of its own: an array made complex, strings, or given a NaN,
    then resealed (digests rewritten), is refused, by the sealer (``results.write_files_record``) or on reading,
    with a message naming the array."""
    name, original, folder = case
    for key in _some_arrays(folder):

        def edit(summary, arrays, key=key):
            arrays[key] = ARRAY_EDITS[kind](np.asarray(arrays[key]))

        with pytest.raises(ValueError, match=re.escape(repr(key))):  # refused by the sealer or by the reader
            experiments.load_run(_resealed(folder, tmp_path / f"{kind}-{key}", edit), name)


def test_a_resealed_flip_of_every_claim_is_refused(case, tmp_path):
    name, original, folder = case
    summary, _ = results.read(folder)
    if not summary.get("claims"):
        pytest.skip(f"{name} stores no claims")

    def edit(summary, arrays):
        for c in summary["claims"]:
            c["passed"] = not c["passed"]

    with pytest.raises(ValueError, match=r"claims\["):
        experiments.load_run(_resealed(folder, tmp_path, edit), name)


TOY_MODULE = '''
"""A toy experiment, in a package of its own: the mean of n Gaussian numbers."""
from dataclasses import dataclass

import numpy as np

from attention_paths.base import invariants as inv
from attention_paths.base.serialise import read_checked, to_folder


@dataclass(frozen=True)
class ToyConfig:
    n: int


CONFIGS = {"quick": ToyConfig(n=1000), "paper": ToyConfig(n=10**6)}


@dataclass(kw_only=True)
class ToyResult:
    scale: str
    n: int
    values: np.ndarray
    mean: float

    EXPERIMENT = "toy-mean"

    def check(self, folder=None):
        inv.finite(folder, "values", self.values, (self.n,))
        if abs(float(np.mean(self.values)) - self.mean) > 1e-12:
            inv.violation(folder, "mean", "is not the mean of values")


def run(scale, progress=False):
    v = np.random.default_rng(0).standard_normal(CONFIGS[scale].n)
    return ToyResult(scale=scale, n=len(v), values=v, mean=float(v.mean()))


def summary(res):
    return to_folder(res)


def read(folder, summary, arrays):
    return read_checked(ToyResult, summary, arrays, folder)
'''


def test_a_toy_experiment_in_its_own_package_is_enrolled_by_its_record_alone(tmp_path, tmp_path_factory, monkeypatch):
    """Issue 50: registering an experiment is all it takes. A toy experiment, written in a package of its own
    and registered with a tiny size, passes the same contract (round trip, the serialiser's folder, byte-for-byte
    write-back, pickling, damaged and resealed files refused) through this file's own test functions, with no
    edit here; without a committed run or a tiny size it is refused by name."""
    from attention_paths.runs.registry import Experiment

    (tmp_path / "toy_experiments").mkdir()
    (tmp_path / "toy_experiments" / "__init__.py").write_text(TOY_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = "toy_experiments"
    exp = Experiment(
        "toy-mean",
        "the mean of n Gaussian numbers",
        run=f"{mod}:run",
        result=f"{mod}:ToyResult",
        summary=f"{mod}:summary",
        reader=f"{mod}:read",
        configs=f"{mod}:CONFIGS",
        tiny=(("n", 10),),
    )
    monkeypatch.setitem(EXPERIMENTS, exp.name, exp)
    original, folder = _original(exp, tmp_path_factory)
    assert original.n == 10  # the tiny size, not the quick scale's 1000
    case = (exp.name, original, folder)
    test_round_trip(case)
    test_the_folder_is_the_serialisers(case)
    test_pickle_round_trip(case)
    for i, check in enumerate((test_write_back_gives_the_same_bytes, test_a_damaged_arrays_file_is_refused)):
        (tmp_path / f"c{i}").mkdir()
        check(case, tmp_path / f"c{i}")
    for kind in ARRAY_EDITS:
        (tmp_path / kind).mkdir()
        test_a_resealed_array_of_another_kind_is_refused_naming_it(case, tmp_path / kind, kind)
    # a content check of its own type runs on reading: a resealed mean that is not the values' is refused
    edited = _resealed(folder, tmp_path / "mean", lambda s, a: s.update(mean=s["mean"] + 1.0))
    with pytest.raises(ValueError, match="'mean' is not the mean of values"):
        experiments.load_run(edited, exp.name)
    with pytest.raises(pytest.fail.Exception, match="neither a committed run nor a tiny size"):
        _original(dataclasses.replace(exp, tiny=()), tmp_path_factory)
