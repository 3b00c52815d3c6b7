"""The Theory chapter's width sweep on the toy problem (:func:`theory_demo`): its sizes per scale, result
type and results folder, written (:func:`theory_summary`) and read back (:func:`read_theory_run`) by the
declared serialiser (:mod:`attention_paths.base.serialise`)."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field

import numpy as np

from attention_paths.base import validate
from attention_paths.base.config import get_scale
from attention_paths.base.fields import check_fields
from attention_paths.base.serialise import Stored, read_checked, to_folder
from attention_paths.tasks.toy.problem import ToyProblem, make_toy_problem
from attention_paths.theory.action import Action
from attention_paths.theory.architecture import Architecture
from attention_paths.theory.kernels import PathKernel, gp_kernel, renormalized_kernel
from attention_paths.theory.predictor import kernel_alignment, predict
from attention_paths.theory.solver import SolveResult, solve_continuation

__all__ = ["TheoryDemoConfig", "THEORY_DEMO", "TheoryDemoResult", "theory_demo", "theory_summary", "read_theory_run"]


# The Theory chapter's problem: one path (index 3) carries the label; see book/theory.md.
@dataclass(frozen=True)
class TheoryDemoConfig:
    """Sizes of the Theory chapter's width sweep (:func:`theory_demo`): the toy problem, ``tau``, the widths
    (largest first: the continuation order) and the solver's restarts per width."""

    # each field's range, checked at construction with its type (base.fields.check_fields)
    RANGES = {
        "P": ">= 1",
        "M": ">= 1",
        "T": ">= 1",
        "n0": ">= 1",
        "heads": ">= 1",
        "beta": "> 0",
        "teacher_path": ">= 0",
        "tau": "> 0",
        "seed": ">= 0",
        "widths": ">= 1",
        "n_restarts": ">= 0",
    }

    P: int = 150
    M: int = 2000
    n0: int = 24
    T: int = 10
    heads: tuple = (2, 2)
    beta: float = 4.0
    teacher_path: int = 3
    tau: float = 0.5
    seed: int = 1
    widths: tuple = (10000, 3000, 1000, 300, 100, 30, 10, 3)
    n_restarts: int = 1

    def __post_init__(self):
        check_fields(self)


THEORY_DEMO = {
    "quick": TheoryDemoConfig(),
    "paper": TheoryDemoConfig(widths=(100000, 30000, 10000, 3000, 1000, 300, 100, 30, 10, 3), n_restarts=3),
}


@dataclass(kw_only=True)
class TheoryDemoResult:
    """The Theory chapter's width sweep (:func:`theory_demo`); per-width arrays are in ``widths`` order,
    largest first (the continuation order), with ``Pi`` paths and ``P`` training examples.

    ``results``: the solver's :class:`~attention_paths.theory.solver.SolveResult` per width; ``U`` (n_width,
    Pi, Pi); ``deviation`` = max ``|U - I|``; test ``accuracy`` (%) and ``gen_error`` of the mean predictor,
    and the GP limit's (``gp_accuracy``, ``gp_gen_error``); the solver's final ``grad_max``,
    ``hessian_min_eig`` and ``n_iter``; ``K_gp`` and ``K_renorm`` (P, P): the GP kernel and the renormalised
    one at ``N = 10``, and their ``alignment_*`` (label overlaps of the first 20 eigenvectors).  Live only (``None``
    when read back from a results folder): ``problem`` and ``results``; ``wall_seconds`` and ``provenance`` exist
    once written."""

    scale: str
    config: dict
    problem: ToyProblem | None = field(default=None, repr=False)
    results: list[SolveResult] | None = field(default=None, repr=False)
    widths: np.ndarray
    U: np.ndarray
    deviation: np.ndarray
    accuracy: np.ndarray
    gen_error: np.ndarray
    gp_accuracy: float
    gp_gen_error: float
    grad_max: np.ndarray
    hessian_min_eig: np.ndarray
    n_iter: np.ndarray
    solve_seconds: float
    K_gp: np.ndarray
    K_renorm: np.ndarray
    alignment_gp: np.ndarray
    alignment_renorm: np.ndarray
    wall_seconds: float | None = None
    provenance: dict | None = None

    # how the serialiser stores it: the per-width numbers readable in summary.json, U and the kernels in arrays.npz
    EXPERIMENT = "theory"
    STORED = {
        "problem": Stored(to="live"),
        "results": Stored(to="live"),
        **{k: Stored(to="json") for k in ("widths", "deviation", "accuracy", "gen_error", "grad_max")},
        **{k: Stored(to="json") for k in ("hessian_min_eig", "n_iter")},
        "gp_accuracy": Stored(key="gp_accuracy_percent"),
        "gp_gen_error": Stored(key="gp_generalization_error"),
        "wall_seconds": Stored(none="omit"),
        "provenance": Stored(none="omit"),
    }

    def check(self, folder=None) -> None:
        """Raise ``ValueError`` naming ``folder`` and the field when the sweep breaks an invariant: one ``U``
        (Pi, Pi), symmetric with a positive diagonal, and one finite accuracy in [0, 100] % per width."""
        n, folder = len(self.widths), "<result>" if folder is None else folder
        Pi = self.U.shape[-1] if np.ndim(self.U) == 3 else 0
        validate.order_parameters(folder, "U", self.U, (n, Pi, Pi))
        for name in ("accuracy", "deviation", "gen_error", "grad_max", "hessian_min_eig", "n_iter"):
            validate.finite(folder, name, getattr(self, name), (n,))
        validate.accuracies(folder, "accuracy", self.accuracy)
        validate.accuracies(folder, "gp_accuracy_percent", [self.gp_accuracy])


def theory_demo(scale: str | None = None, progress: bool = False) -> TheoryDemoResult:
    """Width sweep of the order parameter on the Theory chapter's toy problem (:class:`TheoryDemoResult`):
    the solver results (largest width first), accuracies, deviations from the GP point and the kernels at
    the smallest non-trivial width."""
    scale = get_scale(scale)
    cfg = THEORY_DEMO[scale]
    tau, widths, heads = cfg.tau, cfg.widths, cfg.heads
    prob = make_toy_problem(
        P=cfg.P, M=cfg.M, n0=cfg.n0, T=cfg.T, heads=heads, beta=cfg.beta, teacher_path=cfg.teacher_path, seed=cfg.seed
    )
    kernel = PathKernel(prob.features_train)
    t0 = time.perf_counter()
    actions = [Action(kernel, prob.y_train, tau, Architecture.uniform(heads, N)) for N in widths]
    results = solve_continuation(actions, n_restarts=cfg.n_restarts, progress=progress, desc="widths")
    solve_seconds = time.perf_counter() - t0
    Pi = kernel.n_paths
    gp_pred = predict(np.eye(Pi), prob.features_train, prob.y_train, tau, prob.features_test)
    preds = [predict(r.U, prob.features_train, prob.y_train, tau, prob.features_test) for r in results]
    i10 = list(widths).index(10)
    K_gp = gp_kernel(prob.features_train)
    K_renorm = renormalized_kernel(results[i10].U, prob.features_train)
    return TheoryDemoResult(
        scale=scale,
        config=asdict(cfg),
        problem=prob,
        results=results,
        widths=np.array(widths, dtype=float),
        U=np.array([r.U for r in results]),
        deviation=np.array([np.abs(r.U - np.eye(Pi)).max() for r in results]),
        accuracy=np.array([p.accuracy(prob.y_test) for p in preds]),
        gen_error=np.array([p.generalization_error(prob.y_test) for p in preds]),
        gp_accuracy=gp_pred.accuracy(prob.y_test),
        gp_gen_error=gp_pred.generalization_error(prob.y_test),
        grad_max=np.array([r.grad_max for r in results]),
        hessian_min_eig=np.array([r.hessian_min_eig for r in results]),
        n_iter=np.array([r.n_iter for r in results]),
        solve_seconds=solve_seconds,
        K_gp=K_gp,
        K_renorm=K_renorm,
        alignment_gp=kernel_alignment(K_gp, prob.y_train, k=20),
        alignment_renorm=kernel_alignment(K_renorm, prob.y_train, k=20),
    )


def theory_summary(res: TheoryDemoResult) -> tuple[dict, dict]:
    """``(summary, arrays)`` for ``summary.json`` / ``arrays.npz`` (:func:`~attention_paths.base.serialise.to_folder`
    of the declared :class:`TheoryDemoResult`): the per-width accuracies, deviations from the GP point and the
    solver's checks in the summary; ``U`` (n_width, Pi, Pi), the kernels and their alignments as arrays."""
    return to_folder(res)


def read_theory_run(folder, summary: dict, arrays: dict) -> TheoryDemoResult:
    """The :class:`TheoryDemoResult` of a results folder written by :func:`theory_summary` (read by
    ``runs.experiments.load_run``), its invariants checked (:meth:`TheoryDemoResult.check`)."""
    return read_checked(TheoryDemoResult, summary, arrays, folder)  # with the type's invariants (issue 37 §2)
