"""Saddle-point solver for the order parameters (spec T§9, T§12.2).

Two methods reach the same minimum (tests pin them to each other):

* ``"bfgs"`` (the default): structured quasi-Newton steps in the packed upper-triangular coordinates of the
  ``U_l`` (:func:`_quasi_newton`): the entropy's Hessian exact at every step, the energy's modelled.  The model
  starts from the previous solve's exact energy Hessian in a continuation (``hessian_hint=``, what
  :func:`solve_continuation` passes along), else from the cheap data-fit part of the exact one
  (:func:`~attention_paths.theory.hessian.energy_hessian_fit`); it is refined by rank-two updates and
  replaced by the exact energy Hessian only where convergence turns linear.  Steps keep every iterate
  positive definite (a shrink of at most a half and a growth of at most threefold per step, in each
  ``U_l``'s own metric).  At the point where the gradient meets the tolerance the exact Hessian
  (:mod:`~attention_paths.theory.hessian`) is computed once more: it is the stability certificate (positive
  definite on symmetric directions), and Newton steps with it polish the gradient to rounding.  One or two
  exact Hessians and 10-20 gradients per cold solve, instead of the 60-150 gradients of L-BFGS.
* ``"lbfgs-newton"`` (the method before issue 48, kept as the reference): L-BFGS in Cholesky variables
  ``U_l = L_l L_l^T`` started from the GP point or a warm start, then Newton polishing with the Hessian of
  :meth:`Action.hessian` in its reference form (energy part from the 4-index formula, entropy part by
  central differences), and that Hessian again at the solution.

A solution is accepted when ``max |dS/dU_l| / N_max <= tol`` (in ``U`` space), the Hessian on symmetric
directions is positive definite, and (optionally) independent restarts reach the same minimum.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np
from scipy import linalg, optimize
from scipy.sparse import linalg as sparse_linalg

from attention_paths.base.progress import progress_bar
from attention_paths.base.threads import blas_threads_for
from attention_paths.theory.action import Action, NotPositiveDefiniteError
from attention_paths.theory.checks import check_count, check_tolerance
from attention_paths.theory.hessian import energy_hessian_fit, energy_hessian_packed, entropy_hessian

__all__ = ["SolveResult", "SolverError", "solve", "solve_continuation", "random_psd_start", "TOLERANCE"]


TOLERANCE = 1e-8  # the default of solve(): a stored solve's final gradient is at most this (issue 52)


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
    n_iter : quasi-Newton steps (L-BFGS iterations for ``"lbfgs-newton"``) plus Newton steps
    n_newton : Newton steps (for ``"bfgs"``, those taken with the certificate Hessian)
    converged : whether ``grad_max <= tol`` and the Hessian is positive definite
    hessian_min_eig : smallest eigenvalue of the Hessian of ``S / N_max`` (packed coordinates)
    restarts : actions and distances of the verification restarts
    method : ``"bfgs"`` or ``"lbfgs-newton"`` (module docstring)
    n_grad : evaluations of the action and its gradient
    n_hessian : exact Hessians computed (the certificate included)
    certificate_step : for ``"bfgs"``, ``max |dU|`` between the point where the certificate Hessian was
        computed and the returned ``U`` (the Newton steps' polish, typically 1e-7; 0 when none was taken)
    hessian : the certificate Hessian of ``S / N_max`` [n, n] (packed coordinates), handed to the next solve
        of a continuation; ``None`` when not computed.  Not part of :meth:`summary`
    energy_hessian : its energy part, unscaled (packed [n_1, n_1]): the ``hessian_hint`` of a nearby solve
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
    method: str = "bfgs"
    n_grad: int = 0
    n_hessian: int = 0
    certificate_step: float = 0.0
    hessian: np.ndarray | None = field(default=None, repr=False)
    energy_hessian: np.ndarray | None = field(default=None, repr=False)

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
            "method": self.method,
            "n_grad": self.n_grad,
            "n_hessian": self.n_hessian,
            "certificate_step": self.certificate_step,
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
        gtheta = np.concatenate([(2.0 * G @ Lc)[_tril(Lc.shape[0])] for G, Lc in zip(grads, Ls, strict=True)])
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
            H = action.hessian(Us, method="reference") * scale
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
    """The reference method: L-BFGS in Cholesky variables, then Newton polishing (module docstring)."""
    Us, nit = _lbfgs(action, Us0, max_iter)
    Us, S, grads, nn = _newton(action, Us, tol, newton_steps)
    return Us, S, grads, nit, nn


def _embed_energy(action: Action, H_entropy, H_energy) -> np.ndarray:
    H = H_entropy.copy()
    n1 = action.packing.sizes[0]
    H[:n1, :n1] += H_energy
    return H


class _Point:
    """The action at one packed point: ``Us``, ``S``, the matrix gradients ``grads``, and in packed coordinates
    the gradient of ``S / N_max`` (``g``) and that of the energy alone, unscaled (``g_energy``, block ``U_1``)."""

    __slots__ = ("u", "Us", "S", "grads", "f", "g", "g_energy")

    def __init__(self, action: Action, u, Us, s_ent, g_ent, s_e, G, scale):
        self.u, self.Us = u, Us
        self.S = s_ent + s_e
        grads = list(g_ent)
        grads[0] = grads[0] + G
        self.grads = grads
        self.f = self.S * scale
        self.g = action.packing.pack_gradient(grads) * scale
        self.g_energy = action.packing.pack_block(G, 0)


class _Evaluator:
    """The action at packed points, counting evaluations; ``None`` outside the positive-definite cone."""

    def __init__(self, action: Action):
        self.action, self.n = action, 0
        self.scale = 1.0 / action.arch.n_max

    def __call__(self, u):
        action = self.action
        Us = action.packing.unpack(u)
        self.n += 1
        try:
            s_ent, g_ent, _ = action.entropy(Us)
            s_e, G = action.energy(Us[0])
        except NotPositiveDefiniteError:
            return None
        if not (np.isfinite(s_ent) and np.isfinite(s_e)):
            return None
        return _Point(action, u, Us, s_ent, g_ent, s_e, G, self.scale)


def _pd_solve(H, g):
    """``-H^{-1} g`` for the symmetric ``H`` when it is positive definite, else ``None``."""
    try:
        c = linalg.cho_factor(H, lower=True, check_finite=False)
    except linalg.LinAlgError:
        return None
    return -linalg.cho_solve(c, g, check_finite=False)


def _shifted_solve(H, g):
    """``-(H + mu I)^{-1} g`` with the smallest ``mu >= 0`` (to 10 %) that makes it positive definite: a
    Levenberg step where the model is not convex."""
    lam = float(linalg.eigh(H, eigvals_only=True, subset_by_index=[0, 0], driver="evr")[0])
    scale = max(np.abs(np.diag(H)).max(), 1e-300)
    mu = max(-1.1 * lam, 0.0) + 1e-8 * scale
    for _ in range(60):
        d = _pd_solve(H + mu * np.eye(H.shape[0]), g)
        if d is not None:
            return d
        mu *= 2.0
    raise SolverError("no positive-definite shift of the Hessian model found")


STEP_CAP = 0.5  # the most a step may shrink any U_l, in its own metric
GROW_CAP = 3.0  # the most a step may grow any U_l, in its own metric


def _step_cap(action: Action, Us, d, most: float = STEP_CAP, grow: float = GROW_CAP) -> float:
    """The largest ``t <= 1`` for which every ``U_l`` shrinks by at most ``most`` and grows by at most ``grow``
    in its own metric: the eigenvalues of ``L_l^{-1} t dU_l L_l^{-T}`` (``U_l = L_l L_l^T``) lie in
    ``[-most, grow]``.  A step stays well inside the positive-definite cone, where the entropy's
    log-determinants keep the quadratic model meaningful, while an order parameter that must grow far from
    the GP point (tenfold and more at small widths) gets there in a few steps."""
    t = 1.0
    for U, dU in zip(Us, action.packing.unpack(d), strict=True):
        Lc = linalg.cholesky(U, lower=True, check_finite=False)
        M = linalg.solve_triangular(Lc, linalg.solve_triangular(Lc, dU, lower=True).T, lower=True)
        w = np.linalg.eigvalsh(0.5 * (M + M.T))
        if -w[0] * t > most:
            t = most / -w[0]
        if w[-1] * t > grow:
            t = grow / w[-1]
    return t


def _line_search(ev: _Evaluator, point: _Point, d, gmax: float):
    """The step ``t d`` from ``point``: ``t`` capped (:func:`_step_cap`), then halved until the trial is accepted
    (module docstring of :func:`_quasi_newton`).  Returns ``(accepted point or None, t)``."""
    slope = float(point.g @ d)
    if not slope < 0:
        return None, 0.0
    t = _step_cap(ev.action, point.Us, d)
    while t > 1e-10:
        trial = ev(point.u + t * d)
        if trial is not None and (
            trial.f <= point.f + 1e-4 * t * slope
            or (trial.f <= point.f + 1e-12 * abs(point.f) and _grad_max(ev.action, trial.grads) < gmax)
        ):
            return trial, t
        t *= 0.5
    return None, t


def _psb_update(B_E, point: _Point, accepted: _Point):
    """Powell's symmetric Broyden update of the energy model: the least change (Frobenius) with ``B_E s`` equal
    to the energy gradient's change ``y`` over the step ``s`` (block ``U_1``)."""
    s1 = (accepted.u - point.u)[: B_E.shape[0]]
    r = (accepted.g_energy - point.g_energy) - B_E @ s1
    ss = float(s1 @ s1)
    if ss > 0:
        B_E = B_E + (np.outer(r, s1) + np.outer(s1, r)) / ss - (float(r @ s1) / ss**2) * np.outer(s1, s1)
    return B_E


def _quasi_newton(ev: _Evaluator, point: _Point, B_E, tol: float, max_iter: int):
    """Structured quasi-Newton steps from ``point`` until ``max |dS/dU| / N <= tol``.

    The metric is the entropy's Hessian, exact at every iterate (cheap: ``O(D^4)``), plus a model ``B_E`` of
    the energy's: it starts from ``B_E`` (a neighbouring solve's exact energy Hessian, or the data-fit part of
    the exact one here), follows the energy gradient's changes by Powell's symmetric Broyden updates, and is
    replaced by the exact energy Hessian at the current point when the gradient falls by less than a factor 3
    over two whole steps (linear convergence: the model is stale).  Each step is capped so that no ``U_l``
    shrinks by more than half or grows more than threefold in its own metric (:func:`_step_cap`), then halved
    until it is accepted: on sufficient decrease (Armijo, 1e-4) or, where
    the action's rounding hides the decrease, when the action is level to 1e-12 and the gradient smaller.
    Returns the last accepted point, the model, the number of steps and of exact Hessians computed.
    """
    action = ev.action
    steps, n_exact, since_exact = 0, 0, 0
    history = [_grad_max(action, point.grads)]
    full = []  # whether each step was taken whole (neither capped nor halved)
    for _ in range(max_iter):
        gmax = history[-1]
        if gmax <= tol:
            break
        if since_exact >= 2 and full[-2:] == [True, True] and history[-1] > history[-3] / 3.0:
            B_E = energy_hessian_packed(action, point.Us[0])
            n_exact += 1
            since_exact = 0
        H_ent = entropy_hessian(action, point.Us)
        H = _embed_energy(action, H_ent, B_E) * ev.scale
        d = _pd_solve(0.5 * (H + H.T), point.g)
        if d is None and since_exact > 0:
            # the model is not convex: its energy part may have drifted, so the exact one here first
            B_E = energy_hessian_packed(action, point.Us[0])
            n_exact += 1
            since_exact = 0
            H = _embed_energy(action, H_ent, B_E) * ev.scale
            d = _pd_solve(0.5 * (H + H.T), point.g)
        if d is None:
            d = _shifted_solve(0.5 * (H + H.T), point.g)
        accepted, t = _line_search(ev, point, d, gmax)
        if accepted is None:
            break
        B_E = _psb_update(B_E, point, accepted)
        point = accepted
        steps += 1
        since_exact += 1
        history.append(_grad_max(action, point.grads))
        full.append(t == 1.0)
    return point, B_E, steps, n_exact


def _min_eigenvalue(H):
    """Smallest eigenvalue of the symmetric ``H`` and, when it is positive, ``H``'s Cholesky factor.

    Positive definite: ``1 / lambda_max(H^{-1})`` by Lanczos iterations on the factor's solves (relative
    accuracy 1e-12, a few dozen solves instead of a full eigendecomposition); otherwise (or should Lanczos
    not converge) from the symmetric eigensolver.
    """
    try:
        factor = linalg.cho_factor(H, lower=True, check_finite=False)
    except linalg.LinAlgError:
        return float(linalg.eigh(H, eigvals_only=True, subset_by_index=[0, 0], driver="evr")[0]), None
    n = H.shape[0]
    if n > 50:
        op = sparse_linalg.LinearOperator((n, n), matvec=lambda v: linalg.cho_solve(factor, v, check_finite=False))
        try:
            top = sparse_linalg.eigsh(op, k=1, which="LA", tol=1e-12, v0=np.ones(n), return_eigenvectors=False)
            return float(1.0 / top[0]), factor
        except sparse_linalg.ArpackNoConvergence:
            pass
    return float(linalg.eigh(H, eigvals_only=True, subset_by_index=[0, 0], driver="evr")[0]), factor


POLISHED = 1e-4  # the certificate's Newton steps stop at this fraction of tol (1e-12 at the default)


def _descend(ev: _Evaluator, point: _Point, B_E, tol: float, max_iter: int):
    """Quasi-Newton steps (:func:`_quasi_newton`) to ``tol``; should they stall, again from the exact energy
    Hessian at the point reached (at most twice).  Returns ``(point, B_E, steps, exact Hessians)``."""
    action = ev.action
    steps, n_hess = 0, 0
    for _ in range(3):
        if B_E is None:
            B_E = energy_hessian_packed(action, point.Us[0])
            n_hess += 1
        point, B_E, k, n_exact = _quasi_newton(ev, point, B_E, tol, max_iter - steps)
        steps += k
        n_hess += n_exact
        if _grad_max(action, point.grads) <= tol or steps >= max_iter:
            break
        B_E = None  # the model stalled: the exact energy Hessian here
    return point, B_E, steps, n_hess


def _polish(ev: _Evaluator, point: _Point, factor, tol: float, most: int = 4):
    """Newton steps with the certificate's Cholesky ``factor`` from ``point`` while each lowers the gradient,
    until it is within ``POLISHED * tol`` or a step lowers it less than tenfold (rounding reached).  Returns the
    last point and the number of steps taken."""
    action, nn = ev.action, 0
    for _ in range(most):
        g0 = _grad_max(action, point.grads)
        if g0 <= POLISHED * tol:
            break
        trial = ev(point.u - linalg.cho_solve(factor, point.g, check_finite=False))
        if trial is None or not _grad_max(action, trial.grads) < g0:
            break
        point, nn = trial, nn + 1
        if _grad_max(action, trial.grads) > 0.1 * g0:
            break
    return point, nn


def _bfgs_solve(action: Action, Us0, tol: float, max_iter: int, energy_hint=None, certify: bool = True):
    """The default method (module docstring).  Returns ``(Us, S, grads, n_steps, n_newton, extra)`` with
    ``extra`` holding the certificate: the scaled Hessian, its smallest eigenvalue, the energy Hessian, how far
    the Newton steps taken with it moved ``U`` and the counts of gradients and Hessians."""
    ev = _Evaluator(action)
    pk = action.packing
    point = ev(pk.pack(Us0))
    if point is None:
        raise NotPositiveDefiniteError("the starting point is outside the positive-definite cone")
    # without a neighbour's energy Hessian the model starts from the data-fit part of the exact one (cheap, one
    # evaluation's cost); the rank-two updates learn the log-determinant's part along the way (one exact
    # Hessian fewer than starting from the exact Hessian or from zero: benchmarks/README.md)
    B_E = energy_hint if energy_hint is not None else energy_hessian_fit(action, point.Us[0])
    point, B_E, steps, n_hess = _descend(ev, point, B_E, tol, max_iter)
    extra = {"n_grad": ev.n, "n_hessian": n_hess, "step": 0.0, "hessian": None, "min_eig": None, "energy": None}
    if not certify:
        return point.Us, point.S, point.grads, steps, 0, extra
    # the certificate: the exact Hessian where the gradient met the tolerance, then Newton steps with it to
    # rounding (``certificate_step`` records how far they moved U); should they leave the gradient above tol
    # (they lower it or are refused), quasi-Newton steps with it as the model and a new certificate there
    nn = 0
    for attempt in range(2):
        try:
            H_E = energy_hessian_packed(action, point.Us[0])
        except NotPositiveDefiniteError:
            break
        H = _embed_energy(action, entropy_hessian(action, point.Us), H_E) * ev.scale
        n_hess += 1
        H = 0.5 * (H + H.T)
        extra["hessian"], extra["energy"] = H, H_E
        extra["min_eig"], factor = _min_eigenvalue(H)
        if factor is None:
            break
        at = point
        point, k = _polish(ev, point, factor, tol)
        nn += k
        extra["step"] = max(float(np.abs(a - b).max()) for a, b in zip(point.Us, at.Us, strict=True))
        if _grad_max(action, point.grads) <= tol or attempt == 1 or steps >= max_iter:
            break
        point, _, k, n_exact = _descend(ev, point, H_E, tol, max_iter - steps)
        steps += k
        n_hess += n_exact
    extra["n_grad"], extra["n_hessian"] = ev.n, n_hess
    return point.Us, point.S, point.grads, steps, nn, extra


def _checked_settings(action, tol, max_iter, newton_steps, n_restarts, method, hint):
    """:func:`solve`'s settings checked (``ValueError``/``TypeError`` naming the setting), defaults filled."""
    tol = check_tolerance(tol)
    if max_iter is None:
        max_iter = 500 if method == "bfgs" else 20000
    max_iter = check_count(max_iter, "max_iter", 1)
    newton_steps = check_count(newton_steps, "newton_steps", 0)
    n_restarts = check_count(n_restarts, "n_restarts", 0)
    if not isinstance(action, Action):
        raise TypeError(f"solve needs an attention_paths.Action, got {type(action).__name__}")
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if hint is not None:
        n1 = action.packing.sizes[0]
        hint = np.asarray(hint, dtype=float)
        if hint.shape != (n1, n1) or not np.isfinite(hint).all():
            raise ValueError(
                f"hessian_hint must be a finite [{n1}, {n1}] energy Hessian (SolveResult.energy_hessian of a solve "
                f"with the same paths), got shape {hint.shape}"
            )
    return tol, max_iter, newton_steps, n_restarts, hint


METHODS = ("bfgs", "lbfgs-newton")


def solve(
    action: Action,
    init: Sequence[np.ndarray] | None = None,
    *,
    tol: float = TOLERANCE,
    max_iter: int | None = None,
    newton_steps: int = 8,
    n_restarts: int = 1,
    seed: int = 0,
    check_hessian: bool = True,
    raise_on_failure: bool = True,
    method: str = "bfgs",
    hessian_hint: np.ndarray | None = None,
) -> SolveResult:
    """Minimise the reduced action over positive-definite ``U_1, ..., U_L`` (spec T§12.2).

    Parameters
    ----------
    action : the :class:`~attention_paths.theory.action.Action` to minimise
    init : starting point ``[U_1, ..., U_L]`` (default: the GP point)
    tol : convergence threshold on ``max |dS/dU_l| / N_max``
    max_iter : iteration cap: quasi-Newton steps (default 500) or, for ``"lbfgs-newton"``, L-BFGS iterations
        (default 20,000)
    newton_steps : cap on Newton polishing steps (``"lbfgs-newton"``)
    n_restarts : verification restarts from the GP point perturbed by random PSD matrices
        (seeded by ``seed``); the lowest action wins and disagreements are recorded and warned about
    check_hessian : compute the Hessian at the solution and require it to be positive definite
    raise_on_failure : raise :class:`SolverError` instead of returning ``converged=False``
    method : ``"bfgs"`` (default) or ``"lbfgs-newton"`` (the reference; module docstring)
    hessian_hint : for ``"bfgs"``, the energy Hessian of a nearby solve (``SolveResult.energy_hessian``,
        packed [n_1, n_1]) to start the metric from instead of computing it at ``init``

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

    The reference method reaches the same point:

    >>> ref = ap.solve(ap.Action(ap.PathKernel(X), y, 0.5, ap.Architecture.uniform((2, 2), 10)), method="lbfgs-newton")
    >>> bool(np.abs(ref.U - res.U).max() < 1e-10)
    True

    Long: its docstring (parameters and runnable examples) is most of it; the body is a dozen lines.
    """
    tol, max_iter, newton_steps, n_restarts, hessian_hint = _checked_settings(
        action, tol, max_iter, newton_steps, n_restarts, method, hessian_hint
    )
    k = action.kernel
    with blas_threads_for(k.P, k.P * k.N0 * k.n_paths):
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
            method=method,
            hint=hessian_hint,
        )


def _one(action, Us0, tol, max_iter, newton_steps, method, hint, check_hessian):
    if method == "bfgs":
        return _bfgs_solve(action, Us0, tol, max_iter, hint, certify=check_hessian)
    Us, S, grads, nit, nn = _single_solve(action, Us0, tol, max_iter, newton_steps)
    return Us, S, grads, nit, nn, None


def _check_start(action, init) -> list:
    """The starting point (default: the GP point), refused when not positive definite or numerically singular."""
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
    return Us0


def _restart(action, best, rng, one) -> tuple[dict, tuple]:
    """One verification restart from a random PSD perturbation of the GP point: its record, and the better of
    it and ``best`` (``(Us, S, grads, nit, nn, extra)``), warning when they disagree."""
    Us, S = best[0], best[1]
    other = one(random_psd_start(action, rng))
    Ur, Sr, gr = other[:3]
    dU = max(np.abs(a - b).max() for a, b in zip(Ur, Us, strict=True))
    record = {
        "action": float(Sr),
        "delta_action_rel": float(abs(Sr - S) / max(1.0, abs(S))),
        "max_abs_dU": float(dU),
        "grad_max": float(_grad_max(action, gr)),
    }
    if record["delta_action_rel"] > 1e-10 or dU > 1e-6:
        warnings.warn(
            f"restart reached a different stationary point (dS/|S|={record['delta_action_rel']:.2e}, "
            f"max|dU|={dU:.2e}); keeping the lower action",
            RuntimeWarning,
            stacklevel=3,
        )
        if Sr < S:
            return record, (Ur, Sr, gr, best[3], best[4], other[5])  # the first solve's counts, as before
    return record, best


def _certificate(action, Us, extra, method):
    """``(min_eig, hessian, energy_hessian)`` at the solution: the quasi-Newton solve's own, else computed."""
    if extra is not None and extra["hessian"] is not None:
        return extra["min_eig"], extra["hessian"], extra["energy"]
    try:
        H = action.hessian(Us, method="reference" if method == "lbfgs-newton" else "analytic")
    except NotPositiveDefiniteError as err:
        raise SolverError(
            f"the solution lies on the edge of the positive-definite cone ({err}), so its Hessian "
            f"cannot be evaluated; the widths {action.arch.widths} or the temperature "
            f"{action.tau} are probably out of the theory's range for these data"
        ) from None
    return float(np.linalg.eigvalsh(H / action.arch.n_max).min()), None, None


def _message(action, S, gmax, tol, min_eig, finite, converged) -> str:
    if not finite:
        return (
            f"not converged: the action ({S}) or its gradient (max {gmax}) is not finite -- the features are "
            "probably too large (or too small) for float64; rescale them"
        )
    if converged:
        return "converged"
    return (
        f"not converged: max|dS/dU|/N = {gmax:.3e} (tol {tol:.1e}), Hessian min eigenvalue = {min_eig}; "
        f"if the solve is not merely short of iterations, the widths {action.arch.widths} or the temperature "
        f"{action.tau} may be out of the theory's range for these data"
    )


def _solve(
    action, init, *, tol, max_iter, newton_steps, n_restarts, seed, check_hessian, raise_on_failure, method, hint
):
    one = lambda Us0, h=None: _one(action, Us0, tol, max_iter, newton_steps, method, h, check_hessian)  # noqa: E731
    best = one(_check_start(action, init), hint)
    rng = np.random.default_rng(seed)
    restarts = []
    for _ in range(n_restarts):
        record, best = _restart(action, best, rng, one)
        restarts.append(record)
    Us, S, grads, nit, nn, extra = best
    gmax = _grad_max(action, grads)
    finite = bool(np.isfinite(S) and np.isfinite(gmax))
    min_eig = hessian = energy = None
    if check_hessian and finite:
        min_eig, hessian, energy = _certificate(action, Us, extra, method)
    converged = finite and gmax <= tol and (min_eig is None or min_eig > 0)
    msg = _message(action, S, gmax, tol, min_eig, finite, converged)
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
        method=method,
        n_grad=extra["n_grad"] if extra else 0,
        n_hessian=(extra["n_hessian"] if extra else nn + int(min_eig is not None)),
        certificate_step=extra["step"] if extra else 0.0,
        hessian=hessian,
        energy_hessian=energy,
    )
    if not converged and raise_on_failure:
        raise SolverError(msg)
    return result


def solve_continuation(
    actions: Iterable[Action], *, progress: bool = False, desc: str = "solve", **kwargs
) -> list[SolveResult]:
    """Solve a sequence of actions in the given order, warm-starting each from the previous solution.

    Order the sequence from the GP side (largest width, or highest temperature) towards the
    strongly renormalised side.  Each solve of the default method starts its metric from the previous
    solve's certificate (the energy Hessian; the entropy part is recomputed exactly), so a step along the
    sequence costs one exact Hessian and a few gradients.  Keyword arguments go to :func:`solve`.
    """
    actions = list(actions)
    results, prev, hint = [], None, None
    for action in progress_bar(actions, desc=desc, disable=not progress):
        res = solve(action, init=prev, hessian_hint=hint, **kwargs)
        results.append(res)
        prev = res.Us
        hint = (
            res.energy_hessian
            if res.energy_hessian is not None and res.energy_hessian.shape == (action.packing.sizes[0],) * 2
            else None
        )
        res.hessian = res.energy_hessian = None  # handed on; not kept in every result (n^2 floats each)
    return results
