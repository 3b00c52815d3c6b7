"""Action, gradients, closed forms and the solver (spec T§16.2)."""

import numpy as np
import pytest
import torch
from helpers import central_differences, random_instance, random_spd, torch_reduced_action
from scipy import optimize

import attention_paths as ap
from attention_paths.base import config


def _action(heads=(2, 3), widths=(30, 40, 50), sigma2=(0.7, 1.3, 0.9), tau=0.3, P=15, seed=0, **kw):
    x, y, layers, r, feats = random_instance(heads, P=P, seed=seed, **kw)
    return ap.Action(ap.PathKernel(feats), y, tau, ap.Architecture(heads, widths, sigma2))


@pytest.mark.parametrize("heads", [(2, 3), (3, 2), (2, 1, 2), (3, 3, 3)])
def test_analytic_gradient_equals_autodiff(heads):
    n = len(heads) + 1  # widths and prior variances N_1..N_L, N_a
    act = _action(heads, widths=(30, 40, 50, 35)[:n], sigma2=(0.7, 1.3, 0.9, 1.1)[:n])
    rng = np.random.default_rng(1)
    Us = [random_spd(D, rng) for D in act.arch.dims]
    S, grads = act.value_and_gradient(Us)
    Ut = [torch.tensor(U, requires_grad=True) for U in Us]
    St = torch_reduced_action(Ut, act.kernel.X, act.y, act.tau, act.arch)
    St.backward()
    assert abs(S - St.item()) <= 1e-11 * abs(S)
    for g, u in zip(grads, Ut, strict=True):
        # autodiff goes through U_a(U_L) as well: equality is the envelope theorem
        np.testing.assert_allclose(g, u.grad.numpy(), rtol=0, atol=1e-10 * max(1.0, np.abs(g).max()))


def test_gradient_matches_central_differences():
    act = _action((3, 2), tau=0.1)
    rng = np.random.default_rng(3)
    Us = [random_spd(D, rng) for D in act.arch.dims]
    pk = act.packing
    g = pk.pack_gradient(act.gradient(Us))
    fd = central_differences(lambda u: act.value(pk.unpack(u)), pk.pack(Us), 1e-5)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-6 * np.abs(g).max())


def test_hessian_matches_differences_of_gradient():
    act = _action((2, 2), tau=0.2)
    rng = np.random.default_rng(4)
    Us = [random_spd(D, rng) for D in act.arch.dims]
    pk = act.packing
    H = act.hessian(Us)
    fd = central_differences(lambda u: pk.pack_gradient(act.gradient(pk.unpack(u))), pk.pack(Us), 1e-6)
    np.testing.assert_allclose(H, fd, rtol=1e-5, atol=1e-6 * np.abs(H).max())


def test_ua_closed_form_is_the_minimising_root():
    act = _action((3, 2))
    rng = np.random.default_rng(5)
    UL = random_spd(2, rng)
    a = act.arch
    Ua = act.ua(UL)
    b = a.sigma2[-1] * (a.heads[-1] * a.widths[-2] / a.widths[-1] - 1)
    c = a.sigma2[-1] * a.widths[-2] * np.trace(UL) / (a.widths[-1] * a.sigma2[-2])
    assert Ua > 0
    assert abs(Ua**2 + b * Ua - c) <= 1e-12 * max(1.0, c)

    def S_of_ua(u):  # the U_a-dependent terms of S_ent
        return a.widths[-1] * (u / a.sigma2[-1] - np.log(u)) + a.widths[-2] * (
            np.trace(UL) / (a.sigma2[-2] * u) + a.heads[-1] * np.log(u)
        )

    dS = a.widths[-1] * (1 / a.sigma2[-1] - 1 / Ua) + a.widths[-2] * (
        -np.trace(UL) / (a.sigma2[-2] * Ua**2) + a.heads[-1] / Ua
    )
    assert abs(dS) <= 1e-12 * a.widths[-1] / Ua
    d2 = a.widths[-1] * np.sqrt(b * b + 4 * c) / (a.sigma2[-1] * Ua**2)
    h = 1e-4 * Ua
    assert d2 > 0
    assert abs((S_of_ua(Ua + h) - 2 * S_of_ua(Ua) + S_of_ua(Ua - h)) / h**2 - d2) <= 1e-5 * d2


@pytest.mark.parametrize(
    "heads,widths,sigma2",
    [
        ((2, 3), (30, 40, 50), (0.7, 1.3, 0.9)),
        ((3, 2), (13, 7, 21), (1.4, 0.6, 2.0)),
        ((2, 1, 2), (5, 9, 4, 11), (0.8, 1.1, 1.7, 0.5)),
    ],
)
def test_gp_point_is_stationary_for_the_entropy(heads, widths, sigma2):
    x, y, layers, r, feats = random_instance(heads, P=12)
    act = ap.Action(ap.PathKernel(feats), y, 0.5, ap.Architecture(heads, widths, sigma2))
    Us, Ua_gp = act.arch.gp_order_parameters()
    assert abs(act.ua(Us[-1]) - Ua_gp) <= 1e-12 * Ua_gp
    _, grads, _ = act.entropy(Us)
    for g in grads:
        assert np.abs(g).max() <= 1e-12 * max(widths)


def test_infinite_width_solution_is_the_gp():
    heads, sigma2 = (2, 3), (0.7, 1.3, 0.9)
    x, y, layers, r, feats = random_instance(heads, P=15)
    arch = ap.Architecture(heads, (1e8, 1.3e8, 0.8e8), sigma2)
    act = ap.Action(ap.PathKernel(feats), y, 0.3, arch)
    res = ap.solve(act, n_restarts=0)
    gp, Ua = arch.gp_order_parameters()
    for U, Ug in zip(res.Us, gp, strict=True):
        np.testing.assert_allclose(U, Ug, atol=1e-6)
    assert abs(res.Ua - Ua) < 1e-6
    # predictor equals GP regression with K_GP = sigma_a^2 prod sigma_l^2 sum_pi C^{pi pi}
    _, _, _, _, ftest = random_instance(heads, P=9, seed=7)
    pref = 0.7 * 1.3 * 0.9
    Kgp = ap.gp_kernel(feats, prefactor=pref)
    kgp = ap.gp_kernel(feats, ftest, prefactor=pref)
    mean_gp = kgp.T @ np.linalg.solve(Kgp + 0.3 * np.eye(15), y)
    np.testing.assert_allclose(ap.predict(res.U, feats, y, 0.3, ftest).mean, mean_gp, atol=1e-6)


def test_approach_to_gp_is_order_one_over_n():
    x, y, layers, r, feats = random_instance((2, 2), P=20, n0=8, seed=2)
    widths = [1600, 800, 400, 200, 100]
    acts = [ap.Action(ap.PathKernel(feats), y, 0.1, ap.Architecture.uniform((2, 2), N)) for N in widths]
    results = ap.solve_continuation(acts, n_restarts=0)
    devs = np.array([np.abs(res.U - np.eye(4)).max() for res in results])
    ratios = devs[1:] / devs[:-1]  # N halves at each step
    assert np.all((ratios > 1.7) & (ratios < 2.4)), ratios
    scaled = [N * (res.U - np.eye(4)) for N, res in zip(widths, results, strict=True)]
    diffs = [np.abs(scaled[i] - scaled[i + 1]).max() for i in range(len(scaled) - 1)]
    assert diffs[0] < diffs[1] < diffs[2] < diffs[3]  # N (U - I) converges as N grows
    means = [ap.predict(res.U, feats, y, 0.1, feats).mean for res in results]
    gp_mean = ap.predict(np.eye(4), feats, y, 0.1, feats).mean
    gaps = [np.abs(m - gp_mean).max() for m in means]
    assert gaps == sorted(gaps)


def test_large_temperature_gives_gp():
    x, y, layers, r, feats = random_instance((2, 2), P=20, n0=8, seed=3)
    taus = [100.0, 10.0, 1.0]
    acts = [ap.Action(ap.PathKernel(feats), y, t, ap.Architecture.uniform((2, 2), 20)) for t in taus]
    devs = [np.abs(res.U - np.eye(4)).max() for res in ap.solve_continuation(acts, n_restarts=0)]
    assert devs[0] < devs[1] < devs[2]
    assert devs[0] < 0.02


@pytest.mark.parametrize("N,tau", [(10, 0.01), (50, 0.05)])
def test_converged_solution_is_a_verified_minimum(N, tau):
    x, y, layers, r, feats = random_instance((2, 3), P=24, n0=8, seed=6)
    act = ap.Action(ap.PathKernel(feats), y, tau, ap.Architecture((2, 3), (N, 1.3 * N, 0.7 * N), (1.0, 1.0, 1.0)))
    res = ap.solve(act, n_restarts=2, seed=1)
    assert res.converged and res.grad_max <= 1e-8
    assert max(np.abs(g).max() for g in act.gradient(res.Us)) / act.arch.n_max <= 1e-8
    assert res.hessian_min_eig > 0
    for rec in res.restarts:
        assert rec["delta_action_rel"] <= 1e-10 and rec["max_abs_dU"] <= 1e-6
    assert np.abs(res.U - np.eye(6)).max() > 0.1  # renormalised, not GP


def _scalar_action(u, C, y, tau, N, L, s2_prod):
    A = u * C + tau * np.eye(len(y))
    sign, ld = np.linalg.slogdet(A)
    return N * ((L + 1) * (u / s2_prod) ** (1 / (L + 1)) - np.log(u)) + ld + y @ np.linalg.solve(A, y)


@pytest.mark.parametrize("L", [1, 2, 3])
@pytest.mark.parametrize("N", [5, 30, 3000])
def test_single_path_reduces_to_scalar_kernel_renormalisation(L, N):
    heads = (1,) * L
    sigma2 = (0.8, 1.2, 1.5)[:L] + (0.9,)
    x, y, layers, r, feats = random_instance(heads, P=16, n0=9, seed=8)
    act = ap.Action(ap.PathKernel(feats), y, 0.05, ap.Architecture(heads, (N,) * (L + 1), sigma2))
    res = ap.solve(act, n_restarts=0)
    C = ap.path_kernel(feats, 0)
    s2_prod = float(np.prod(sigma2))
    opt = optimize.minimize_scalar(
        lambda lu: _scalar_action(np.exp(lu), C, y, 0.05, N, L, s2_prod), bracket=(-3, 3), tol=1e-14
    )
    u = np.exp(opt.x)
    assert abs(res.U[0, 0] - u) <= 1e-6 * u
    assert abs(res.action - _scalar_action(u, C, y, 0.05, N, L, s2_prod)) <= 1e-10 * abs(res.action)
    if L == 1:  # the stationarity condition of the spec (T§16.2, item 11)

        def cond(v):
            A = np.linalg.inv(v * C + 0.05 * np.eye(16))
            return 1 / np.sqrt(v * s2_prod) - 1 / v + (np.trace(A @ C) - y @ A @ C @ A @ y) / N

        # its root, found to full precision (a minimiser's argument is only good to about sqrt(eps), where the
        # action is flat: the condition at it was 1.6e-7 on an AVX-512 machine), is the solver's U
        root = optimize.brentq(cond, 0.5 * u, 2.0 * u, xtol=1e-300, rtol=4 * np.finfo(float).eps)
        assert abs(cond(root)) < 1e-12
        assert abs(res.U[0, 0] - root) <= 1e-8 * root


def test_predictor_equals_dense_gp_regression():
    heads = (3, 2)
    x, y, layers, r, feats = random_instance(heads, P=18, seed=9)
    _, _, _, _, ftest = random_instance(heads, P=7, seed=10)
    U = random_spd(6, np.random.default_rng(0))
    Ktr = sum(U[a, b] * ap.path_kernel(feats, a, b) for a in range(6) for b in range(6))
    Kx = sum(U[a, b] * ap.path_kernel(feats, a, b, ftest) for a in range(6) for b in range(6))
    Kss = sum(U[a, b] * ap.path_kernel(ftest, a, b) for a in range(6) for b in range(6))
    A = np.linalg.inv(Ktr + 0.2 * np.eye(18))
    pred = ap.predict(U, feats, y, 0.2, ftest)
    np.testing.assert_allclose(pred.mean, Kx.T @ A @ y, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(pred.var, np.diag(Kss - Kx.T @ A @ Kx), rtol=1e-10, atol=1e-12)


def test_symmetries():
    heads = (2, 3)
    x, y, layers, r, feats = random_instance(heads, P=20, n0=8, seed=11)
    arch = ap.Architecture.uniform(heads, 15)
    res = ap.solve(ap.Action(ap.PathKernel(feats), y, 0.05, arch), n_restarts=0, tol=1e-11)
    res_neg = ap.solve(ap.Action(ap.PathKernel(feats), -y, 0.05, arch), n_restarts=0, tol=1e-11)
    np.testing.assert_allclose(res_neg.U, res.U, atol=1e-7)
    m = ap.predict(res.U, feats, y, 0.05, feats).mean
    np.testing.assert_allclose(ap.predict(res_neg.U, feats, -y, 0.05, feats).mean, -m, atol=1e-7)
    # permuting the heads of layer 1 permutes U by the induced path permutation
    perm_heads = [1, 0]
    W = layers[0].W[perm_heads]
    layers_p = [ap.WFormHeads(W), layers[1]]
    feats_p = ap.path_features(ap.path_inputs(x, layers_p, r))
    res_p = ap.solve(ap.Action(ap.PathKernel(feats_p), y, 0.05, arch), n_restarts=0, tol=1e-11)
    path_perm = [ap.path_index((perm_heads[h1], h2), heads) for h1, h2 in ap.path_list(heads)]
    np.testing.assert_allclose(res_p.U, res.U[np.ix_(path_perm, path_perm)], atol=1e-7)
    # sigma0^2 -> c sigma0^2 with tau -> c tau leaves the GP mean predictor unchanged
    c = 3.7
    feats_c = ap.path_features(ap.path_inputs(x, layers, r), c)
    m_gp = ap.predict(np.eye(6), feats, y, 0.05, feats).mean
    np.testing.assert_allclose(ap.predict(np.eye(6), feats_c, y, c * 0.05, feats_c).mean, m_gp, rtol=1e-10)


def test_bad_inputs_raise_clear_errors():
    x, y, layers, r, feats = random_instance((2, 2), P=12)
    arch = ap.Architecture.uniform((2, 2), 10)
    kern = ap.PathKernel(feats)
    with pytest.raises(ValueError, match="tau"):
        ap.Action(kern, y, 0.0, arch)
    with pytest.raises(ValueError, match="tau"):
        ap.Action(kern, y, -1.0, arch)
    with pytest.raises(ValueError, match="targets"):
        ap.Action(kern, y[:-1], 0.1, arch)
    with pytest.raises(ValueError, match="paths"):
        ap.Action(kern, y, 0.1, ap.Architecture.uniform((2, 3), 10))
    with pytest.raises(ValueError, match="non-finite"):
        ap.PathKernel(np.where(feats > 0, np.nan, feats))
    with pytest.raises(ValueError, match="heads"):
        ap.Architecture((0, 2), (1, 1, 1), (1, 1, 1))
    with pytest.raises(ValueError, match="widths"):
        ap.Architecture((2, 2), (10, -1, 10), (1, 1, 1))
    act = ap.Action(kern, y, 0.1, arch)
    with pytest.raises(ap.NotPositiveDefiniteError, match="U_1"):
        act.value([-np.eye(4), np.eye(2)])
    with pytest.raises(ValueError, match="symmetric"):
        act.value([np.eye(4) + np.triu(np.ones((4, 4)), 1), np.eye(2)])
    with pytest.raises(ValueError, match="shape"):
        act.value([np.eye(3), np.eye(2)])
    with pytest.raises(ValueError, match="positive semidefinite"):
        ap.predict(-np.eye(4), feats, y, 0.1, feats)
    with pytest.raises(ValueError, match="tau"):
        ap.predict(np.eye(4), feats, y, 0.0, feats)
    with pytest.raises(ap.NotPositiveDefiniteError):
        ap.solve(act, init=[np.zeros((4, 4)), np.eye(2)])
    with pytest.raises(ap.SolverError, match="not converged"):
        ap.solve(ap.Action(kern, y, 0.01, ap.Architecture.uniform((2, 2), 3)), max_iter=1, newton_steps=0, n_restarts=0)


def test_repro_scale_is_validated(monkeypatch):
    monkeypatch.setenv("REPRO_SCALE", "paper")
    assert config.get_scale() == "paper"
    monkeypatch.setenv("REPRO_SCALE", "huge")
    with pytest.raises(ValueError, match="REPRO_SCALE"):
        config.get_scale()
    monkeypatch.delenv("REPRO_SCALE")
    assert config.get_scale() == "quick"
