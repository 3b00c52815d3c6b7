"""Head scores (spec T§16.4), kernel forms and alignment."""

import itertools

import numpy as np
import pytest
import torch
from helpers import random_instance, random_spd

import attention_paths as ap
from attention_paths.theory.predictor import class_block_contrast


def test_identity_gives_equal_scores_within_a_layer():
    for heads in [(2, 2), (4, 4), (3, 2)]:
        scores = ap.head_scores(np.eye(int(np.prod(heads))), heads)
        for s in scores:
            np.testing.assert_allclose(s, s[0])
        assert max(s.max() for s in scores) == pytest.approx(1.0)


def test_single_diagonal_entry_scores_only_heads_on_that_path():
    heads = (3, 2)
    path = (2, 1)
    U = np.zeros((6, 6))
    k = ap.path_index(path, heads)
    U[k, k] = 2.5
    scores = ap.head_scores(U, heads)
    for l, s in enumerate(scores):
        for h in range(heads[l]):
            assert (s[h] > 0) == (h == path[l])
    assert scores[0][2] == pytest.approx(1.0)


def test_inclusion_exclusion_equals_brute_force():
    heads = (3, 2)
    rng = np.random.default_rng(0)
    U = rng.standard_normal((6, 6))
    U = U + U.T
    raw = ap.head_scores(U, heads, normalize=False)
    paths = ap.path_list(heads)
    for l, H in enumerate(heads):
        for h in range(H):
            brute = sum(
                abs(U[i, j]) for i, j in itertools.product(range(6), range(6)) if paths[i][l] == h or paths[j][l] == h
            )
            assert raw[l][h] == pytest.approx(brute, rel=1e-13)
    norm = ap.head_scores(U, heads)
    assert max(s.max() for s in norm) == pytest.approx(1.0)
    assert ap.head_labels(heads) == ["(1)1", "(1)2", "(1)3", "(2)1", "(2)2"]


def test_silencing_zeros_rows_and_columns_of_paths_through_the_head():
    heads = (2, 2)
    U = random_spd(4, np.random.default_rng(1))
    Us = ap.silence_heads(U, heads, [(0, 1)])  # paths (1,0), (1,1): indices 2, 3
    assert np.all(Us[2:] == 0) and np.all(Us[:, 2:] == 0)
    np.testing.assert_array_equal(Us[:2, :2], U[:2, :2])
    with pytest.raises(ValueError, match="no head"):
        ap.silence_heads(U, heads, [(2, 0)])


def test_gram_and_lowrank_kernels_agree():
    x, y, layers, r, feats = random_instance((2, 3), P=14, n0=50, seed=2)
    U = random_spd(6, np.random.default_rng(2))
    kg, kl = ap.PathKernel(feats, mode="gram"), ap.PathKernel(feats, mode="lowrank")
    np.testing.assert_allclose(kg.kernel(U), kl.kernel(U), rtol=1e-12, atol=1e-14)
    M = np.random.default_rng(3).standard_normal((14, 14))
    M = M + M.T
    np.testing.assert_allclose(kg.contract(M), kl.contract(M), rtol=1e-11, atol=1e-13)
    explicit = sum(U[a, b] * ap.path_kernel(feats, a, b) for a in range(6) for b in range(6))
    np.testing.assert_allclose(kg.kernel(U), explicit, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(kg.gram[1, 4], ap.path_kernel(feats, 1, 4), rtol=1e-13)
    with pytest.raises(ValueError, match="mode"):
        ap.PathKernel(feats, mode="dense")


def test_kernel_alignment_is_a_decomposition_of_the_labels():
    x, y, layers, r, feats = random_instance((2, 2), P=20, n0=9, seed=4)
    K = ap.gp_kernel(feats)
    ov = ap.kernel_alignment(K, y)
    assert ov.shape == (20,)
    assert np.sum(ov**2) == pytest.approx(np.sum(y**2) / 20, rel=1e-12)
    # a kernel built from the labels themselves puts all label weight on its first eigenvector
    ov_perfect = ap.kernel_alignment(np.outer(y, y) + 1e-3 * np.eye(20), y, k=3)
    assert ov_perfect[0] == pytest.approx(1.0) and ov_perfect[1] < 1e-8


def test_accuracy_counts_zero_as_wrong():
    assert ap.accuracy(np.array([0.5, -0.1, 0.0]), np.array([1.0, -1.0, 1.0])) == pytest.approx(200 / 3)
    with pytest.raises(ValueError):
        ap.accuracy(np.zeros(3), np.zeros(4))


def test_kernel_target_alignment_bounds_and_tile_average():
    from attention_paths.plotting import tile_average

    y = np.array([1.0, 1.0, -1.0, -1.0])
    assert ap.kernel_target_alignment(np.outer(y, y), y) == pytest.approx(1.0)
    assert ap.kernel_target_alignment(-np.outer(y, y), y) == pytest.approx(-1.0)
    assert ap.kernel_target_alignment(np.eye(4), y) == pytest.approx(0.5)
    K = np.arange(16.0).reshape(4, 4)
    T = tile_average(K, 2)
    assert T[0, 0] == pytest.approx((1 + 4) / 2) and T[0, 1] == pytest.approx((2 + 3 + 6 + 7) / 4)


def test_class_block_contrast():
    y = np.array([1, 1, 1, -1, -1, -1])
    K = np.outer(y, y) + np.eye(6)  # perfect blocks: within +1, between -1, std of off-diagonal entries 1
    assert class_block_contrast(K, y) == pytest.approx(2.0 / np.std(K[~np.eye(6, dtype=bool)]))
    assert class_block_contrast(-K, y) == pytest.approx(-class_block_contrast(K, y))
    rng = np.random.default_rng(0)
    Z = rng.standard_normal((400, 3))
    yr = np.where(rng.random(400) > 0.5, 1, -1)
    assert abs(class_block_contrast(Z @ Z.T, yr)) < 0.1  # label-independent kernel: no blocks
    with pytest.raises(ValueError, match="two classes"):
        class_block_contrast(np.eye(3), np.ones(3))


def test_torch_device_path_equals_numpy_and_solves_the_same(monkeypatch):
    """The torch path of the low-rank kernel (a GPU when there is one) is the numpy one, in float64."""
    x, y, layers, r, feats = random_instance((2, 2), P=30, n0=20, seed=4)
    U = random_spd(4, np.random.default_rng(4))
    M = np.random.default_rng(5).standard_normal((30, 30))
    M = M + M.T
    ref = ap.PathKernel(feats, mode="lowrank")
    tk = ap.PathKernel(feats, mode="lowrank", device="cpu")  # torch on the CPU: same code as on a GPU
    assert ref.device is None and str(tk.device) == "cpu"
    np.testing.assert_allclose(tk.kernel(U), ref.kernel(U), rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(tk.contract(M), ref.contract(M), rtol=1e-12, atol=1e-13)
    assert tk.kernel(U).dtype == np.float64
    arch = ap.Architecture.uniform((2, 2), 20)
    a, b = ap.solve(ap.Action(ref, y, 0.2, arch)), ap.solve(ap.Action(tk, y, 0.2, arch))
    np.testing.assert_allclose(a.U, b.U, rtol=1e-8, atol=1e-10)
    monkeypatch.setenv("ATTENTION_PATHS_DEVICE", "cpu")
    assert str(ap.PathKernel(feats, mode="lowrank").device) == "cpu"
    assert ap.PathKernel(feats, mode="gram").device is None  # the Gram form stays in numpy
    with pytest.raises(ValueError, match="unknown device"):
        ap.PathKernel(feats, mode="lowrank", device="tpu-ish")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="no CUDA GPU"):
            ap.PathKernel(feats, mode="lowrank", device="cuda")
        assert ap.PathKernel(feats, mode="lowrank", device="auto").device is None  # falls back to numpy
