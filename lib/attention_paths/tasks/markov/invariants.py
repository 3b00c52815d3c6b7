"""The invariants of an :class:`~.result.MarkovResult` (its ``check`` method), checked by its reader: every
sweep's widths increasing and matching its arrays, its ``U`` finite, symmetric and positive semi-definite over
the network's paths, the head scores those of ``U`` at the smallest width, accuracies in [0, 100], every kernel
present, and every sampling run filed under its own network, width and sampler with arrays of the test set's
length and a ``U_hat`` over its network's paths."""

from __future__ import annotations

import numpy as np

from attention_paths.base import invariants as inv
from attention_paths.tasks.markov.task import MAIN_PATHS
from attention_paths.theory.scores import head_scores
from attention_paths.theory.solver import TOLERANCE

__all__ = ["check_hmc", "KERNELS"]

# the kernels a result holds on its headline's rows (arrays kernel_<name>)
KERNELS = ("GP", "renormalised") + tuple(f"C_{p}" for p in MAIN_PATHS)


def _sweep(folder, name: str, sw, n_paths: int | None = None) -> None:
    n = len(inv.increasing(folder, f"{name}.widths", sw.widths))
    U = np.asarray(sw.U)
    inv.order_parameter(folder, f"{name}.U", U, n_paths or (U.shape[-1] if U.ndim == 3 else -1), (n,))
    inv.accuracy(folder, f"{name}.accuracy", sw.accuracy, (n,))
    inv.accuracy(folder, f"{name}.gp_accuracy", sw.gp_accuracy)
    for what in ("grad_max", "hessian_min_eig", "iterations"):
        inv.finite(folder, f"{name}.{what}", getattr(sw, what), (n,))
    inv.converged(folder, f"{name}.grad_max", sw.grad_max, TOLERANCE, sw.hessian_min_eig)


def _seed_set(folder, k: int, s) -> None:
    name = f"sets[{k}]"
    heads = tuple(len(h) for h in s.head_scores)
    _sweep(folder, f"{name}.sweep", s.sweep, int(np.prod(heads)) if heads else None)
    _sweep(folder, f"{name}.noisy_sweep", s.noisy_sweep)
    got = [np.asarray(h, float) for h in s.head_scores]
    want = head_scores(np.asarray(s.sweep.U)[0], heads)
    if len(got) != len(want) or any(
        g.shape != w.shape or not np.allclose(g, w, rtol=1e-9, atol=1e-12) for g, w in zip(got, want, strict=True)
    ):
        inv.violation(folder, f"{name}.head_scores", "are not the head scores of U at the smallest width")
    n_noisy = len(s.noisy_sweep.widths)
    inv.accuracy(folder, f"{name}.gp", [s.gp_all, s.gp_g, s.gp_gd])
    inv.accuracy(folder, f"{name}.alone_network", s.alone_network, (len(MAIN_PATHS),))
    inv.accuracy(folder, f"{name}.alone_mask", s.alone_mask, (len(MAIN_PATHS),))
    inv.accuracy(folder, f"{name}.noisy_diagonal_only", s.noisy_diagonal_only, (n_noisy,))
    inv.accuracy(folder, f"{name}.noisy_equalised_diagonal", s.noisy_equalised_diagonal, (n_noisy,))


def _sampled(folder, res, key: str, r) -> None:
    name = f"sampled[{key}]"
    if key != r.key:
        inv.violation(folder, name, f"holds the run {r.key!r} (network {r.network}, N = {r.N}, {r.kind})")
    sweep = res.headline.sweep_of(r.network)
    if int(r.N) not in [int(w) for w in sweep.widths]:
        inv.violation(folder, f"{name}.N", f"= {r.N} is not a width of the {r.network} sweep")
    n_paths = np.asarray(sweep.U).shape[-1]
    inv.order_parameter(folder, f"{name}.U_hat", r.U_hat, n_paths)
    inv.finite(folder, f"{name}.U_hat_mcse", r.U_hat_mcse, (n_paths, n_paths))
    inv.accuracy(folder, f"{name}.accuracy", r.accuracy)
    P_test = int(res.config.P_test)
    for what in ("mean", "var", "mcse"):
        inv.finite(folder, f"{name}.{what}", getattr(r, what), (P_test,))
    for what in ("var", "mcse", "U_hat_mcse"):
        inv.nonnegative(folder, f"{name}.{what}", getattr(r, what))


def check_hmc(res, folder=None) -> None:
    """Raise :class:`~attention_paths.base.invariants.InvariantError` naming ``folder``, the field and the problem
    when ``res`` breaks an invariant of its type."""
    if not res.sets:
        inv.violation(folder, "sets", "is empty (the reference's seed set comes first)")
    for k, s in enumerate(res.sets):
        _seed_set(folder, k, s)
    missing = [k for k in KERNELS if k not in res.kernels]
    if missing:
        inv.violation(folder, "kernels", f"lack {missing}")
    n_sub = np.asarray(res.kernel_subset).size
    for k, K in res.kernels.items():
        inv.finite(folder, f"kernels[{k}]", K, (n_sub, n_sub))
        inv.symmetric(folder, f"kernels[{k}]", K)
    for k, a in res.alignment.items():
        inv.finite(folder, f"alignment[{k}]", a, (None,))
    for key, r in res.sampled.items():
        _sampled(folder, res, key, r)
