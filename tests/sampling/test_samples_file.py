"""Samples files (issue 37 §1): ``PosteriorSamples.save`` writes a format version and a digest, and
``load_samples`` refuses a damaged, edited or inconsistent file by name."""

import json
import warnings
import zipfile

import numpy as np
import pytest

sp = pytest.importorskip("attention_paths.sampling")
from attention_paths.sampling import samples as samples_mod  # noqa: E402

CHAINS, DRAWS, PATHS, M = 2, 30, 4, 7


def _samples(kind="rao-blackwell") -> "sp.PosteriorSamples":
    """A run of the shape a sampler writes: 2 chains x 30 draws, 4 paths, 7 test points (seeded values)."""
    rng = np.random.default_rng(5)
    W = rng.standard_normal((CHAINS, DRAWS, PATHS, 3))
    settings = {
        "sampler": {"num_warmup": 10, "num_samples": DRAWS, "num_chains": CHAINS, "seed": 0, "max_tree_depth": 5},
        "tau": 0.05,
        "arch": {"heads": [2, 2], "widths": [5.0, 5.0, 5.0], "sigma2": [1.0, 1.0, 1.0]},
        "P": 10,
        "M": M,
    }
    diag = {"divergences": 0, "rhat_U_max": 1.01, "rhat_outputs_max": float("nan")}
    mean, var = rng.standard_normal((CHAINS, DRAWS, M)), rng.random((CHAINS, DRAWS, M))
    return sp.PosteriorSamples(kind, settings, W @ W.swapaxes(-1, -2) / 3, mean, var, diag, 1.5)


def _rewrite(path, *, meta=None, reseal=True, **arrays):
    """Rewrite a samples file with some arrays or metadata replaced; ``reseal``: with a digest that matches (an
    edit made together with its digest, so that the content checks are what must refuse it)."""
    with np.load(path) as f:
        old = {k: f[k] for k in f.files}
    m = json.loads(bytes(old.pop("meta_json")).decode())
    m.update(meta or {})
    old.update(arrays)
    if reseal and "sha256" in m:
        m["sha256"] = samples_mod.content_digest(m, old)
    np.savez_compressed(path, meta_json=np.frombuffer(json.dumps(m).encode(), dtype=np.uint8), **old)


def test_a_saved_file_carries_its_format_and_digest_and_round_trips(tmp_path):
    smp = _samples()
    path = smp.save(tmp_path / "s.npz")
    with np.load(path) as f:
        meta = json.loads(bytes(f["meta_json"]).decode())
        arrays = {k: f[k] for k in f.files if k != "meta_json"}
    assert meta["format"] == sp.SAMPLES_FORMAT == 2
    assert meta["sha256"] == samples_mod.content_digest(meta, arrays) and len(meta["sha256"]) == 64
    back = sp.load_samples(path)
    for name in ("U", "mean_samples", "var_samples"):
        np.testing.assert_array_equal(getattr(back, name), getattr(smp, name))
    assert back.kind == "rao-blackwell" and back.settings == smp.settings and back.wall_seconds == 1.5
    assert back.diagnostics["divergences"] == 0 and np.isnan(back.diagnostics["rhat_outputs_max"])
    assert [p.name for p in tmp_path.iterdir()] == ["s.npz"]  # no temporary file left behind


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (dict(meta={"kind": "gibbs"}), r"kind 'gibbs', which is no known sampler \['full', 'rao-blackwell'\]"),
        ("cut U", r"U has shape \[2, 5, 4, 4\], but its settings .* say \[2, 30, 4, 4\]: cut or damaged"),
        ("cut means", r"mean_samples has shape \[2, 30, 6\], but .* say \[2, 30, 7\]"),
        ("nan U", r"U has 1 non-finite \(NaN or infinite\) entries"),
        ("nan mean", r"mean_samples has 2 non-finite"),
        ("negative var", r"var_samples has 1 negative variances"),
        (dict(meta={"format": 3}), r"has format 3, which this code does not know \(it reads formats 1 and 2\)"),
    ],
)
def test_a_file_edited_with_its_digest_is_refused_by_its_content(tmp_path, edit, message):
    path = _samples().save(tmp_path / "s.npz")
    with np.load(path) as f:
        U, mean, var = f["U"].copy(), f["mean_samples"].copy(), f["var_samples"].copy()
    edits = {
        "cut U": dict(U=U[:, :5]),
        "cut means": dict(mean_samples=mean[..., :6]),
        "nan U": dict(U=np.where(np.arange(U.size).reshape(U.shape) == 17, np.nan, U)),
        "nan mean": dict(
            mean_samples=np.where(np.isin(np.arange(mean.size).reshape(mean.shape), (3, 90)), np.nan, mean)
        ),
        "negative var": dict(var_samples=np.where(np.arange(var.size).reshape(var.shape) == 4, -0.5, var)),
    }
    _rewrite(path, **(edits[edit] if isinstance(edit, str) else edit))
    with pytest.raises(sp.SamplesFileError, match=message) as err:
        sp.load_samples(path)
    assert str(path) in str(err.value)


def test_an_edit_without_its_digest_and_a_format_2_file_without_one_are_refused(tmp_path):
    path = _samples().save(tmp_path / "s.npz")
    with np.load(path) as f:
        U = f["U"].copy()
    U[0, 0, 1, 1] += 1.0  # a plausible value: only the digest can tell
    _rewrite(path, reseal=False, U=U)
    with pytest.raises(sp.SamplesFileError, match="does not match its digest: the file was damaged or edited"):
        sp.load_samples(path)
    path2 = _samples().save(tmp_path / "t.npz")
    with np.load(path2) as f:
        meta = json.loads(bytes(f["meta_json"]).decode())
    del meta["sha256"]
    arrays = {"U": U, "mean_samples": np.zeros((CHAINS, DRAWS, M)), "var_samples": np.zeros((CHAINS, DRAWS, M))}
    np.savez(path2, meta_json=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8), **arrays)
    with pytest.raises(sp.SamplesFileError, match=r"t.npz \(format 2\) lacks its digest"):
        sp.load_samples(path2)


def test_every_damaged_byte_of_the_stored_content_is_refused(tmp_path):
    """A byte flipped anywhere in the stored (compressed) data of an array or of the metadata is refused (zip
    CRC, decompression or digest), with the file's name; never loaded as good."""
    path = _samples().save(tmp_path / "s.npz")
    good = path.read_bytes()
    positions = []
    with zipfile.ZipFile(path) as z:
        for info in z.infolist():  # each entry's data follows its local header (30 bytes, its name and extra field)
            name_len, extra_len = np.frombuffer(good[info.header_offset + 26 : info.header_offset + 30], "<u2")
            start = info.header_offset + 30 + int(name_len) + int(extra_len)
            positions += [start + k * info.compress_size // 4 for k in range(1, 4)]
    assert len(positions) == 12  # three bytes in each of U, mean_samples, var_samples and meta_json
    for pos in positions:
        bad = bytearray(good)
        bad[pos] ^= 0x5A
        path.write_bytes(bytes(bad))
        with pytest.raises(sp.SamplesFileError, match="s.npz") as err:
            sp.load_samples(path)
        assert "corrupted" in str(err.value) or "digest" in str(err.value), str(err.value)


def test_a_format_1_file_is_refused_unless_asked_for_and_then_loads_with_a_note(tmp_path):
    """The format written before issue 37 (``format: 1``, no digest; no such file is committed under data/) is
    refused by default (issue 52); with ``legacy=True`` it loads, with its content checked, and a note that
    damage cannot be detected."""
    smp = _samples("full")
    meta = {"kind": "full", "settings": smp.settings, "diagnostics": smp.diagnostics, "wall_seconds": 2.0, "format": 1}
    path = tmp_path / "old.npz"
    np.savez_compressed(
        path,
        U=smp.U,
        mean_samples=smp.mean_samples,
        var_samples=smp.var_samples,
        meta_json=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8),
    )
    with pytest.raises(sp.SamplesFileError, match=r"old.npz is in the old format 1.*load_samples\(path, legacy=True\)"):
        sp.load_samples(path)
    with pytest.warns(sp.LegacySamplesWarning, match=r"old.npz is in the old format 1, which has no digest"):
        back = sp.load_samples(path, legacy=True)
    np.testing.assert_array_equal(back.U, smp.U)
    assert back.kind == "full" and back.wall_seconds == 2.0
    _rewrite(path, U=smp.U[:, :5])  # the content checks apply to old files too
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sp.LegacySamplesWarning)
        with pytest.raises(sp.SamplesFileError, match=r"U has shape \[2, 5, 4, 4\]"):
            sp.load_samples(path, legacy=True)
        _rewrite(path, U=-smp.U)  # the U x -1: no order parameter of any weights
        with pytest.raises(sp.SamplesFileError, match=r"U has a draw with eigenvalue .* < 0"):
            sp.load_samples(path, legacy=True)


def test_a_resealed_file_whose_order_parameter_is_no_gram_matrix_is_refused(tmp_path):
    """Issue 52: U edited and the digest rewritten (as a forger or a careless script would) still fails the
    content checks: each draw's U is W W^T / N, symmetric and positive semi-definite."""
    smp = _samples("full")
    for edit, match in ((lambda U: -U, "eigenvalue"), (lambda U: U + np.triu(np.ones(U.shape[-2:]), 1), "symmetric")):
        path = smp.save(tmp_path / "bad.npz")
        _rewrite(path, U=edit(smp.U))  # resealed: the digest matches the edited numbers
        with pytest.raises(sp.SamplesFileError, match=match):
            sp.load_samples(path)


def test_missing_and_non_sampling_files_are_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.npz does not exist"):
        sp.load_samples(tmp_path / "missing.npz")
    (tmp_path / "x.npz").write_bytes(b"not a zip file")
    with pytest.raises(sp.SamplesFileError, match="x.npz is corrupted or not a sampling result"):
        sp.load_samples(tmp_path / "x.npz")
    np.savez(tmp_path / "y.npz", U=np.zeros(3))
    with pytest.raises(sp.SamplesFileError, match="y.npz is corrupted or not a sampling result"):
        sp.load_samples(tmp_path / "y.npz")
