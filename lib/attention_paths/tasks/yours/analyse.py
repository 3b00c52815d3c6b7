"""The theory's questions asked of a reader's own network (issue 51 §2): the ``analyse`` experiment.

``python -m attention_paths analyse --model FILE_OR_ENTRY_POINT --data FILE --out DIR`` reads the model through
the adapter (:func:`attention_paths.adapt`), extracts the path features of the data's training and evaluation
sets, and solves the theory on a widths x temperatures grid: the order parameter U* at every point (T§9), the
renormalised and GP accuracies on every evaluation set, the head scores (T§14.1) and the kernel-target alignment
of the renormalised kernel against the GP kernel's.  With no ``--model`` / ``--data`` it analyses the example of
"Your own network" (:mod:`.example`).  One results folder, read back by
:func:`attention_paths.runs.experiments.load_run` (:class:`AnalyseResult`).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field, replace

import numpy as np

from attention_paths.base import invariants as inv
from attention_paths.base.config import get_scale
from attention_paths.base.fields import check_fields
from attention_paths.base.progress import progress_bar
from attention_paths.base.serialise import Stored, read_checked, to_folder
from attention_paths.tasks.yours.example import example_data
from attention_paths.tasks.yours.inputs import UserData, load_data, load_model
from attention_paths.theory.action import Action
from attention_paths.theory.adapter import TheoryView, adapt
from attention_paths.theory.architecture import Architecture
from attention_paths.theory.kernels import PathKernel, gp_kernel, renormalized_kernel
from attention_paths.theory.predictor import kernel_target_alignment, predict
from attention_paths.theory.scores import head_labels, head_scores
from attention_paths.theory.solver import TOLERANCE, solve_continuation

__all__ = [
    "AnalyseConfig",
    "ANALYSE",
    "AnalyseResult",
    "Extracted",
    "extract_user",
    "run_analyse",
    "analyse_summary",
    "read_analyse_run",
]

EXAMPLE_MODEL = "attention_paths.tasks.yours.example:example_model"


@dataclass(frozen=True)
class AnalyseConfig:
    """The ``model`` (a file or ``module:function``), the ``data`` (an ``.npz``; ``None``: the example's), the
    grid's ``widths`` and ``taus``, and ``n_theory``: the first ``n_theory`` training examples enter the theory
    (``None``: all of them)."""

    RANGES = {"widths": ">= 1", "taus": "> 0", "n_theory": ">= 2"}

    model: str
    data: str | None
    widths: tuple
    taus: tuple
    n_theory: int | None = None

    def __post_init__(self):
        check_fields(self)
        for name in ("widths", "taus"):
            values = getattr(self, name)
            if not values or len(set(values)) != len(values):
                raise ValueError(f"AnalyseConfig.{name} must be one or more distinct values, got {values}")


ANALYSE = {
    "quick": AnalyseConfig(model=EXAMPLE_MODEL, data=None, widths=(10, 100, 1000), taus=(0.1, 0.5, 1.0), n_theory=200),
    "paper": AnalyseConfig(
        model=EXAMPLE_MODEL,
        data=None,
        widths=(10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000),
        taus=(0.05, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5),
        n_theory=600,
    ),
}


@dataclass
class Extracted:
    """The path features of a model's data (heads per layer ``heads``): ``X`` (training, [P, N0, Pi]), ``y``, the
    evaluation sets' inputs ``inputs``, features ``X_sets`` and labels ``y_sets``, the network's own outputs
    ``outputs`` (per set, the training set's under ``"train"``) and the largest relative difference between its
    output and its path sum (``check``)."""

    heads: tuple
    X: np.ndarray
    y: np.ndarray
    inputs: dict
    X_sets: dict
    y_sets: dict
    outputs: dict
    check: float


def extract_user(
    model, data: UserData, n_theory: int | None = None, progress: bool = False
) -> tuple[TheoryView, Extracted]:
    """The theory view of ``model`` (its output checked against its path sum,
    :meth:`~attention_paths.TheoryView.check`) and the path features and outputs of ``data``
    (:class:`~.inputs.UserData`)."""
    view = adapt(model)
    n = len(data.x) if n_theory is None else min(int(n_theory), len(data.x))
    x, y = data.x[:n], data.y[:n]
    if len(np.unique(y)) < 2:
        raise ValueError(f"the first {n} training labels are all {y[0]:+g}; the theory needs both classes")
    check = view.check(x[:256])
    sets = {"train": (x, y), **data.sets}
    X, outputs = {}, {}
    for name, (xs, _) in progress_bar(list(sets.items()), desc="features", disable=not progress):
        X[name], outputs[name] = view.features(xs), view.outputs(xs)
    X_train = X.pop("train")
    inputs = {s: xs for s, (xs, _) in data.sets.items()}
    y_sets = {s: ys for s, (_, ys) in data.sets.items()}
    return view, Extracted(view.heads, X_train, y, inputs, X, y_sets, outputs, check)


def _accuracy(out, y) -> float:
    return 100.0 * float(np.mean(np.where(np.asarray(out) > 0, 1.0, -1.0) == y))


@dataclass(kw_only=True)
class AnalyseResult:
    """The theory on a reader's network: the order parameter ``U`` [nT, nN, Pi, Pi] on the grid (``taus`` x
    ``widths``, ascending), the solver's largest final gradient and iterations (``solver``), the renormalised
    ``accuracy`` ({set: [nT, nN]}, %), the GP limit's ``gp_accuracy`` ({set: [nT]}), the network's own accuracy,
    the head scores [nT, nN, heads] (T§14.1, layer by layer), the renormalised kernel's alignment with the
    training labels [nT, nN] and the GP kernel's, the gradient-descent order parameter ``U_gd`` and the heads'
    value norms; ``model`` describes what the adapter read."""

    scale: str
    config: dict
    model: dict
    heads: tuple[int, ...]
    widths: np.ndarray
    taus: np.ndarray
    U: np.ndarray
    solver: dict[str, np.ndarray]
    accuracy: dict[str, np.ndarray]
    gp_accuracy: dict[str, np.ndarray]
    network_accuracy: dict[str, float]
    head_scores: np.ndarray
    alignment: np.ndarray
    gp_alignment: float
    U_gd: np.ndarray
    value_norms: np.ndarray
    seconds: dict
    wall_seconds: float | None = None
    provenance: dict | None = None
    extracted: Extracted | None = field(default=None, repr=False)

    EXPERIMENT = "analyse"
    STORED = {
        **{k: Stored(none="omit") for k in ("wall_seconds", "provenance")},
        "extracted": Stored(to="live"),
    }

    @property
    def head_names(self) -> list[str]:
        """The heads' labels "(layer)head", in the order of ``head_scores``' last axis."""
        return head_labels(self.heads)

    def check(self, folder=None) -> None:
        """Raise ``ValueError`` naming ``folder`` and the field when the stored numbers contradict each other: the
        order parameters symmetric positive semi-definite, accuracies in [0, 100], the grid's axes increasing,
        and the head scores those of the stored order parameters."""
        nT, nN = len(inv.increasing(folder, "taus", self.taus)), len(inv.increasing(folder, "widths", self.widths))
        n_paths = int(np.prod(self.heads))
        inv.order_parameter(folder, "U", self.U, n_paths, (nT, nN))
        inv.order_parameter(folder, "U_gd", self.U_gd, n_paths)
        inv.converged(folder, "solver.grad_max", self.solver["grad_max"], TOLERANCE)
        for s in self.accuracy:
            inv.accuracy(folder, f"accuracy[{s}]", self.accuracy[s], (nT, nN))
            inv.accuracy(folder, f"gp_accuracy[{s}]", self.gp_accuracy[s], (nT,))
        inv.finite(folder, "alignment", self.alignment, (nT, nN))
        scores = inv.finite(folder, "head_scores", self.head_scores, (nT, nN, sum(self.heads)))
        again = np.array([[np.concatenate(head_scores(U, self.heads)) for U in row] for row in self.U])
        if not np.allclose(scores, again, rtol=1e-9, atol=1e-12):
            inv.violation(folder, "head_scores", "are not the head scores of the stored order parameters")


def _config(scale: str, model, data, widths, taus, n_theory) -> dict:
    cfg = ANALYSE[scale]
    cfg = replace(
        cfg,
        model=cfg.model if model is None else str(model) if isinstance(model, str) else type(model).__name__,
        data=cfg.data if data is None else str(data) if not isinstance(data, dict) else "(arrays)",
        widths=tuple(sorted(int(n) for n in widths)) if widths else cfg.widths,
        taus=tuple(sorted(float(t) for t in taus)) if taus else cfg.taus,
        n_theory=cfg.n_theory if n_theory is None else int(n_theory),
    )
    return asdict(cfg)


def _grid(ex: Extracted, widths, taus, progress: bool) -> dict:
    kernel = PathKernel(ex.X)
    nT, nN, Pi = len(taus), len(widths), int(np.prod(ex.heads))
    U, grad, nit = np.zeros((nT, nN, Pi, Pi)), np.zeros((nT, nN)), np.zeros((nT, nN), dtype=int)
    acc = {s: np.zeros((nT, nN)) for s in ex.X_sets}
    gp = {s: np.zeros(nT) for s in ex.X_sets}
    bar = progress_bar(None, desc="theory grid", total=nT * nN, disable=not progress)
    for i, tau in enumerate(taus):
        actions = [Action(kernel, ex.y, tau, Architecture.uniform(ex.heads, N)) for N in reversed(widths)]
        for j, r in enumerate(solve_continuation(actions, n_restarts=0)[::-1]):
            U[i, j], grad[i, j], nit[i, j] = r.U, r.grad_max, r.n_iter
            for s, Xs in ex.X_sets.items():
                acc[s][i, j] = predict(r.U, ex.X, ex.y, tau, Xs, return_var=False).accuracy(ex.y_sets[s])
        for s, Xs in ex.X_sets.items():
            gp[s][i] = predict(np.eye(Pi), ex.X, ex.y, tau, Xs, return_var=False).accuracy(ex.y_sets[s])
        bar.update(nN)
    bar.close()
    return {"U": U, "solver": {"grad_max": grad, "n_iter": nit}, "accuracy": acc, "gp_accuracy": gp}


def run_analyse(
    scale: str | None = None,
    *,
    model=None,
    data=None,
    widths=None,
    taus=None,
    n_theory: int | None = None,
    progress: bool = False,
) -> AnalyseResult:
    """The theory of ``model`` on ``data`` over the grid ``widths`` x ``taus`` (defaults: the scale's
    :data:`ANALYSE`, the example network and task).  ``model``: an ``nn.Module``, a file or ``module:function``;
    ``data``: an ``.npz`` path or a dict of its arrays (:mod:`.inputs`)."""
    scale = get_scale(scale)
    cfg = _config(scale, model, data, widths, taus, n_theory)
    t0 = time.perf_counter()
    net = load_model(model if model is not None else cfg["model"])
    user = load_data(data if data is not None else example_data())
    view, ex = extract_user(net, user, cfg["n_theory"], progress)
    seconds = {"extract": time.perf_counter() - t0}
    t1 = time.perf_counter()
    grid = _grid(ex, cfg["widths"], cfg["taus"], progress)
    seconds["theory"] = time.perf_counter() - t1
    K_gp = gp_kernel(ex.X)
    align = np.array([[kernel_target_alignment(renormalized_kernel(U, ex.X), ex.y) for U in row] for row in grid["U"]])
    return AnalyseResult(
        scale=scale,
        config=cfg,
        model={
            "class": type(net).__name__,
            "modules": list(view.modules),
            "readout": view.readout,
            "path_sum_check": ex.check,
            "n_train": int(len(ex.y)),
        },
        heads=view.heads,
        widths=np.array(cfg["widths"], dtype=float),
        taus=np.array(cfg["taus"], dtype=float),
        **grid,
        network_accuracy={s: _accuracy(ex.outputs[s], ex.y_sets[s]) for s in ex.X_sets},
        head_scores=np.array([[np.concatenate(head_scores(U, view.heads)) for U in row] for row in grid["U"]]),
        alignment=align,
        gp_alignment=kernel_target_alignment(K_gp, ex.y),
        U_gd=view.gd_order_parameter(),
        value_norms=np.concatenate(view.value_norms),
        seconds=seconds,
        extracted=ex,
    )


def analyse_summary(res: AnalyseResult) -> tuple[dict, dict]:
    """``(summary, arrays)`` of an analysis, by the serialiser."""
    return to_folder(res)


def read_analyse_run(folder, summary: dict, arrays: dict) -> AnalyseResult:
    """The :class:`AnalyseResult` of a results folder, checked against its invariants."""
    return read_checked(AnalyseResult, summary, arrays, folder)
