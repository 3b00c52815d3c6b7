"""One-shot Omniglot: split rule, preprocessing, episodes, tokens, the in-context transformer and training.

Tests that read the real datasets use ``$ATTENTION_PATHS_DATA`` (prepared by ``.ci/run``) and the split lists
under ``$SHARED_DATA`` (default ``../shared/data``); they are skipped, with the reason, where those are absent.
"""

import csv
import io
import json
import os
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

import attention_paths as ap
from attention_paths.tasks.omniglot import checkpoints, episodes, recipe
from attention_paths.tasks.omniglot import data as om
from attention_paths.tasks.omniglot import model as ic

ROOT = Path(__file__).resolve().parents[3]
SHARED = Path(os.environ.get("SHARED_DATA", ROOT.parent / "shared" / "data"))


def _tree_or_skip():
    try:
        return om.omniglot_tree(download=False)
    except om.DatasetMissingError:
        pytest.skip("no Omniglot tree under $ATTENTION_PATHS_DATA (run .ci/run or materialize_omniglot.py)")


# ------------------------------------------------------------------------------------------ split
def test_split_rule_reproduces_the_standard_lists():
    index = SHARED / "omniglot" / "omniglot_index.csv"
    if not index.exists():
        pytest.skip(f"{index} not found (set SHARED_DATA)")
    with open(index, newline="") as f:
        chars = [(r["set"], r["alphabet"], r["character"]) for r in csv.DictReader(f)]
    assert len(chars) == 1623
    split = om.split_characters(chars)
    assert {k: len(v) for k, v in split.items()} == om.SPLIT_SIZES
    for name in ("train", "val", "test"):
        ref = json.loads((SHARED / "omniglot" / "vinyals_split" / f"{name}.json").read_text())
        expected = {(s, a, c) for s, alphabets in ref.items() for a, cs in alphabets.items() for c in cs}
        assert set(split[name]) == expected, name


def test_split_rule_edge_cases():
    assert om.split_of("evaluation", "Gurmukhi", "character41") == "train"
    assert om.split_of("evaluation", "Gurmukhi", "character42") == "test"
    assert om.split_of("background", "Hebrew", "character01") == "val"
    assert om.split_of("evaluation", "Angelic", "character01") == "train"
    with pytest.raises(ValueError, match="set"):
        om.split_of("images", "Latin", "character01")


def test_tree_listing_matches_the_split_sizes():
    tree = _tree_or_skip()
    chars = om.list_characters(tree)
    assert len(chars) == 1623
    assert {k: len(v) for k, v in om.split_characters(chars).items()} == om.SPLIT_SIZES


# ------------------------------------------------------------------------------------------ preprocessing
def _png(array_bool):
    buf = io.BytesIO()
    Image.fromarray(array_bool).convert("1").save(buf, format="PNG")
    return buf.getvalue()


def test_preprocessing_against_hand_computed_values():
    blank = np.ones((105, 105), dtype=bool)  # True = white background
    assert np.all(om.preprocess_omniglot_png(_png(blank)) == 0)  # inverted: background -> 0
    assert np.all(om.preprocess_omniglot_png(_png(~blank)) == 255)  # all ink -> 255
    half = blank.copy()
    half[:, :52] = False  # ink on the left half (columns 0..51 of 105)
    img = om.preprocess_omniglot_png(_png(half))
    assert img.shape == (32, 32) and img.dtype == np.uint8
    assert np.all(img[:, :15] == 255) and np.all(img[:, 17:] == 0)  # 52/105*32 = 15.8: one mixed column
    x = om.omniglot_to_float(img)
    assert x.shape == (3, 32, 32)
    np.testing.assert_allclose(x[:, 0, 0], (1 - 0.922) / 0.084, rtol=1e-6)
    np.testing.assert_allclose(x[:, 0, 31], (0 - 0.922) / 0.084, rtol=1e-6)


def test_split_cache_is_reused_and_rebuilt_when_damaged(tmp_path):
    _tree_or_skip()
    a = om.load_split("val", cache_dir=tmp_path)
    assert a.images.shape == (172, 20, 32, 32) and a.images.dtype == np.uint8
    cache = tmp_path / "omniglot32_val.npz"
    stamp = cache.stat().st_mtime_ns
    b = om.load_split("val", cache_dir=tmp_path)
    assert cache.stat().st_mtime_ns == stamp and b.checksum == a.checksum
    np.testing.assert_array_equal(a.images, b.images)
    cache.write_bytes(b"damaged")
    c = om.load_split("val", cache_dir=tmp_path)
    np.testing.assert_array_equal(a.images, c.images)
    assert not list(tmp_path.glob(".*.tmp"))  # no half-written files left behind
    # issue 24, group 5: one blank image written into the cache, its checksum field kept: rebuilt, not used
    with np.load(cache) as f:
        fields = {k: f[k] for k in f.files}
    fields["images"] = fields["images"].copy()
    fields["images"][3, 7] = 0
    np.savez(cache, **fields)
    d = om.load_split("val", cache_dir=tmp_path)
    np.testing.assert_array_equal(a.images, d.images)
    with np.load(cache) as f:
        np.testing.assert_array_equal(f["images"], a.images)  # and the cache itself is mended


def test_missing_datasets_name_the_variable(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTENTION_PATHS_DATA", str(tmp_path))
    with pytest.raises(om.DatasetMissingError, match="ATTENTION_PATHS_DATA"):
        om.omniglot_tree(download=False)
    with pytest.raises(om.DatasetMissingError, match="ATTENTION_PATHS_DATA"):
        om.load_ood("MNIST", download=False)
    with pytest.raises(ValueError, match="split"):
        om.load_split("holdout")


def _raw_or_skip(name):
    src = SHARED / name / "raw"
    if not (src / "t10k-labels-idx1-ubyte.gz").exists():
        pytest.skip(f"no offline {name} files under {src} (set SHARED_DATA)")
    return src


@pytest.mark.parametrize("name", ["MNIST", "FashionMNIST"])
def test_ood_raw_files_offline_layout_md5_and_damage(tmp_path, monkeypatch, name):
    """The README's offline layout (the four .gz files) loads with ATTENTION_PATHS_OFFLINE=1; a damaged or
    truncated file is reported as damaged, by name, not as missing."""
    import shutil

    src = _raw_or_skip(name)
    raw = tmp_path / name / "raw"
    raw.mkdir(parents=True)
    for f in src.glob("*.gz"):
        shutil.copy(f, raw / f.name)
    monkeypatch.setenv("ATTENTION_PATHS_OFFLINE", "1")
    ood = om.load_ood(name, root=tmp_path)  # unpacked offline after the MD5 check
    n0, n1 = {"MNIST": (980, 1135), "FashionMNIST": (1000, 1000)}[name]
    assert len(ood["test"]) == n0 + n1 and int((ood["test_labels"] == 0).sum()) == n0
    assert (raw / "t10k-labels-idx1-ubyte").exists()
    # an altered label file: MD5 mismatch, named
    labels = raw / "t10k-labels-idx1-ubyte.gz"
    good = labels.read_bytes()
    labels.write_bytes(good[:-9] + bytes(9))
    with pytest.raises(om.DatasetDamagedError, match="t10k-labels-idx1-ubyte.gz.*MD5"):
        om.load_ood(name, root=tmp_path)
    # a truncated unpacked file without its .gz: damaged, named
    labels.unlink()
    idx = raw / "t10k-labels-idx1-ubyte"
    idx.write_bytes(idx.read_bytes()[:-100])
    with pytest.raises(om.DatasetDamagedError, match="t10k-labels-idx1-ubyte is damaged"):
        om.load_ood(name, root=tmp_path)
    # the .gz back: the truncated IDX file is replaced by a fresh unpack
    labels.write_bytes(good)
    assert len(om.load_ood(name, root=tmp_path)["test"]) == n0 + n1
    # issue 24, group 5: a same-size edit of the unpacked label file (every label set to 1) is not read: the
    # IDX file is rewritten from its verified .gz
    data = bytearray(idx.read_bytes())
    data[8:] = bytes([1]) * (len(data) - 8)
    idx.write_bytes(bytes(data))
    again = om.load_ood(name, root=tmp_path)
    assert len(again["test"]) == n0 + n1 and int((again["test_labels"] == 0).sum()) == n0


def test_damaged_omniglot_png_is_named(tmp_path):
    import shutil

    tree = _tree_or_skip()
    chars = om.split_characters(om.list_characters(tree))["val"]
    for s_name, alphabet, _ in {(c[0], c[1], None) for c in chars}:
        shutil.copytree(tree / f"images_{s_name}" / alphabet, tmp_path / "omniglot-py" / f"images_{s_name}" / alphabet)
    first_eval = sorted((tree / "images_evaluation").iterdir())[0]  # the tree needs both halves
    shutil.copytree(first_eval, tmp_path / "omniglot-py" / "images_evaluation" / first_eval.name)
    png = sorted((tmp_path / "omniglot-py" / "images_background").rglob("*.png"))[0]
    png.write_bytes(b"\x89PNG not really")
    with pytest.raises(om.DatasetDamagedError, match=png.name):
        om.load_split("val", root=tmp_path, download=False, cache_dir=tmp_path / "cache")


# ------------------------------------------------------------------------------------------ episodes, tokens
def _coded_images(C=6, D=20):
    """uint8 images whose pixel (0, 0) encodes the class and (0, 1) the drawing."""
    imgs = np.zeros((C, D, 32, 32), dtype=np.uint8)
    imgs[:, :, 0, 0] = np.arange(C)[:, None]
    imgs[:, :, 0, 1] = np.arange(D)[None, :]
    return imgs


def test_episodes_labels_targets_and_query():
    imgs = _coded_images()
    ep = episodes.sample_episodes(imgs, 500, np.random.default_rng(1), to_float=lambda a: a.astype(np.float32))
    cls = ep.images[:, :, 0, 0].astype(int)  # [n, 3] class of support, support, query
    drw = ep.images[:, :, 0, 1].astype(int)
    assert np.all(ep.labels[:, 2] == 2) and np.all(np.sort(ep.labels[:, :2], axis=1) == [0, 1])
    assert np.all(cls[:, 0] != cls[:, 1])
    for i in range(len(ep)):
        j = list(cls[i, :2]).index(cls[i, 2])  # the query is one of the two support classes ...
        assert drw[i, 2] != drw[i, j]  # ... in a different drawing
        assert ep.y[i] == (1.0 if ep.labels[i, j] == 1 else -1.0)
        assert ep.classes[i, ep.labels[i, j]] == cls[i, 2] == ep.query_class[i]
    assert 0.4 < np.mean(ep.y > 0) < 0.6 and 0.4 < np.mean(ep.labels[:, 0]) < 0.6


def test_fixed_drawings_per_ordered_pair():
    imgs = _coded_images(C=3)
    ep = episodes.sample_episodes(imgs, 400, np.random.default_rng(0), to_float=lambda a: a.astype(np.float32))
    seen = {}
    for i in range(len(ep)):
        for k in range(2):
            key = (int(ep.images[i, k, 0, 0]), tuple(sorted(ep.images[i, :2, 0, 0].astype(int))))
            seen.setdefault(key, set()).add(int(ep.images[i, k, 0, 1]))
    # a class's support drawing within a given (unordered) pair takes at most its two ordered-pair values
    assert max(len(v) for v in seen.values()) <= 2


def test_ood_episode_order_and_targets():
    ood = {
        "train0": np.zeros((5, 3, 32, 32), np.float32),
        "train1": np.ones((5, 3, 32, 32), np.float32),
        "test": np.arange(5, dtype=np.float32)[:, None, None, None] * np.ones((5, 3, 32, 32), np.float32),
        "test_labels": np.array([0, 0, 0, 1, 1]),
    }
    ep = episodes.ood_episodes(ood)
    np.testing.assert_array_equal(ep.y, [-1, -1, -1, 1, 1])
    np.testing.assert_array_equal(ep.labels, [[0, 1, 2]] * 5)
    assert np.all(ep.images[:, 0] == 0) and np.all(ep.images[:, 1] == 1)
    np.testing.assert_array_equal(ep.images[:, 2, 0, 0, 0], np.arange(5))


def test_patch_order_layernorm_positions_and_label_rows():
    img = torch.arange(3 * 32 * 32, dtype=torch.float64).reshape(3, 32, 32)
    p = ic.patchify(img)
    assert p.shape == (16, 192)
    pr, pc, row, col, ch = 1, 2, 3, 4, 2  # patch (1, 2), pixel (3, 4), channel 2
    assert p[pr * 4 + pc, (row * 8 + col) * 3 + ch] == img[ch, pr * 8 + row, pc * 8 + col]
    pe = ic.sinusoidal_positions().numpy()
    assert pe.shape == (48, 192) and abs(pe.mean()) < 1e-12 and pe.std(ddof=1) == pytest.approx(1.0, abs=1e-5)
    net = ic.InContextTransformer(d_model=16, d_qk=8).double()
    rng = np.random.default_rng(0)
    images = rng.standard_normal((2, 3, 3, 32, 32))
    labels = np.array([[0, 1, 2], [1, 0, 2]])
    x0 = net.tokens((images, labels))
    assert x0.shape == (2, 48, 192)
    ln = x0 - net.positions.double() - net.label_embedding.double()[labels].repeat_interleave(16, dim=1)
    np.testing.assert_allclose(ln.mean(-1).numpy(), 0.0, atol=1e-12)
    np.testing.assert_allclose(ln.var(-1, unbiased=False).numpy(), 1.0, rtol=1e-3)
    blank = net.tokens((np.zeros((1, 3, 3, 32, 32)), labels[:1])) - net.positions.double()
    np.testing.assert_allclose(blank[0, :16], net.label_embedding.double()[0].expand(16, -1))  # zero patch -> 0


# ------------------------------------------------------------------------------------------ network
def _net_and_x0(d_model=24, seed=0):
    net = ic.InContextTransformer(d_model=d_model, d_qk=8, seed=seed).double()
    rng = np.random.default_rng(seed)
    images = rng.standard_normal((7, 3, 3, 32, 32))
    labels = np.tile([0, 1, 2], (7, 1))
    return net, net.tokens((images, labels))


def test_path_decomposition_agrees_with_forward():
    net, x0 = _net_and_x0()
    with torch.no_grad():
        xi = ap.path_inputs(x0.transpose(1, 2), net.theory_layers(), np.full(48, 1 / 48))  # [B, 16, 192]
        f_paths = torch.einsum("pd,di,bpi->b", net.path_weights(), net.w_in.weight, xi)
        np.testing.assert_allclose(f_paths.numpy(), net(x0).numpy(), rtol=1e-10, atol=1e-12)
        # the theory's attention equals the network's
        omega = net.theory_layers()[1].attention(x0.transpose(1, 2))
        np.testing.assert_allclose(omega.numpy(), net.attention(x0, 1).numpy(), atol=1e-12)


@pytest.mark.parametrize(
    "arch, pruned",
    [
        ((2, 4, 160), []),  # G = 160: scores through the bilinear forms Q^T K
        ((2, 4, 16), [(0, 2)]),  # G = 16: scores through the query/key projections
        ((2, 4, 16), [(0, 1), (1, 0), (1, 3)]),
        ((2, 8, 16), [(1, 5)]),  # the 2 x 8 architecture (64 paths)
        ((3, 3, 128), [(2, 1)]),  # the 3 x 3 architecture (27 paths, three nested layers)
    ],
)
def test_path_factorised_forward_is_the_layerwise_function(arch, pruned):
    """Outputs and every parameter's gradient of the training forward equal the layer-wise reference: to
    1e-12 in float64; in float32 to float32 rounding (both forwards as far from the float64 values as each
    other), with and without pruned heads, in both forms of the scores and on the three architectures."""
    torch.manual_seed(3)
    n_layers, n_heads, d_qk = arch
    net = ic.InContextTransformer(d_model=48, n_layers=n_layers, n_heads=n_heads, d_qk=d_qk, seed=1)
    for p in net.parameters():  # weights large enough that some attention rows are nearly one-hot
        p.data.normal_(0, 0.1)
    images = np.random.default_rng(2).standard_normal((9, 3, 3, 32, 32))
    y = torch.randn(9, dtype=torch.float64)
    net.set_pruned(pruned)
    names = [n for n, _ in net.named_parameters()]

    def run(dtype, layerwise):
        net.to(dtype)
        x0 = net.tokens((images, np.tile([0, 1, 2], (9, 1))))
        f = (net.forward if layerwise else net.path_forward)(x0)
        grads = torch.autograd.grad(torch.mean((f - y.to(dtype)) ** 2), list(net.parameters()))
        return [f.detach().double()] + [g.double() for g in grads]

    ref, fast = run(torch.float64, True), run(torch.float64, False)
    ref32, fast32 = run(torch.float32, True), run(torch.float32, False)
    for name, a, b, a32, b32 in zip(["output"] + names, ref, fast, ref32, fast32, strict=True):
        scale = a.abs().max()
        assert scale > 0, name  # every learned matrix gets a gradient
        assert (a - b).abs().max() <= 1e-12 * scale, name
        err_ref, err_fast = (a32 - a).abs().max() / scale, (b32 - a).abs().max() / scale
        assert err_fast <= 3 * err_ref + 1e-6 and (a32 - b32).abs().max() <= 2e-5 * scale, (name, err_ref, err_fast)
    for layer, head in pruned:  # a pruned head's value map gets no gradient through either forward
        D = net.d_model
        assert torch.count_nonzero(fast[1 + names.index(f"v.{layer}.weight")][head * D : (head + 1) * D]) == 0
    net.set_pruned([(1, h) for h in range(n_heads)])
    with pytest.raises(ValueError, match="all heads of layer 2"):
        net.path_forward(net.tokens((images, np.tile([0, 1, 2], (9, 1)))))


def test_pruning_zeroes_a_head_and_rescales_the_sum():
    net, x0 = _net_and_x0()
    with torch.no_grad():
        full = net(x0)
        net.set_pruned([(0, 2)])
        pruned = net(x0)
        # by hand: layer 1 without head 2, scaled 1/sqrt(3); layer 2 unchanged (1/sqrt(4))
        z = net.w_in(x0)
        B, T, D = z.shape
        om1 = net.attention(x0, 0)
        v1 = net.v[0](z).reshape(B, T, 4, D)
        keep = [0, 1, 3]
        z1 = torch.einsum("bhst,bshd->btd", om1[:, keep], v1[:, :, keep]) / np.sqrt(3)
        v2 = net.v[1](z1).reshape(B, T, 4, D)
        z2 = torch.einsum("bhst,bshd->btd", net.attention(x0, 1), v2) / 2.0
        np.testing.assert_allclose(pruned.numpy(), net.readout(z2.mean(1)).squeeze(-1).numpy(), rtol=1e-10)
        assert not torch.allclose(full, pruned)
        net.set_pruned([])
        np.testing.assert_allclose(net(x0).numpy(), full.numpy(), rtol=1e-12)
    with pytest.raises(ValueError, match="no head"):
        net.set_pruned([(2, 0)])
    net.set_pruned([(0, h) for h in range(4)])
    with pytest.raises(ValueError, match="all heads"):
        net(x0)


def test_query_attention_shares_follow_the_labels():
    net, _ = _net_and_x0()
    rng = np.random.default_rng(4)
    images = rng.standard_normal((6, 3, 3, 32, 32)).astype(np.float32)
    labels = np.array([[0, 1, 2], [1, 0, 2]] * 3)
    ep = episodes.Episodes(images, labels, np.ones(6, np.float32), np.zeros((6, 2), np.int64), np.zeros(6, np.int64))
    share = ic.query_attention_by_block(net.float(), ep, batch=4)
    assert share.shape == (2, 4, 3)
    np.testing.assert_allclose(share.sum(-1), 1.0, atol=1e-6)
    # by hand for layer 1, head 1: blocks in sequence order, then mapped by the support labels
    with torch.no_grad():
        om = net.attention(net.tokens((images, labels)), 0)[:, 0, :, 32:]  # [B, s, query tokens]
    blocks = om.reshape(6, 3, 16, 16).sum(2).mean(-1).numpy()  # [B, block]
    to0 = np.where(labels[:, 0] == 0, blocks[:, 0], blocks[:, 1])
    assert share[0, 0, 0] == pytest.approx(to0.mean(), abs=1e-6)


def test_short_training_run_lowers_the_loss(tmp_path):
    _tree_or_skip()
    from attention_paths.tasks.omniglot import training as tr

    cfg = recipe.TrainConfig(
        d_model=64, d_qk=16, steps=60, eval_every=30, val_episodes=256, test_episodes=256, ood_episodes=100
    )
    summary = tr.train(cfg, tmp_path, progress=False)
    h = summary["history"]
    assert summary["finished"] and [r["step"] for r in h] == [30, 60]
    assert h[-1]["train_loss"] < h[0]["train_loss"] < 2.0
    net, rec = checkpoints.load_trained(tmp_path / "last.pt")
    assert rec["step"] == 60 and summary["checkpoint_sha256"]["last.pt"] == checkpoints.checkpoint_sha256(
        tmp_path / "last.pt"
    )
    with pytest.raises(ValueError, match="other settings"):
        tr.train(recipe.TrainConfig(d_model=32, d_qk=16, steps=60, eval_every=30), tmp_path, progress=False)
    exported = checkpoints.export_checkpoint(tmp_path, tmp_path / "data" / "omniglot-quick")
    # a small network exported under the quick network's name is not the quick network (issue 24)
    with pytest.raises(ValueError, match="named network 'quick'.*another configuration"):
        tr.load_network("quick", train_if_missing=False, data_dir=tmp_path / "data")
    net2, rec2 = checkpoints.load_trained(tmp_path / "data" / "omniglot-quick" / "model.pt")
    assert (
        checkpoints.checkpoint_sha256(tmp_path / "data" / "omniglot-quick" / "model.pt")
        == exported["exported"]["sha256"]
    )
    assert rec2["step"] == 60 and exported["steps_done"] == 60
    for p1, p2 in zip(net.parameters(), net2.parameters(), strict=True):
        assert torch.equal(p1, p2)
    with open(tmp_path / "data" / "omniglot-quick" / "model.pt", "ab") as fh:
        fh.write(b"tampered")
    with pytest.raises(ValueError, match="SHA-256"):
        tr.load_network("quick", train_if_missing=False, data_dir=tmp_path / "data")
    (tmp_path / "bad.pt").write_bytes(b"junk")
    with pytest.raises(ValueError, match="corrupted"):
        checkpoints.load_trained(tmp_path / "bad.pt")
    # a same-size damaged checkpoint (a weight set to 1e37 by hand) is refused by its digest, by name
    ck = torch.load(tmp_path / "last.pt", weights_only=False)
    assert "digest" in ck
    ck["model"]["w_in.weight"][0, 0] = 1e37
    torch.save(ck, tmp_path / "tampered.pt")
    with pytest.raises(ValueError, match="tampered.pt is damaged"):
        checkpoints.load_trained(tmp_path / "tampered.pt")
    # resume names a bad last.pt instead of torch's or a KeyError
    del ck["optimizer"]
    ck.pop("digest")
    torch.save(ck, tmp_path / "last.pt")
    with pytest.raises(ValueError, match=r"last.pt is incomplete.*optimizer"):
        tr.train(cfg, tmp_path, progress=False)
    (tmp_path / "last.pt").write_bytes(b"\x00" * 100)
    with pytest.raises(ValueError, match="last.pt is corrupted"):
        tr.train(cfg, tmp_path, progress=False)


@pytest.mark.parametrize("name, steps", [("quick", 4000), ("paper", 41_240)])
def test_committed_networks_load_with_their_records(name, steps):
    """The committed checkpoints: the SHA-256 of their record, the recipe's settings, the finished step count."""
    from attention_paths.tasks.omniglot import training as tr

    net, rec = tr.load_network(name, train_if_missing=False)
    assert rec["sha256"] == checkpoints.checkpoint_sha256(ROOT / "data" / f"omniglot-{name}" / "model.pt")
    assert rec["steps_done"] == steps and rec["finished"] and rec["history"][-1]["step"] == steps
    cfg = recipe.TrainConfig(**rec["config"])
    assert cfg == recipe.config_for(name) and cfg.seed == 42 and cfg.batch == 128 and cfg.lr == 3e-4
    assert sum(p.numel() for p in net.parameters()) == 512 * 192 + 2 * (2 * 4 * 128 * 192 + 4 * 512 * 512) + 512
    assert (ROOT / "data" / f"omniglot-{name}" / "model.pt").stat().st_size < 20 * 2**20
