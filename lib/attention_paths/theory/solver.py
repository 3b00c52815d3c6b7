"""Saddle-point solver for the order parameters (spec T§9, T§12.2).

Method: L-BFGS on the reduced action in Cholesky variables ``U_l = L_l L_l^T`` (every iterate is
positive semidefinite), started from the GP point or a warm start, followed by Newton polishing in
the packed upper-triangular coordinates of the ``U_l`` with the analytic Hessian.  A solution is
accepted when ``max |dS/dU_l| / N_max <= tol`` (in ``U`` space), the Hessian on symmetric directions
is positive definite, and (optionally) independent restarts reach the same minimum.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np
from scipy import linalg, optimize

from attention_paths.base.progress import progress_bar
from attention_paths.base.threads import blas_threads_for
from attention_paths.theory.action import Action, NotPositiveDefiniteError
from attention_paths.theory.checks import check_count, check_tolerance

__all__ = ["SolveResult", "SolverError", "solve", "solve_continuation", "random_psd_start"]


class SolverError(RuntimeError):
    """The saddle-point solver did not reach the requested tolerance or found no minimum."""


@dataclass
class SolveResult:
    """Outcome of :func:`solve`.

    Attributes
    ----------
    Us : ``[U_1, ..., U_L]`` at the minimum; ``U`` is ``U_1``, the paper's order parameter
    Ua : closed-form readout overlap at the minimum
    action : reduced action ``S`` at the minimum
    grad_max : ``max_l max |dS/dU_l| / N_max`` at the minimum
    n_iter : L-BFGS iterations plus Newton steps
    n_newton : Newton steps
    converged : whether ``grad_max <= tol`` and the Hessian is positive definite
    hessian_min_eig : smallest eigenvalue of the Hessian of ``S / N_max`` (packed coordinates)
    restarts : actions and distances of the verification restarts
    """

    Us: list
    Ua: float
    action: float
    grad_max: float
    n_iter: int
    n_newton: int
    converged: bool
    hessian_min_eig: float | None
    tol: float
    restarts: list = field(default_factory=list)
    message: str = ""

    @property
    def U(self) -> np.ndarray:
        return self.Us[0]

    def summary(self) -> dict:
        return {
            "action": self.action,
            "grad_max": self.grad_max,
            "n_iter": self.n_iter,
            "n_newton": self.n_newton,
            "converged": self.converged,
            "hessian_min_eig": self.hessian_min_eig,
            "Ua": self.Ua,
            "restarts": self.restarts,
            "message": self.message,
        }


def _tril(D):
    return np.tril_indices(D)


def _to_chol_params(Us) -> np.ndarray:
    return np.concatenate([linalg.cholesky(U, lower=True)[_tril(U.shape[0])] for U in Us])


def _from_chol_params(theta, dims):
    Ls, k = [], 0
    for D in dims:
        n = D * (D + 1) // 2
        Lc = np.zeros((D, D))
        Lc[_tril(D)] = theta[k : k + n]
        Ls.append(Lc)
        k += n
    return Ls


def random_psd_start(action: Action, rng: np.random.Generator, strength: float = 0.1) -> list:
    """GP point plus a random positive semidefinite perturbation of relative size ``strength``."""
    Us, _ = action.arch.gp_order_parameters()
    out = []
    for U in Us:
        D = U.shape[0]
        Z = rng.standard_normal((D, D))
        out.append(U + strength * U[0, 0] * (Z @ Z.T) / D)
    return out


def _grad_max(action: Action, grads) -> float:
    return max(np.abs(g).max() for g in grads) / action.arch.n_max


def _lbfgs(action: Action, Us0, max_iter: int):
    dims = action.arch.dims
    scale = 1.0 / action.arch.n_max

    def fun(theta):
        Ls = _from_chol_params(theta, dims)
        Us = [Lc @ Lc.T for Lc in Ls]
        try:
            S, grads = action.value_and_gradient(Us, checked=True)
        except NotPositiveDefiniteError:
            return np.inf, np.zeros_like(theta)
        gtheta = np.concatenate([(2.0 * G @ Lc)[_tril(Lc.shape[0])] for G, Lc in zip(grads, Ls)])
        return S * scale, gtheta * scale

    res = optimize.minimize(
        fun,
        _to_chol_params(Us0),
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": max_iter, "maxcor": 30, "ftol": 1e-15, "gtol": 1e-13, "maxls": 50},
    )
    Ls = _from_chol_params(res.x, dims)
    return [Lc @ Lc.T for Lc in Ls], int(res.nit)


def _newton(action: Action, Us, tol: float, max_steps: int):
    """Newton polishing in packed coordinates with a positivity-preserving backtracking line search."""
    pk = action.packing
    scale = 1.0 / action.arch.n_max
    S, grads = action.value_and_gradient(Us)
    steps = 0
    H = None
    for _ in range(max_steps):
        if _grad_max(action, grads) <= tol:
            break
        try:
            H = action.hessian(Us) * scale
        except NotPositiveDefiniteError:
            break  # too close to the edge of the positive-definite cone for the Hessian's differences
        g = pk.pack_gradient(grads) * scale
        try:
            step = -linalg.solve(H, g, assume_a="pos")
        except (linalg.LinAlgError, ValueError):
            break  # Hessian not positive definite: not near a minimum
        u0 = pk.pack(Us)
        t, accepted = 1.0, False
        while t > 1e-6:
            trial = pk.unpack(u0 + t * step)
            try:
                S_t, g_t = action.value_and_gradient(trial, checked=True)
            except NotPositiveDefiniteError:
                t *= 0.5
                continue
            if S_t <= S + 1e-12 * abs(S) or _grad_max(action, g_t) < _grad_max(action, grads):
                accepted = True
                break
            t *= 0.5
        if not accepted:
            break
        Us, S, grads = trial, S_t, g_t
        steps += 1
        H = None
    return Us, S, grads, steps


def _single_solve(action: Action, Us0, tol: float, max_iter: int, newton_steps: int):
    Us, nit = _lbfgs(action, Us0, max_iter)
    Us, S, grads, nn = _newton(action, Us, tol, newton_steps)
    return Us, S, grads, nit, nn


def solve(
    action: Action,
    init: Sequence[np.ndarray] | None = None,
    *,
    tol: float = 1e-8,
    max_iter: int = 20000,
    newton_steps: int = 8,
    n_restarts: int = 1,
    seed: int = 0,
    check_hessian: bool = True,
    raise_on_failure: bool = True,
) -> SolveResult:
    """Minimise the reduced action over positive-definite ``U_1, ..., U_L`` (spec T§12.2).

    Parameters
    ----------
    action : the :class:`~attention_paths.theory.action.Action` to minimise
    init : starting point ``[U_1, ..., U_L]`` (default: the GP point)
    tol : convergence threshold on ``max |dS/dU_l| / N_max``
    max_iter : L-BFGS iteration cap
    newton_steps : cap on Newton polishing steps
    n_restarts : verification restarts from the GP point perturbed by random PSD matrices
        (seeded by ``seed``); the lowest action wins and disagreements are recorded and warned about
    check_hessian : compute the Hessian at the solution and require it to be positive definite
    raise_on_failure : raise :class:`SolverError` instead of returning ``converged=False``

    Returns
    -------
    SolveResult

    Examples
    --------
    Twenty inputs with 4 paths (2 heads in each of 2 layers) of ``N0 = 6`` features: at width 10 the order
    parameter departs from the GP limit ``U = I``, at width 10^6 it is there to within 1e-4.

    >>> import numpy as np
    >>> import attention_paths as ap
    >>> X = np.random.default_rng(0).standard_normal((20, 6, 4)) / np.sqrt(24)  # [P, N0, Pi] path features
    >>> y = np.sign(X[:, 0, 0])
    >>> res = ap.solve(ap.Action(ap.PathKernel(X), y, 0.5, ap.Architecture.uniform((2, 2), 10)))
    >>> res.converged, res.U.shape, bool(np.allclose(res.U, res.U.T))
    (True, (4, 4), True)
    >>> bool(np.abs(res.U - np.eye(4)).max() > 0.01)
    True
    >>> wide = ap.solve(ap.Action(ap.PathKernel(X), y, 0.5, ap.Architecture.uniform((2, 2), 10**6)))
    >>> bool(np.abs(wide.U - np.eye(4)).max() < 1e-4)
    True
    """
    tol = check_tolerance(tol)
    max_iter = check_count(max_iter, "max_iter", 1)
    newton_steps = check_count(newton_steps, "newton_steps", 0)
    n_restarts = check_count(n_restarts, "n_restarts", 0)
    if not isinstance(action, Action):
        raise TypeError(f"solve needs an attention_paths.Action, got {type(action).__name__}")
    with blas_threads_for(action.kernel.P):
        return _solve(
            action,
            init,
            tol=tol,
            max_iter=max_iter,
            newton_steps=newton_steps,
            n_restarts=n_restarts,
            seed=seed,
            check_hessian=check_hessian,
            raise_on_failure=raise_on_failure,
        )


def _solve(action, init, *, tol, max_iter, newton_steps, n_restarts, seed, check_hessian, raise_on_failure):
    gp, _ = action.arch.gp_order_parameters()
    Us0 = gp if init is None else action.check(init)
    for l, U in enumerate(Us0):
        w = np.linalg.eigvalsh(U)
        if w.min() <= 0:
            raise NotPositiveDefiniteError(f"initial U_{l + 1} is not positive definite")
        if w.min() < 1e-12 * max(np.abs(gp[l]).max(), w.max()):
            raise ValueError(
                f"initial U_{l + 1} is numerically singular (eigenvalues {w.min():.1e} .. {w.max():.1e}); "
                "start from the GP point (init=None) or a well-conditioned positive-definite matrix"
            )
    Us, S, grads, nit, nn = _single_solve(action, Us0, tol, max_iter, newton_steps)
    rng = np.random.default_rng(seed)
    restarts = []
    for _ in range(n_restarts):
        Ur, Sr, gr, nit_r, nn_r = _single_solve(action, random_psd_start(action, rng), tol, max_iter, newton_steps)
        dU = max(np.abs(a - b).max() for a, b in zip(Ur, Us))
        record = {
            "action": float(Sr),
            "delta_action_rel": float(abs(Sr - S) / max(1.0, abs(S))),
            "max_abs_dU": float(dU),
            "grad_max": float(_grad_max(action, gr)),
        }
        restarts.append(record)
        if record["delta_action_rel"] > 1e-10 or dU > 1e-6:
            warnings.warn(
                f"restart reached a different stationary point (dS/|S|={record['delta_action_rel']:.2e}, "
                f"max|dU|={dU:.2e}); keeping the lower action",
                RuntimeWarning,
                stacklevel=2,
            )
            if Sr < S:
                Us, S, grads = Ur, Sr, gr
    gmax = _grad_max(action, grads)
    finite = bool(np.isfinite(S) and np.isfinite(gmax))
    min_eig = None
    if check_hessian and finite:
        try:
            min_eig = float(np.linalg.eigvalsh(action.hessian(Us) / action.arch.n_max).min())
        except NotPositiveDefiniteError as err:
            raise SolverError(
                f"the solution lies on the edge of the positive-definite cone ({err}), so its Hessian "
                f"cannot be evaluated; the widths {action.arch.widths} or the temperature "
                f"{action.tau} are probably out of the theory's range for these data"
            ) from None
    converged = finite and gmax <= tol and (min_eig is None or min_eig > 0)
    if not finite:
        msg = (
            f"not converged: the action ({S}) or its gradient (max {gmax}) is not finite -- the features are "
            "probably too large (or too small) for float64; rescale them"
        )
    else:
        msg = (
            "converged"
            if converged
            else (f"not converged: max|dS/dU|/N = {gmax:.3e} (tol {tol:.1e}), Hessian min eigenvalue = {min_eig}")
        )
    result = SolveResult(
        Us=Us,
        Ua=action.ua(Us[-1]),
        action=float(S),
        grad_max=float(gmax),
        n_iter=nit + nn,
        n_newton=nn,
        converged=converged,
        hessian_min_eig=min_eig,
        tol=tol,
        restarts=restarts,
        message=msg,
    )
    if not converged and raise_on_failure:
        raise SolverError(msg)
    return result


def solve_continuation(
    actions: Iterable[Action], *, progress: bool = False, desc: str = "solve", **kwargs
) -> list[SolveResult]:
    """Solve a sequence of actions in the given order, warm-starting each from the previous solution.

    Order the sequence from the GP side (largest width, or highest temperature) towards the
    strongly renormalised side.  Keyword arguments go to :func:`solve`.
    """
    actions = list(actions)
    results, prev = [], None
    for action in progress_bar(actions, desc=desc, disable=not progress):
        res = solve(action, init=prev, **kwargs)
        results.append(res)
        prev = res.Us
    return results
