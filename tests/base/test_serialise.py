"""The results serialiser (issue 35 §2) on a small result type that uses every declaration: the layout it
writes, the same result read back, and the errors naming what a folder lacks or holds too much of."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np
import pytest

from attention_paths.base.invariants import InvariantError, accuracy, order_parameter, sorted_by
from attention_paths.base.serialise import FolderError, Stored, from_folder, to_folder


@dataclass(kw_only=True)
class Part:
    N: int
    mean: np.ndarray
    per_set: dict[str, dict]
    kind: str | None = None
    STORED = {"per_set": Stored(flatten=True), "kind": Stored(none="omit")}


@dataclass(kw_only=True)
class Result:
    scale: str
    widths: np.ndarray
    U: np.ndarray
    F: dict[str, np.ndarray]
    parts: dict[int, Part]
    notes: dict  # untyped: its arrays are written as lists
    first_U: np.ndarray | None = None
    extra: dict | None = None
    live: object = field(default=None, repr=False)
    EXPERIMENT = "demo"
    STORED = {
        "widths": Stored(to="json", key="N"),
        "parts": Stored(array="run", item="N{}"),
        "first_U": Stored(to="derived", derive=lambda ctx: ctx.root["U"][0]),
        "extra": Stored(none="omit"),
        "live": Stored(to="live"),
    }


def _result():
    return Result(
        scale="quick",
        widths=np.array([10.0, 30.0]),
        U=np.arange(8.0).reshape(2, 2, 2),
        F={"test": np.ones((3, 4)), "MNIST": np.zeros((2, 4))},
        parts={10: Part(N=10, mean=np.array([0.5, -0.5]), per_set={"test": {"acc": 80.0}})},
        notes={"iterations": np.array([3, 4])},
        live="not stored",
    )


def test_the_layout_written():
    summary, arrays = to_folder(_result())
    assert summary == {
        "experiment": "demo",
        "scale": "quick",
        "N": [10.0, 30.0],
        "parts": {"10": {"N": 10, "test": {"acc": 80.0}}},
        "notes": {"iterations": [3, 4]},
    }
    assert list(arrays) == ["U", "F_test", "F_MNIST", "run_N10_mean"]
    json.dumps(summary)  # plain JSON


def test_the_same_result_read_back():
    res = _result()
    back = from_folder(Result, *to_folder(res))
    np.testing.assert_array_equal(back.widths, res.widths)
    np.testing.assert_array_equal(back.U, res.U)
    assert list(back.F) == ["test", "MNIST"] and back.F["test"].shape == (3, 4)
    assert list(back.parts) == [10] and back.parts[10].per_set == {"test": {"acc": 80.0}}
    np.testing.assert_array_equal(back.parts[10].mean, [0.5, -0.5])
    assert back.parts[10].kind is None and back.extra is None and back.live is None
    np.testing.assert_array_equal(back.first_U, res.U[0])  # derived on reading
    assert back.notes == {"iterations": [3, 4]}
    assert to_folder(back)[0] == to_folder(res)[0]  # and written back the same


def test_summary_order_orders_the_top_level_keys_and_not_the_arrays():
    @dataclass(kw_only=True)
    class Ordered(Result):
        SUMMARY_ORDER = ("notes", "N", "scale")  # "N": the stored key of widths

    res = _result()
    plain, plain_arrays = to_folder(res)
    summary, arrays = to_folder(Ordered(**{f: getattr(res, f) for f in res.__dataclass_fields__}))
    assert list(summary)[:4] == ["experiment", "notes", "N", "scale"]
    assert list(summary)[4:] == [k for k in plain if k not in ("experiment", "notes", "N", "scale")]
    assert summary == plain and list(arrays) == list(plain_arrays)  # the same content, arrays in field order


def test_a_folder_that_does_not_hold_its_fields_is_refused():
    summary, arrays = to_folder(_result())
    with pytest.raises(FolderError, match=r"run/summary.json: field 'scale' is missing"):
        from_folder(Result, {k: v for k, v in summary.items() if k != "scale"}, arrays, "run")
    with pytest.raises(FolderError, match=r"field 'Result' holds entries Result does not declare: \['colour'\]"):
        from_folder(Result, summary | {"colour": "red"}, arrays)
    with pytest.raises(FolderError, match=r"arrays\.npz holds arrays no field of Result declares: \['stray'\]"):
        from_folder(Result, summary, arrays | {"stray": np.zeros(1)})
    with pytest.raises(FolderError, match=r"field 'U' is missing"):
        from_folder(Result, summary, {k: v for k, v in arrays.items() if k != "U"})
    with pytest.raises(FolderError, match="is not a demo run"):
        from_folder(Result, summary | {"experiment": "other"}, arrays)
    with pytest.raises(FolderError, match=r"field 'first_U' cannot be derived from what is stored \(IndexError"):
        from_folder(Result, summary, arrays | {"U": np.zeros(0)})
    bad = json.loads(json.dumps(summary))
    bad["parts"] = {"ten": bad["parts"]["10"]}
    with pytest.raises(FolderError, match=r"field 'parts' has the key 'ten', not an integer"):
        from_folder(Result, bad, {**arrays, "run_Nten_mean": arrays["run_N10_mean"]})


def test_the_invariant_checks_name_the_field_and_the_problem():
    with pytest.raises(InvariantError, match=r"^run: field 'acc\[test\]' = 100.5 is not an accuracy in \[0, 100\] %"):
        accuracy("run", "acc[test]", [99.0, 100.5])
    U = np.array([[1.0, 2.0], [2.0, 1.0]])  # eigenvalues 3 and -1
    with pytest.raises(InvariantError, match=r"'U' is not positive semi-definite \(smallest eigenvalue -1\)"):
        order_parameter("run", "U", U, 2)
    with pytest.raises(InvariantError, match=r"'U' has shape \(2, 2\), expected \(3, 3\)"):
        order_parameter("run", "U", U, 3)
    order_parameter("run", "U", np.eye(2) * 1e6 + 1e-3 * np.array([[0, 1], [1, 0]]), 2)  # scale-relative tolerance
    with pytest.raises(InvariantError, match=r"'order' = \['b', 'a'\] is not sorted by ascending score"):
        sorted_by("run", "order", ["b", "a"], {"a": 0.1, "b": 0.9})


@dataclass(kw_only=True)
class Run:
    kind: str
    U_hat: np.ndarray


@dataclass(kw_only=True)
class Row:
    N: int
    runs: dict[str, Run]
    STORED = {"runs": Stored(flatten=True)}


@dataclass(kw_only=True)
class Sweep:
    settings: object
    rows: list[Row]
    STORED = {"rows": Stored(key="per_width", indexed=True), "settings": Stored(to="json", load=tuple)}


def test_an_indexed_list_keeps_its_items_arrays_in_the_arrays_and_load_rebuilds_a_value():
    """``indexed``: a list of records whose arrays go to arrays.npz under the item's index; a flattened dict's
    arrays are keyed by its parent's path and the entry's key; ``load`` rebuilds what the hints cannot."""
    res = Sweep(settings=(1, 2), rows=[Row(N=n, runs={"rb": Run(kind="rb", U_hat=np.eye(2) * n)}) for n in (10, 20)])
    summary, arrays = to_folder(res)
    assert summary == {
        "settings": [1, 2],
        "per_width": [{"N": 10, "rb": {"kind": "rb"}}, {"N": 20, "rb": {"kind": "rb"}}],
    }
    assert sorted(arrays) == ["per_width_0_rb_U_hat", "per_width_1_rb_U_hat"]
    back = from_folder(Sweep, json.loads(json.dumps(summary)), arrays)
    assert back.settings == (1, 2) and [r.N for r in back.rows] == [10, 20]
    np.testing.assert_array_equal(back.rows[1].runs["rb"].U_hat, 20 * np.eye(2))
    with pytest.raises(FolderError, match="per_width.1.rb.U_hat' is missing"):
        from_folder(Sweep, summary, {k: v for k, v in arrays.items() if k != "per_width_1_rb_U_hat"})
