"""The theory at three layers (27 paths, nested order parameters) against its oracles, and the memory-bounded
energy Hessian (issue 36 §2): blocked equals one block, and both equal the dense formula."""

import numpy as np
import pytest
import torch
from helpers import central_differences, random_instance, random_spd

import attention_paths as ap
from attention_paths.theory.action import DEFAULT_HESSIAN_BYTES


def _action(heads, P=15, n0=7, tau=0.3, seed=0, **kw):
    x, y, layers, r, feats = random_instance(heads, P=P, n0=n0, seed=seed)
    L = len(heads)
    widths = tuple(20 + 7 * l for l in range(L + 1))
    sigma2 = tuple(0.8 + 0.2 * l for l in range(L + 1))
    return ap.Action(ap.PathKernel(feats), y, tau, ap.Architecture(heads, widths, sigma2), **kw)


def _dense_energy_hessian(act, U1):
    """The energy Hessian in one piece, from the full ``Q = Xi_f^T A Xi_f`` (the formula before blocking)."""
    K = act.kernel.kernel(U1) + act.tau * np.eye(act.kernel.P)
    A = np.linalg.inv(K)
    beta = A @ act.y
    Q = act.kernel.feature_gram(A)  # [i, b, j, c]
    g = act.kernel.project(beta)  # [i, a]
    T1 = np.einsum("ibjc,iajd->abcd", Q, Q)
    T3 = np.einsum("ia,ibjc,jd->abcd", g, Q, g)
    return -T1 + T3 + T3.transpose(2, 3, 0, 1)


@pytest.mark.parametrize("heads", [(2, 3), (2, 2, 2)])
def test_blocked_energy_hessian_equals_one_block_and_the_dense_formula(heads):
    act = _action(heads, n0=9)
    U1 = random_spd(act.arch.dims[0], np.random.default_rng(2))
    whole = act.energy_hessian(U1, max_bytes=1e12)  # one block
    per_row = act.energy_hessian(U1, max_bytes=1)  # one feature row i per block: N0 blocks
    scale = np.abs(whole).max()
    np.testing.assert_allclose(per_row, whole, rtol=0, atol=1e-12 * scale)
    np.testing.assert_allclose(whole, _dense_energy_hessian(act, U1), rtol=0, atol=1e-12 * scale)
    # the action's own limit is the default of its Hessian; the module default is what it falls back to
    capped = _action(heads, n0=9, max_bytes=1)
    np.testing.assert_allclose(capped.energy_hessian(U1), whole, rtol=0, atol=1e-12 * scale)
    assert DEFAULT_HESSIAN_BYTES == 256 * 1024**2


def test_packed_hessian_fold_equals_the_selection_matrix_product():
    pk = ap.Packing((5, 3))
    rng = np.random.default_rng(0)
    for l, d in enumerate(pk.dims):
        M = rng.standard_normal((d * d, d * d))
        np.testing.assert_allclose(pk.fold(M, l), pk.E[l].T @ M @ pk.E[l], rtol=0, atol=1e-13)


def test_gradient_at_27_paths_matches_centralcentral_differences():
    """Three layers of three heads: U_1 27 x 27, U_2 9 x 9, U_3 3 x 3 (429 packed unknowns); the gradient
    against central differences of the action along 24 random directions in all of them at once."""
    act = _action((3, 3, 3), tau=0.2)
    assert act.arch.dims == (27, 9, 3) and act.packing.n == 378 + 45 + 6
    rng = np.random.default_rng(3)
    Us = [random_spd(D, rng) for D in act.arch.dims]
    pk = act.packing
    u0, g = pk.pack(Us), pk.pack_gradient(act.gradient(Us))
    for _ in range(24):
        v = rng.standard_normal(pk.n) / np.sqrt(pk.n)
        h = 1e-5
        fd = (act.value(pk.unpack(u0 + h * v)) - act.value(pk.unpack(u0 - h * v))) / (2 * h)
        assert abs(g @ v - fd) <= 1e-6 * np.abs(g).max()


def test_three_layer_hessian_matches_differences_of_the_gradient():
    act = _action((2, 2, 2), tau=0.2)
    rng = np.random.default_rng(4)
    Us = [random_spd(D, rng) for D in act.arch.dims]
    pk = act.packing
    H = act.hessian(Us, max_bytes=1)
    fd = central_differences(lambda u: pk.pack_gradient(act.gradient(pk.unpack(u))), pk.pack(Us), 1e-6)
    np.testing.assert_allclose(H, fd, rtol=1e-5, atol=1e-6 * np.abs(H).max())


def test_three_layer_infinite_width_solution_is_the_gp_and_its_predictor_gp_regression():
    heads, sigma2 = (2, 1, 2), (0.7, 1.3, 1.1, 0.9)
    x, y, layers, r, feats = random_instance(heads, P=15, seed=5)
    arch = ap.Architecture(heads, (1e8, 1.3e8, 0.9e8, 0.8e8), sigma2)
    res = ap.solve(ap.Action(ap.PathKernel(feats), y, 0.3, arch), n_restarts=0)
    gp, Ua = arch.gp_order_parameters()
    assert [U.shape for U in res.Us] == [(4, 4), (2, 2), (2, 2)]
    for U, Ug in zip(res.Us, gp, strict=True):
        np.testing.assert_allclose(U, Ug, atol=1e-6)
    _, _, _, _, ftest = random_instance(heads, P=9, seed=7)
    pref = float(np.prod(sigma2))
    mean_gp = ap.gp_kernel(feats, ftest, prefactor=pref).T @ np.linalg.solve(
        ap.gp_kernel(feats, prefactor=pref) + 0.3 * np.eye(15), y
    )
    np.testing.assert_allclose(ap.predict(res.U, feats, y, 0.3, ftest).mean, mean_gp, atol=1e-6)


def _prior_draws_forward(net, x, n_draws, rng):
    """Outputs [n_draws, P] of the layer-wise forward pass (spec T§2.3) for ``n_draws`` weight draws from the
    network's prior at once (numpy, batched over draws), and the weights of the first draw."""
    s2, N = net.sigma2, list(net.widths)
    with torch.no_grad():
        om = [o.numpy() for o in net.attention(x)]  # [P, H, T, T]
    N0 = x.shape[1]
    V0 = np.sqrt(s2[0]) * rng.standard_normal((n_draws, N[0], N0))
    Vs = [np.sqrt(s2[l + 1]) * rng.standard_normal((n_draws, o.shape[1], N[l + 1], N[l])) for l, o in enumerate(om)]
    a = np.sqrt(s2[-1]) * rng.standard_normal((n_draws, N[-1]))
    z = np.einsum("dkn,pnt->dpkt", V0, x) / np.sqrt(N0)  # [draws, P, N_1, T]
    for l, (V, o) in enumerate(zip(Vs, om, strict=True)):
        H = o.shape[1]
        z = np.einsum("dhjk,dpks,phst->dpjt", V, z, o) / np.sqrt(H * N[l])
    f = np.einsum("dj,dpjt,t->dp", a, z, np.asarray(net.readout)) / np.sqrt(N[-1])
    return f, (V0[0], [V[0] for V in Vs], a[0])


def test_three_layer_gp_kernel_is_the_prior_covariance_of_the_network_monte_carlo():
    """Analytic against Monte Carlo: over the weight prior of a 3-layer network of small widths, the output
    covariance E[f(x) f(x')] is the GP kernel sigma_a^2 prod sigma_l^2 sum_pi C^{pi pi} (with sigma_0^2 in the
    features) at any width; the sample covariance of 40,000 draws agrees within 5 Monte-Carlo standard errors."""
    heads, sigma2 = (2, 1, 2), (1.2, 0.7, 1.3, 1.1, 0.9)
    x, y, layers, r, _ = random_instance(heads, P=4, seed=11)
    net = ap.AttentionPathNetwork(layers, r, (3, 4, 2, 3), sigma2)
    f, (V0, Vs, a) = _prior_draws_forward(net, x, 40_000, np.random.default_rng(0))
    with torch.no_grad():  # the batched forward is the network's own, draw by draw
        net.V0.copy_(torch.as_tensor(V0))
        for V, Vt in zip(Vs, net.V, strict=True):
            Vt.copy_(torch.as_tensor(V))
        net.a.copy_(torch.as_tensor(a))
        np.testing.assert_allclose(net(x).numpy(), f[0], rtol=1e-12, atol=1e-12)
    feats = ap.path_features(ap.path_inputs(x, layers, r), sigma2[0])
    K = ap.gp_kernel(feats, prefactor=float(np.prod(sigma2[1:])))
    prod = f[:, :, None] * f[:, None, :]
    emp, se = prod.mean(0), prod.std(0, ddof=1) / np.sqrt(len(f))
    assert np.all(np.abs(emp - K) <= 5 * se), (emp, K, se)
    assert np.abs(emp - K).max() < 0.1 * np.abs(K).max()  # and close, not merely noisy


def test_the_kernel_form_is_chosen_by_the_memory_it_needs_and_the_memory_available(monkeypatch):
    from attention_paths.theory import kernels

    feats = random_instance((2, 2), P=30, n0=40)[-1]  # N0 = 40 >= 8 x 4 paths: the packed form if it fits
    need = 8.0 * 30 * 31 * 4 * 5 / 4  # the packed tensor: (P (P + 1) / 2) x (Pi (Pi + 1) / 2) doubles
    monkeypatch.setattr(kernels, "available_bytes", lambda: 1e12)
    assert ap.PathKernel(feats).mode == "gram" and ap.PathKernel(feats, max_gram_bytes=need - 1).mode == "lowrank"
    monkeypatch.setattr(kernels, "available_bytes", lambda: 2 * need - 8)  # half of it is just too little
    low = ap.PathKernel(feats)
    assert low.mode == "lowrank"
    monkeypatch.setattr(kernels, "available_bytes", lambda: None)  # unknown: the limit alone decides
    gram = ap.PathKernel(feats)
    assert gram.mode == "gram"
    U = random_spd(4, np.random.default_rng(1))
    np.testing.assert_allclose(low.kernel(U), gram.kernel(U), rtol=1e-12, atol=1e-14)
    M = random_spd(30, np.random.default_rng(2))
    np.testing.assert_allclose(low.contract(M), gram.contract(M), rtol=1e-12, atol=1e-12)
    monkeypatch.undo()  # the real one reads /proc/meminfo where there is one
    avail = kernels.available_bytes()
    assert avail is None or avail > 0
