"""The omniglot_theory chapter's computation: its sizes per scale (:data:`ONESHOT_EXPERIMENT`), the run
(:func:`run_oneshot`), and its :class:`~.result.OneShotResult` written to a results folder
(:func:`oneshot_summary`) and read back (:func:`read_oneshot_run`)."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, replace

import numpy as np

from attention_paths.base.config import get_scale
from attention_paths.base.fields import check_fields
from attention_paths.base.serialise import read_checked, to_folder
from attention_paths.tasks.claim import check_stored_claims
from attention_paths.tasks.omniglot.training import load_network
from attention_paths.tasks.oneshot.claims import oneshot_claims
from attention_paths.tasks.oneshot.data import EVAL_SETS, OneShotData, _eval_stack, extract
from attention_paths.tasks.oneshot.grid import Grid, edge_scan, gp_line, panel, select_temperatures, theory_grid
from attention_paths.tasks.oneshot.posterior import sample_oneshot, sampled_run, with_budget
from attention_paths.tasks.oneshot.result import (
    OneShotPanel,
    OneShotResult,
    PairedPredictions,
    TemperatureChoice,
)
from attention_paths.theory.action import Action
from attention_paths.theory.architecture import Architecture
from attention_paths.theory.kernels import PathKernel
from attention_paths.theory.predictor import predict
from attention_paths.theory.solver import solve

__all__ = [
    "OneShotExperimentConfig",
    "ONESHOT_EXPERIMENT",
    "run_oneshot",
    "restricted_grid",
    "oneshot_summary",
    "read_oneshot_run",
]


@dataclass(frozen=True, kw_only=True)
class OneShotExperimentConfig:
    """Sizes of the omniglot_theory chapter (:func:`run_oneshot`; spec §B.8-B.9, §E.4): the trained network,
    the training set size ``P`` (drawn from ``train_batches`` training batches), the episodes per evaluation
    set ``n_eval`` (drawn from a fixed pool of ``eval_pool``), the width x temperature grid, the GP line's
    temperatures, the panel point, the alignment's ``k``, the temperatures of the scan beyond the grid's
    edge (none: no scan) and the posterior sampling (widths, ``tau``, sampler kind and NUTS settings).

    A run records it as a dict (``res.config``, ``summary["config"]``: ``dataclasses.asdict``)."""

    # each field's range, checked at construction with its type (base.fields.check_fields)
    RANGES = {
        "P": ">= 1",
        "panel_N": ">= 1",
        "n_eval": ">= 1",
        "train_batches": ">= 1",
        "eval_pool": ">= 1",
        "widths": ">= 1",
        "taus": "> 0",
        "gp_taus": "> 0",
        "panel_tau": "> 0",
        "n_align": ">= 1",
        "edge_taus": "> 0",
    }

    network: str
    P: int
    n_eval: int
    train_batches: int
    eval_pool: int = 2048
    widths: tuple
    taus: tuple
    gp_taus: tuple = (0.25, 0.1, 0.075, 0.05, 0.025)
    panel_N: int = 10
    panel_tau: float = 0.5
    n_align: int = 50
    edge_taus: tuple = ()
    sampling: dict

    def __post_init__(self):
        check_fields(self)


ONESHOT_EXPERIMENT = {
    # spec §B.8-B.9: P = 600, 1000 episodes per evaluation set, the 10 x 10 grid.  Sampling: the paper runs
    # 10 chains x (100 + 100); full-weight NUTS is ~15x faster per effective sample than the Rao-Blackwellised
    # sampler at P = 600 (benchmarks/README.md) but needs a longer warm-up, so 4 chains x (500 + 500)
    "paper": OneShotExperimentConfig(
        network="paper",
        P=600,
        n_eval=1000,
        train_batches=16,
        widths=(10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000),
        taus=(0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5),
        edge_taus=(2.0, 3.0, 5.0, 10.0),  # beyond the grid's edge, at the smallest width (not the paper's)
        sampling=dict(
            widths=(10,),
            tau=0.5,
            kind="full",
            sampler=dict(num_chains=4, num_warmup=500, num_samples=500, seed=1, chain_method="parallel"),
        ),
    ),
    # spec §E.4: reduced P, evaluation sets, widths and temperatures; a short sampling run
    "quick": OneShotExperimentConfig(
        network="quick",
        P=200,
        n_eval=400,
        train_batches=4,
        widths=(10, 100, 1000, 10000),
        taus=(0.1, 0.25, 0.5, 1.0),
        sampling=dict(
            widths=(10,),
            tau=0.5,
            kind="rao-blackwell",
            sampler=dict(num_chains=2, num_warmup=150, num_samples=150, seed=1, chain_method="parallel"),
        ),
    ),
}


def run_oneshot(
    scale: str | None = None,
    *,
    network: str | None = None,
    sample: bool = True,
    root=None,
    progress: bool = False,
    data: OneShotData | None = None,
    budget: dict | None = None,
    grid: Grid | None = None,
    samples: dict | None = None,
    record: dict | None = None,
    widths=None,
    taus=None,
) -> OneShotResult:
    """Everything the Omniglot theory chapter shows, at ``scale`` (spec §B.8-B.11): a
    :class:`~.result.OneShotResult`.

    ``network`` chooses the trained network (default: the scale's own; ``"quick"`` runs the paper-size theory
    on the committed CPU-trained network).  ``data`` reuses an extraction (``record``: its network's record).
    ``budget`` overrides sampler settings (``num_chains``, ``num_warmup``, ``num_samples``, ...).  ``grid`` (a
    :func:`theory_grid` result) and ``samples`` ({N: PosteriorSamples}) are pieces computed elsewhere, e.g.
    by the stages of ``python -m attention_paths reproduce``; a grid must cover the scale's widths and
    temperatures.  ``widths`` and ``taus`` restrict the grid to some of the scale's (``--widths``, ``--taus``:
    where the full grid costs too much, e.g. 64 paths on a CPU); they must keep the panel point, and the
    sampling temperature when sampling, and the run records them in its ``config``.

    Long: the steps in the spec's order, each a call into the task's modules, sharing a dozen values.
    """
    scale = get_scale(scale)
    cfg = _run_config(scale, network, widths, taus, bool(samples) if samples is not None else sample, budget)
    t0 = time.perf_counter()
    net, rec = None, record
    if data is None:
        net, rec = load_network(cfg["network"], progress=progress)
        data = extract(net, cfg, root, rec, progress)
    t_extract = time.perf_counter() - t0
    if grid is None:
        grid = theory_grid(data, cfg["widths"], cfg["taus"], progress)
    else:
        _check_grid(grid, cfg)
    gp = gp_line(data, cfg["gp_taus"])
    gp_grid = gp_line(data, cfg["taus"])  # the N -> infinity limit at every grid temperature
    select = _select(grid, gp)
    i_t, i_n = list(grid.taus).index(cfg["panel_tau"]), list(grid.widths).index(cfg["panel_N"])
    U10 = grid.U[i_t, i_n]
    X_eval, _ = _eval_stack(data)
    th = predict(U10, data.features["train"], data.y["train"], cfg["panel_tau"], X_eval)
    edge = edge_scan(data, grid.widths[0], cfg["edge_taus"]) if cfg.get("edge_taus") else None
    pan = panel(data, U10, cfg["n_align"])
    seconds = {"extract": t_extract, "grid": grid.seconds}
    if samples is None and sample:
        t1 = time.perf_counter()
        samples = sample_oneshot(data, cfg, progress)
        seconds["sampling"] = time.perf_counter() - t1
    samples, tau_s, widths = dict(samples or {}), cfg["sampling"]["tau"], list(grid.widths)
    i_s = list(grid.taus).index(tau_s) if samples else None
    return OneShotResult(
        scale=scale,
        config=cfg,
        data_info=data.info,
        network_record={k: v for k, v in (rec or {}).items() if k in ("source", "sha256", "config")},
        network_accuracy={s: data.network_accuracy(s) for s in EVAL_SETS},
        widths=grid.widths,
        taus=grid.taus,
        U=grid.U,
        grid_accuracy=grid.accuracy,
        solver={"max_grad": float(grid.grad_max.max()), "iterations": grid.n_iter},
        gp_taus=gp["taus"],
        gp_accuracy=gp["accuracy"],
        gp_grid_accuracy=gp_grid["accuracy"],
        select=select,
        panel=OneShotPanel(**pan, check=_cold_solve_check(data, cfg, U10), mean=th.mean, var=th.var, index=(i_t, i_n)),
        paired=_paired_predictions(data, grid, select["val"], X_eval),
        edge=edge,
        seconds=seconds,
        sampled={N: sampled_run(data, grid.U[i_s, widths.index(N)], tau_s, smp) for N, smp in samples.items()},
        data=data,
        samples=samples,
    )


def _run_config(scale: str, network, widths, taus, sample: bool, budget) -> dict:
    """The scale's configuration as a dict, with the run's network, restricted grid and sampler budget."""
    cfg = asdict(ONESHOT_EXPERIMENT[scale])
    cfg["network"] = network or cfg["network"]
    cfg.update(restricted_grid(cfg, widths, taus, sample=sample))
    if budget:
        cfg["sampling"] = with_budget(cfg["sampling"], budget)
    return cfg


def restricted_grid(cfg: dict, widths=None, taus=None, *, sample: bool = False) -> dict:
    """``{"widths", "taus"}`` of a grid restricted to some of the widths and temperatures of ``cfg`` (a
    :class:`OneShotExperimentConfig` as a dict); ``None`` keeps the scale's.  ``ValueError`` names a value that
    is not in the scale's grid, a repeated one, or a missing panel point (``panel_N``, ``panel_tau``) or
    sampling temperature (with ``sample``).

    >>> cfg = asdict(ONESHOT_EXPERIMENT["paper"])
    >>> restricted_grid(cfg, widths=[1000, 10, 100], taus=[0.5, 0.1])
    {'widths': (10, 100, 1000), 'taus': (0.1, 0.5)}
    """
    out = {}
    for name, given, kind in (("widths", widths, int), ("taus", taus, float)):
        full = tuple(cfg[name])
        if given is None:
            out[name] = full
            continue
        values = [kind(v) for v in given]
        outside = [v for v in values if not any(np.isclose(v, f) for f in full)]
        if outside or not values or len(set(values)) != len(values):
            raise ValueError(
                f"--{name} must be distinct values of the scale's grid {list(full)}, got {values}"
                + (f" ({outside} not in it)" if outside else "")
            )
        out[name] = tuple(sorted(next(f for f in full if np.isclose(v, f)) for v in values))  # the scale's own
    needed = {"widths": [cfg["panel_N"]], "taus": [cfg["panel_tau"]] + ([cfg["sampling"]["tau"]] if sample else [])}
    for name, values in needed.items():
        missing = [v for v in values if not any(np.isclose(v, f) for f in out[name])]
        if missing:
            raise ValueError(
                f"a restricted grid must keep the panel point (N = {cfg['panel_N']}, tau = {cfg['panel_tau']})"
                + (f" and the sampling temperature {cfg['sampling']['tau']}" if sample else "")
                + f": --{name} {list(out[name])} lacks {missing}"
            )
    return out


def _select(grid: Grid, gp: dict) -> dict[str, dict[str, TemperatureChoice]]:
    """Both protocols' temperatures ("val": ours, "test": the paper's), for the theory and the GP."""
    return {
        on: {
            "theory": TemperatureChoice(**select_temperatures(grid.accuracy, grid.taus, on)),
            "gp": TemperatureChoice(**select_temperatures(gp["accuracy"], gp["taus"], on)),
        }
        for on in ("val", "test")
    }


def _check_grid(grid: Grid, cfg: dict) -> None:
    """A grid computed elsewhere must cover the scale's widths and temperatures."""
    if (
        list(grid.widths) != sorted(cfg["widths"])
        or len(grid.taus) != len(cfg["taus"])
        or not np.allclose(grid.taus, sorted(cfg["taus"]))
    ):
        raise ValueError(
            f"the given grid covers widths {list(grid.widths)} and temperatures "
            f"{list(grid.taus)}, the scale needs {sorted(cfg['widths'])} and {sorted(cfg['taus'])}"
        )


def _cold_solve_check(data: OneShotData, cfg: dict, U10) -> dict:
    """Verification of the panel's order parameter: a cold solve from the GP point plus two random restarts
    reaches the same minimum as the grid's continuation."""
    action = Action(
        PathKernel(data.features["train"]),
        data.y["train"],
        cfg["panel_tau"],
        Architecture.uniform(data.heads, cfg["panel_N"]),
    )
    check = solve(action, n_restarts=2, seed=1)
    return {
        "max_abs_dU": float(np.abs(check.U - U10).max()),
        "grad_max": check.grad_max,
        "hessian_min_eig": check.hessian_min_eig,
        "restarts": check.restarts,
    }


def _paired_predictions(data: OneShotData, grid: dict, sel_val: dict, X_eval) -> PairedPredictions:
    """Per-episode mean predictions at the validation-selected temperatures (the smallest width, and the GP),
    for paired comparisons of theory and GP on the same episodes."""
    t_th, t_gp = float(sel_val["theory"].tau[0]), float(sel_val["gp"].tau)
    U_small = grid.U[int(sel_val["theory"].index[0]), 0]
    X, y = data.features["train"], data.y["train"]
    return PairedPredictions(
        N=float(grid.widths[0]),
        tau_theory=t_th,
        tau_gp=t_gp,
        theory=predict(U_small, X, y, t_th, X_eval, return_var=False).mean,
        gp=predict(np.eye(data.n_paths), X, y, t_gp, X_eval, return_var=False).mean,
    )


def oneshot_summary(res: OneShotResult) -> tuple[dict, dict]:
    """``(summary, arrays)`` of a run, by the serialiser (:func:`attention_paths.base.serialise.to_folder`: plain
    numbers for ``summary.json``, arrays for ``arrays.npz``); the claims (:func:`~.claims.oneshot_claims`) are
    computed here."""
    return to_folder(replace(res, claims=oneshot_claims(res)))


def read_oneshot_run(folder, summary: dict, arrays: dict) -> OneShotResult:
    """The :class:`OneShotResult` of a results folder written by :func:`oneshot_summary` (read by
    ``runs.experiments.load_run``; :func:`attention_paths.base.serialise.read_checked`), checked against the
    type's invariants (:meth:`~.result.OneShotResult.check`) and its stored claims against those its numbers give
    (:func:`~attention_paths.tasks.claim.check_stored_claims`)."""
    res = read_checked(OneShotResult, summary, arrays, folder)  # with the type's invariants (issue 37 §2)
    check_stored_claims(res.claims, oneshot_claims(res), folder)
    return res
