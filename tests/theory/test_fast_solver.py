"""The analytic Hessian and the quasi-Newton solver of issue 48 against their oracles: torch autodiff of an
independent implementation of the reduced action, the 4-index reference Hessian, and the reference solver
(L-BFGS in Cholesky variables with Newton polishing), to which the new one is pinned."""

import warnings

import numpy as np
import pytest
import torch
from helpers import random_instance, random_spd, torch_reduced_action

import attention_paths as ap
from attention_paths.theory import hessian as hess
from attention_paths.theory import solver as solver_mod


def _action(heads, P=15, n0=7, tau=0.3, seed=0, widths=None, sigma2=None):
    x, y, layers, r, feats = random_instance(heads, P=P, n0=n0, seed=seed)
    L = len(heads)
    widths = widths or tuple(20 + 7 * l for l in range(L + 1))
    sigma2 = sigma2 or tuple(0.8 + 0.2 * l for l in range(L + 1))
    return ap.Action(ap.PathKernel(feats), y, tau, ap.Architecture(heads, widths, sigma2))


def _autodiff_hessian(act, Us):
    """Hessian of the reduced action in packed coordinates by torch autodiff (``U_a`` solved inside)."""
    pk = act.packing
    X, y = torch.as_tensor(act.kernel.X), act.y

    def f(u):
        Ut = []
        for l, d in enumerate(pk.dims):
            ia, ib = pk.triu[l]
            M = torch.zeros((d, d), dtype=torch.float64)
            v = u[pk.offsets[l] : pk.offsets[l + 1]]
            M = M.index_put((torch.as_tensor(ia), torch.as_tensor(ib)), v)
            M = M + M.T - torch.diag(torch.diagonal(M))
            Ut.append(M)
        return torch_reduced_action(Ut, X.numpy(), y, act.tau, act.arch)

    u0 = torch.as_tensor(pk.pack(Us))
    return torch.autograd.functional.hessian(f, u0).numpy()


@pytest.mark.parametrize("heads", [(3,), (2, 3), (3, 2), (2, 1, 2), (2, 2, 2)])
def test_analytic_hessian_equals_autodiff(heads):
    """Both parts in closed form against autodiff, at a random positive-definite point (unequal widths and
    variances, so that every term of the entropy and the U_a Schur complement are exercised)."""
    n = len(heads) + 1
    act = _action(heads, widths=(30, 40, 50, 35)[:n], sigma2=(0.7, 1.3, 0.9, 1.1)[:n])
    rng = np.random.default_rng(5)
    Us = [random_spd(D, rng) for D in act.arch.dims]
    H = act.hessian(Us)
    ref = _autodiff_hessian(act, Us)
    np.testing.assert_allclose(H, ref, rtol=0, atol=1e-10 * np.abs(ref).max())
    # the entropy part alone: the energy enters U_1's block only
    E = hess.energy_hessian_packed(act, Us[0])
    n1 = act.packing.sizes[0]
    ent = hess.entropy_hessian(act, Us)
    np.testing.assert_allclose(ent[:n1, :n1] + E, H[:n1, :n1], rtol=0, atol=1e-12 * np.abs(H).max())
    np.testing.assert_allclose(ent[n1:], H[n1:], rtol=0, atol=1e-14 * np.abs(H).max())


@pytest.mark.parametrize("heads", [(2, 3), (4, 4), (2, 2, 2)])
def test_packed_energy_hessian_equals_the_four_index_reference(heads):
    act = _action(heads, n0=9, P=20)
    U1 = random_spd(act.arch.dims[0], np.random.default_rng(2))
    D = act.arch.dims[0]
    ref = act.packing.fold(act.energy_hessian(U1).reshape(D * D, D * D), 0)
    np.testing.assert_allclose(hess.energy_hessian_packed(act, U1), ref, rtol=0, atol=1e-12 * np.abs(ref).max())


@pytest.mark.parametrize("heads", [(2, 3), (2, 2, 2)])
def test_the_fit_part_of_the_energy_hessian_is_the_data_terms_curvature(heads):
    """``energy_hessian_fit`` (the solver's starting model) against torch autodiff of ``Y^T (K^U + tau I)^-1 Y``
    in packed coordinates; positive semidefinite, and the full energy Hessian minus it is the log-determinant's
    curvature, negative semidefinite."""
    act = _action(heads, n0=8, P=25)
    D = act.arch.dims[0]
    U1 = random_spd(D, np.random.default_rng(3))
    X = torch.as_tensor(act.kernel.X)
    ia, ib = act.packing.triu[0]

    def fit(u):
        U = torch.zeros((D, D), dtype=torch.float64).index_put((torch.as_tensor(ia), torch.as_tensor(ib)), u)
        U = U + U.T - torch.diag(torch.diagonal(U))
        K = torch.einsum("pia,ab,qib->pq", X, U, X) + act.tau * torch.eye(act.kernel.P, dtype=torch.float64)
        y = torch.as_tensor(act.y)
        return y @ torch.linalg.solve(K, y)

    ref = torch.autograd.functional.hessian(fit, torch.as_tensor(U1[ia, ib])).numpy()
    F = hess.energy_hessian_fit(act, U1)
    np.testing.assert_allclose(F, ref, rtol=0, atol=1e-11 * np.abs(ref).max())
    assert np.linalg.eigvalsh(F)[0] >= -1e-12 * np.abs(F).max()
    assert np.linalg.eigvalsh(hess.energy_hessian_packed(act, U1) - F)[-1] <= 1e-12 * np.abs(F).max()


def test_reference_and_analytic_hessians_agree_to_the_differences_accuracy():
    act = _action((2, 3), tau=0.2)
    Us = [random_spd(D, np.random.default_rng(7)) for D in act.arch.dims]
    H, ref = act.hessian(Us), act.hessian(Us, method="reference")
    np.testing.assert_allclose(H, ref, rtol=0, atol=1e-8 * np.abs(H).max())  # central differences, step 1e-5
    with pytest.raises(ValueError, match="'analytic' or 'reference'"):
        act.hessian(Us, method="exact")


def test_smallest_eigenvalue_by_lanczos_equals_the_eigensolver():
    rng = np.random.default_rng(0)
    Z = rng.standard_normal((120, 120))
    H = Z @ Z.T / 120 + 1e-3 * np.eye(120)
    lam, factor = solver_mod._min_eigenvalue(H)
    assert factor is not None
    assert lam == pytest.approx(np.linalg.eigvalsh(H)[0], rel=1e-10)
    lam, factor = solver_mod._min_eigenvalue(H - 0.01 * np.eye(120))  # indefinite: no factor, the eigensolver
    assert factor is None and lam == pytest.approx(np.linalg.eigvalsh(H)[0] - 0.01, rel=1e-12)


@pytest.mark.parametrize(
    "heads, N, tau",
    [((2, 2), 10, 0.5), ((4, 4), 10, 0.1), ((4, 4), 1000, 0.5), ((3, 3, 3), 10, 0.5), ((2, 3), 30, 0.05)],
)
def test_quasi_newton_reaches_the_reference_solvers_point(heads, N, tau):
    """The new default and the reference method: the same U to 1e-10 relative, the same convergence report
    (converged, gradient within tolerance, the same smallest Hessian eigenvalue).

    The reference method stops as soon as its gradient is within ``tol`` (some of these at 5e-9, which leaves
    U 1e-8 from the minimum); the new one polishes to rounding.  So U is compared with the reference method
    run to ``tol = 1e-13``, and the reference at its default tolerance is within its own error bound."""
    act = _action(heads, P=40, n0=9, tau=tau, widths=(N,) * (len(heads) + 1), sigma2=(1.0,) * (len(heads) + 1))
    new = ap.solve(act, n_restarts=0)
    old = ap.solve(act, n_restarts=0, method="lbfgs-newton")
    tight = ap.solve(act, n_restarts=0, method="lbfgs-newton", tol=1e-13)
    assert new.converged and old.converged and new.method == "bfgs" and old.method == "lbfgs-newton"
    for a, b, c in zip(new.Us, tight.Us, old.Us, strict=True):
        assert np.abs(a - b).max() <= 1e-10 * np.abs(b).max()
        # |dU| <= |grad| / lambda_min (in S / N units) for the reference stopped at its tolerance
        assert np.abs(c - b).max() <= 10 * max(old.grad_max, 1e-14) / old.hessian_min_eig
    assert new.grad_max <= 1e-8 and abs(new.action - old.action) <= 1e-12 * abs(old.action)
    assert new.hessian_min_eig == pytest.approx(old.hessian_min_eig, rel=1e-6)
    # the certificate plus the refreshes of a stale model (each a fraction of the steps)
    assert 1 <= new.n_hessian <= 1 + new.n_iter // 2 and new.n_grad >= new.n_iter
    assert new.certificate_step < 1e-6  # the Newton step taken after the certificate is tiny
    assert new.hessian.shape == (act.packing.n,) * 2 and np.linalg.eigvalsh(new.hessian)[0] > 0


def test_continuation_hands_its_hessian_on_and_matches_cold_solves():
    act = lambda N: _action((4, 4), P=40, n0=9, tau=0.2, widths=(N,) * 3, sigma2=(1.0,) * 3)  # noqa: E731
    widths = [1000, 100, 30, 10]
    chain = ap.solve_continuation([act(N) for N in widths], n_restarts=0)
    colds = [ap.solve(act(N), n_restarts=0) for N in widths]
    for r, cold in zip(chain, colds, strict=True):
        assert np.abs(r.U - cold.U).max() <= 1e-10 * np.abs(cold.U).max()
        assert r.hessian is None and r.energy_hessian is None  # handed on, not kept
    assert all(r.converged for r in chain)  # (what the warm start saves is measured by bench_solver.py)


def test_a_bad_hessian_hint_is_named_and_a_stale_one_still_converges():
    act = _action((2, 3), P=30, tau=0.3)
    n1 = act.packing.sizes[0]
    with pytest.raises(ValueError, match="hessian_hint"):
        ap.solve(act, hessian_hint=np.zeros((n1 + 1, n1)))
    with pytest.raises(ValueError, match="hessian_hint"):
        ap.solve(act, hessian_hint=np.full((n1, n1), np.nan))
    with pytest.raises(ValueError, match="method"):
        ap.solve(act, method="adam")
    # a hint far from the truth (a hundred times the identity) costs steps, not the answer
    ref = ap.solve(act, n_restarts=0, method="lbfgs-newton")
    r = ap.solve(act, n_restarts=0, hessian_hint=100.0 * np.eye(n1))
    assert r.converged and np.abs(r.U - ref.U).max() <= 1e-10 * np.abs(ref.U).max()


def test_the_new_method_refuses_what_the_old_one_refused():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 8, 4))
    y = np.sign(rng.standard_normal(30))
    for method in ("bfgs", "lbfgs-newton"):
        with pytest.raises(ap.SolverError, match="widths"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            ap.solve(ap.Action(ap.PathKernel(X), y, 0.5, ap.Architecture.uniform((2, 2), 1e-6)), method=method)
        r = ap.solve(
            ap.Action(ap.PathKernel(X), y, 0.5, ap.Architecture.uniform((2, 2), 10)),
            max_iter=1,
            method=method,
            raise_on_failure=False,
            n_restarts=0,
        )
        assert not r.converged and "not converged" in r.message
