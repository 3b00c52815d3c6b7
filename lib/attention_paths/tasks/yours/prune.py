"""Theory-guided pruning of a reader's own network (issue 51 §2): the ``prune`` experiment.

The theory's order parameter at one point ``(width, tau)`` scores every head (T§14.1); heads are removed one
after another by ascending score, by ascending value norm (the baseline) and in ``n_random`` random orders, and
each curve gives the network's accuracy and its drop with a paired standard error on every evaluation set, from
the per-path outputs (the pruned network's output is ``F @ c``, :meth:`attention_paths.TheoryView.coefficients`).
The network pruned by score at ``remove`` heads (default: the most the score order removes before its drop on the
first evaluation set exceeds ``threshold`` points) is stored as a state dict (``pruned_state``), and its own
forward pass on every evaluation set is checked against the curve's point (``pruned_check``, at most 1e-6).
"""

from __future__ import annotations

import copy
import time
from dataclasses import asdict, dataclass, field, replace

import numpy as np
import torch

from attention_paths.base import invariants as inv
from attention_paths.base.config import get_scale
from attention_paths.base.fields import check_fields
from attention_paths.base.serialise import Stored, read_checked, to_folder
from attention_paths.tasks.pruning.cumulative import (
    cumulative_order,
    heads_within,
    max_removable,
    order_p_value,
    pruning_curve,
    random_orders,
)
from attention_paths.tasks.pruning.result import (
    CumulativePruning,
    PruningCurve,
    RandomCurves,
    head_name,
    parse_head_name,
)
from attention_paths.tasks.yours.analyse import EXAMPLE_MODEL, Extracted, extract_user
from attention_paths.tasks.yours.example import example_data
from attention_paths.tasks.yours.inputs import load_data, load_model
from attention_paths.theory.action import Action
from attention_paths.theory.architecture import Architecture
from attention_paths.theory.kernels import PathKernel
from attention_paths.theory.paths import pruned_coefficients
from attention_paths.theory.scores import head_labels, head_scores
from attention_paths.theory.solver import TOLERANCE, solve

__all__ = ["PruneConfig", "PRUNE", "PruneResult", "run_prune", "prune_summary", "read_prune_run", "PRUNED_TOLERANCE"]

PRUNED_TOLERANCE = 1e-6  # the pruned model's own outputs against the curve's point, relative to the largest output


@dataclass(frozen=True)
class PruneConfig:
    """The ``model`` and ``data`` (as :class:`~.analyse.AnalyseConfig`), the theory point ``width``, ``tau``, the
    ``n_random`` random orders (drawn with ``seed``), and how many heads the saved network loses: ``remove``, or
    (``None``) the most the score order removes within ``threshold`` points of drop on the first evaluation set."""

    RANGES = {
        "width": ">= 1",
        "tau": "> 0",
        "n_theory": ">= 2",
        "n_random": ">= 0",
        "remove": ">= 0",
        "threshold": ">= 0",
        "seed": ">= 0",
    }

    model: str
    data: str | None
    width: int = 10
    tau: float = 0.5
    n_theory: int | None = None
    n_random: int = 50
    seed: int = 0
    remove: int | None = None
    threshold: float = 1.0

    def __post_init__(self):
        check_fields(self)


PRUNE = {
    "quick": PruneConfig(model=EXAMPLE_MODEL, data=None, n_theory=200, n_random=50),
    "paper": PruneConfig(model=EXAMPLE_MODEL, data=None, n_theory=600, n_random=200),
}


@dataclass(kw_only=True)
class PruneResult:
    """Pruning curves of a reader's network: the theory's ``U`` [Pi, Pi] at (``width``, ``tau``), its head
    ``scores`` and the heads' value norms (``{label: value}``), the ``curves`` ("theory score", "value norm"), the
    ``random`` orders' drops, the per-path outputs ``F`` ({set: [n, Pi]}) and labels ``y`` the curves come from,
    the ``removed`` heads of the saved network, its state dict ``pruned_state`` ({name: array}), its own outputs
    ``pruned_outputs`` ({set: [n]}) and their largest relative difference from the curve's point
    (``pruned_check``)."""

    scale: str
    config: dict
    heads: tuple[int, ...]
    rescale: bool
    U: np.ndarray
    solver: dict
    scores: dict[str, float]
    value_norms: dict[str, float]
    curves: dict[str, PruningCurve]
    random: RandomCurves
    F: dict[str, np.ndarray]
    y: dict[str, np.ndarray]
    removed: list[str]
    pruned_state: dict[str, np.ndarray]
    pruned_outputs: dict[str, np.ndarray]
    pruned_check: float
    seconds: dict
    wall_seconds: float | None = None
    provenance: dict | None = None
    extracted: Extracted | None = field(default=None, repr=False)

    EXPERIMENT = "prune"
    STORED = {
        **{k: Stored(none="omit") for k in ("wall_seconds", "provenance")},
        "extracted": Stored(to="live"),
    }

    def coefficients(self, pruned=()) -> np.ndarray:
        """Path coefficients of the network with heads ``pruned`` removed (the rule the curves used)."""
        return pruned_coefficients(self.heads, pruned, "rescaled" if self.rescale else "mask")

    @property
    def cumulative(self) -> CumulativePruning:
        """The curves as a :class:`~attention_paths.tasks.pruning.CumulativePruning` (what the book's pruning
        figures draw), with the score order's empirical p-value against the random orders per set."""
        K = len(self.curves["theory score"].order)
        p = {s: order_p_value(self.curves["theory score"].drop[s], self.random.drop[s]) for s in self.y}
        return CumulativePruning(heads=self.heads, K=K, curves=self.curves, random=self.random, p_value=p)

    def state_dict(self) -> dict:
        """The pruned network's state dict as torch tensors (``model.load_state_dict(res.state_dict())``)."""
        return {k: torch.as_tensor(np.asarray(v)) for k, v in self.pruned_state.items()}

    def check(self, folder=None) -> None:
        """Raise ``ValueError`` naming ``folder`` and the field when the stored numbers contradict each other: the
        scores those of ``U``, every curve the one its order gives from ``F``, the saved network's outputs the
        curve's point within :data:`PRUNED_TOLERANCE`."""
        n_paths = int(np.prod(self.heads))
        U = inv.order_parameter(folder, "U", self.U, n_paths)
        inv.converged(
            folder, "solver.grad_max", self.solver.get("grad_max"), TOLERANCE, self.solver.get("hessian_min_eig")
        )
        names = head_labels(self.heads)
        again = dict(zip(names, np.concatenate(head_scores(U, self.heads)).tolist(), strict=True))
        if list(self.scores) != names or not np.allclose(list(self.scores.values()), list(again.values()), rtol=1e-9):
            inv.violation(folder, "scores", "are not the head scores of the stored U")
        for s, F in self.F.items():
            inv.finite(folder, f"F[{s}]", F, (len(self.y[s]), n_paths))
        for label, c in self.curves.items():
            K = len(c.order)
            redo = pruning_curve(self.F, self.y, self.heads, c.order, None, label, K, self.coefficients)
            for s in self.y:
                if not np.allclose(redo.accuracy[s], c.accuracy[s]) or not np.allclose(redo.drop[s], c.drop[s]):
                    inv.violation(folder, f"curves[{label}]", f"is not the curve its order gives on {s}")
        pruned = [parse_head_name(h, self.heads) for h in self.removed]
        c = self.coefficients(pruned)
        worst = max(_relative(self.pruned_outputs[s], self.F[s] @ c) for s in self.F)
        if not worst <= PRUNED_TOLERANCE or abs(worst - self.pruned_check) > 1e-12 + 1e-6 * worst:
            inv.violation(
                folder,
                "pruned_outputs",
                f"differ from the curve's point by {worst:.2e} (stored {self.pruned_check:.2e})",
            )


def _relative(a, b) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.abs(a - b).max() / max(float(np.abs(b).max()), 1e-300))


def _config(scale: str, model, data, overrides: dict) -> dict:
    cfg = PRUNE[scale]
    cfg = replace(
        cfg,
        model=cfg.model if model is None else str(model) if isinstance(model, str) else type(model).__name__,
        data=cfg.data if data is None else str(data) if not isinstance(data, dict) else "(arrays)",
        **{k: v for k, v in overrides.items() if v is not None},
    )
    return asdict(cfg)


def _curves(view, ex: Extracted, scores: dict, cfg: dict) -> tuple[dict, dict, dict, RandomCurves]:
    """Per-path outputs, value norms, the score and value-norm curves and the random orders' drops."""
    heads = view.heads
    F = {s: view.path_outputs(x) for s, x in ex.inputs.items()}
    K = max_removable(heads)
    norms = dict(zip(head_labels(heads), np.concatenate(view.value_norms).tolist(), strict=True))
    curve = lambda order, label: pruning_curve(F, ex.y_sets, heads, order, None, label, K, view.coefficients)  # noqa: E731
    curves = {
        "theory score": curve(cumulative_order(scores, heads), "theory score"),
        "value norm": curve(cumulative_order(norms, heads), "value norm"),
    }
    orders = random_orders(heads, cfg["n_random"], K, cfg["seed"])
    drops = {s: np.array([curve(o, "random").drop[s] for o in orders]).reshape(len(orders), K + 1) for s in F}
    random = RandomCurves(orders=[[head_name(h) for h in o] for o in orders], drop=drops, seed=cfg["seed"])
    return F, norms, curves, random


def run_prune(
    scale: str | None = None,
    *,
    model=None,
    data=None,
    width: int | None = None,
    tau: float | None = None,
    remove: int | None = None,
    n_random: int | None = None,
    n_theory: int | None = None,
    progress: bool = False,
) -> PruneResult:
    """Theory-guided pruning of ``model`` on ``data`` (defaults: the scale's :data:`PRUNE`, the example)."""
    scale = get_scale(scale)
    over = {"width": width, "tau": tau, "remove": remove, "n_random": n_random, "n_theory": n_theory}
    cfg = _config(scale, model, data, over)
    t0 = time.perf_counter()
    net = load_model(model if model is not None else cfg["model"])
    user = load_data(data if data is not None else example_data())
    view, ex = extract_user(net, user, cfg["n_theory"], progress)
    arch = Architecture.uniform(view.heads, cfg["width"])
    sol = solve(Action(PathKernel(ex.X), ex.y, cfg["tau"], arch), n_restarts=0)
    scores = dict(zip(head_labels(view.heads), np.concatenate(head_scores(sol.U, view.heads)).tolist(), strict=True))
    F, norms, curves, random = _curves(view, ex, scores, cfg)
    first = sorted(ex.y_sets)[0]
    k = (
        cfg["remove"]
        if cfg["remove"] is not None
        else heads_within(curves["theory score"].drop[first], cfg["threshold"])
    )
    if k > max_removable(view.heads):
        raise ValueError(f"cannot remove {k} heads: at most {max_removable(view.heads)} keep a head in every layer")
    removed = curves["theory score"].order[:k]
    pruned_net = view.prune([parse_head_name(h, view.heads) for h in removed])
    state = {k: v.detach().cpu().numpy().copy() for k, v in pruned_net.state_dict().items()}
    outs = {s: _own_outputs(pruned_net, x) for s, x in ex.inputs.items()}
    c = view.coefficients([parse_head_name(h, view.heads) for h in removed])
    return PruneResult(
        scale=scale,
        config=cfg,
        heads=view.heads,
        rescale=view.rescale,
        U=sol.U,
        solver=sol.summary(),
        scores=scores,
        value_norms=norms,
        curves=curves,
        random=random,
        F=F,
        y=ex.y_sets,
        removed=list(removed),
        pruned_state=state,
        pruned_outputs=outs,
        pruned_check=max(_relative(outs[s], F[s] @ c) for s in F),
        seconds={"total": time.perf_counter() - t0},
        extracted=ex,
    )


@torch.no_grad()
def _own_outputs(net, x, batch: int = 256) -> np.ndarray:
    """The network's own forward pass in float64 (on a copy), [n]."""
    net64 = copy.deepcopy(net).double().eval()
    out = [net64(torch.as_tensor(np.asarray(x[i : i + batch]), dtype=torch.float64)) for i in range(0, len(x), batch)]
    return torch.cat(out).reshape(-1).numpy()


def prune_summary(res: PruneResult) -> tuple[dict, dict]:
    """``(summary, arrays)`` of a pruning run, by the serialiser."""
    return to_folder(res)


def read_prune_run(folder, summary: dict, arrays: dict) -> PruneResult:
    """The :class:`PruneResult` of a results folder, checked against its invariants."""
    return read_checked(PruneResult, summary, arrays, folder)
