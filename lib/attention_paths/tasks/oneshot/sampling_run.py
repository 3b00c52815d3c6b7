"""Posterior samples of a trained Omniglot network at chosen widths, each against the theory at its own point
(issue 49 §2; spec §B.9, OP-E8): the ``omniglot-sampling`` experiment.

The theory runs (:func:`~.experiment.run_oneshot`) sample at one width and temperature, the panel's.  The paper's
Fig. 3(b) has sampled dots at a second width (the reference's launch: ``N = 500``, ``tau = 0.25``, 10 chains x
(20 + 20), seed 4), and the networks with more paths need their own samples at ``N = 10``.  This experiment
extracts the network's path features exactly as its theory run does (the scale's ``P``, episodes and seeds),
samples the posterior at every width of its config, solves the theory cold at each sampled point (a certified
solve from the GP point, not read from a grid) and compares the two (:class:`~.result.SampledRun`, the claims
I3 and I4 by the theory run's own rule, :func:`~.claims.sampling_claims`).

``python -m attention_paths omniglot-sampling --scale paper --network paper-2x8 --widths 10 --tau 0.5`` writes
one results folder; :func:`attention_paths.runs.experiments.load_run` reads it back
(:class:`OneShotSamplingResult`).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field, replace

import numpy as np

from attention_paths import sampling
from attention_paths.base import invariants as inv
from attention_paths.base.config import get_scale
from attention_paths.base.fields import check_fields
from attention_paths.base.serialise import Stored, read_checked, to_folder
from attention_paths.tasks.claim import check_stored_claims
from attention_paths.tasks.omniglot.training import load_network
from attention_paths.tasks.oneshot.claims import sampling_claims
from attention_paths.tasks.oneshot.data import EVAL_SETS, OneShotData, extract
from attention_paths.tasks.oneshot.experiment import ONESHOT_EXPERIMENT
from attention_paths.tasks.oneshot.posterior import sample_oneshot, sampled_run, with_budget
from attention_paths.tasks.oneshot.result import SampledRun
from attention_paths.theory.action import Action
from attention_paths.theory.architecture import Architecture
from attention_paths.theory.kernels import PathKernel
from attention_paths.theory.solver import TOLERANCE, solve

__all__ = [
    "OneShotSamplingConfig",
    "ONESHOT_SAMPLING",
    "OneShotSamplingResult",
    "run_oneshot_sampling",
    "oneshot_sampling_summary",
    "read_oneshot_sampling_run",
]


@dataclass(frozen=True)
class OneShotSamplingConfig:
    """What to sample: the trained ``network``, the ``widths`` and the temperature ``tau``; the sampler ``kind``
    and its settings (``sampler``: those of :class:`attention_paths.sampling.SamplerConfig`, and of the kind's
    own config, e.g. ``v0_update`` of :class:`attention_paths.sampling.full.FullConfig`).  The path features
    are those of the scale's theory run (:data:`~.experiment.ONESHOT_EXPERIMENT`: ``P``, episodes, seeds)."""

    # each field's range, checked at construction with its type (base.fields.check_fields)
    RANGES = {"widths": ">= 1", "tau": "> 0"}

    network: str
    widths: tuple
    tau: float
    kind: str
    sampler: dict

    def __post_init__(self):
        check_fields(self)


ONESHOT_SAMPLING = {
    # the reference's launch (spec §B.9) is N = 500, tau = 0.25, 10 chains x (20 + 20), seed 4.  Twenty warm-up steps
    # leave numpyro's NUTS unadapted (acceptance 0 and every draw divergent on a test problem, with or without
    # mass-matrix adaptation; 50 suffice there), so 4 chains x (80 + 120), seed 4 (a first 4 x (60 + 40), the
    # reference's 400 transitions, left R-hat of U at 1.15).
    # The Rao-Blackwellised sampler: at N = 500 (1.1 million weights) neither full-weight route reaches R-hat < 1.05
    # in hours on two cores (benchmarks/README.md: joint NUTS 2 x (30 + 30) R-hat 2.4, collapsed 2.8, 7-8 s per
    # draw), and its exact conditional predictor gives the lowest-variance predictive means of a short chain.
    # The committed run: R-hat of the predictions 1.03 (of U 1.08) in 47 min on two cores.
    "paper": OneShotSamplingConfig(
        network="paper",
        widths=(500,),
        tau=0.25,
        kind="rao-blackwell",
        sampler=dict(num_chains=4, num_warmup=80, num_samples=120, seed=4, chain_method="parallel"),
    ),
    "quick": OneShotSamplingConfig(
        network="quick",
        widths=(10,),
        tau=0.5,
        kind="rao-blackwell",
        sampler=dict(num_chains=2, num_warmup=100, num_samples=100, seed=4, chain_method="parallel"),
    ),
}


@dataclass(kw_only=True)
class OneShotSamplingResult:
    """Posterior samples at the config's widths against the theory there: ``sampled`` ({N: :class:`SampledRun`}),
    the theory's ``U_theory`` ({N: (Pi, Pi)}) and its solver report (``solver``: {N: summary of
    :class:`~attention_paths.theory.solver.SolveResult`}), the agreement of the sampled and theory order
    parameters (``agreement``: {N: :func:`attention_paths.sampling.order_parameter_agreement` plus ``corr``,
    the correlation of their entries}), the gradient-descent order parameter ``U_gd`` (Pi, Pi) and the run's
    ``config`` (a dict of :class:`OneShotSamplingConfig` plus ``P`` and ``n_eval``).  Live only: ``data`` (the
    extracted features) and ``samples`` ({N: PosteriorSamples})."""

    scale: str
    config: dict
    data_info: dict
    network_record: dict
    heads: tuple[int, ...]
    U_gd: np.ndarray
    U_theory: dict[int, np.ndarray]
    solver: dict[int, dict]
    agreement: dict[int, dict]
    sampled: dict[int, SampledRun]
    seconds: dict
    claims: list[dict] | None = None
    wall_seconds: float | None = None
    provenance: dict | None = None
    data: OneShotData | None = field(default=None, repr=False)
    samples: dict = field(default_factory=dict, repr=False)

    EXPERIMENT = "omniglot-sampling"
    STORED = {
        "data_info": Stored(key="data"),
        "sampled": Stored(array="sample", item="N{}"),
        "U_theory": Stored(item="N{}"),
        **{k: Stored(none="omit") for k in ("claims", "wall_seconds", "provenance")},
        "data": Stored(to="live"),
        "samples": Stored(to="live"),
    }

    def check(self, folder=None) -> None:
        """Raise ``ValueError`` naming ``folder`` and the field when a field breaks an invariant: the order
        parameters symmetric positive semi-definite over the heads' paths, the sampled widths those of the config
        and of the theory, accuracies in [0, 100], predictions finite and of one stacked length, the stored
        agreement that of the stored order parameters."""
        n_paths = int(np.prod(self.heads))
        widths = sorted(int(n) for n in self.config["widths"])
        for name, d in (("sampled", self.sampled), ("U_theory", self.U_theory), ("agreement", self.agreement)):
            if sorted(int(n) for n in d) != widths:
                inv.violation(folder, name, f"has widths {sorted(d)}, the config samples {widths}")
        inv.order_parameter(folder, "U_gd", self.U_gd, n_paths)
        for N, rep in self.solver.items():
            inv.converged(folder, f"solver[{N}].grad_max", rep.get("grad_max"), TOLERANCE, rep.get("hessian_min_eig"))
        n_eval = (self.data_info or {}).get("n_eval")  # the stacked evaluation sets, n_eval episodes each
        n_stack = len(EVAL_SETS) * int(n_eval) if n_eval else None
        for N, run in self.sampled.items():
            Ut = inv.order_parameter(folder, f"U_theory[{N}]", self.U_theory[N], n_paths)
            Uh = inv.order_parameter(folder, f"sampled[{N}].U_hat", run.U_hat, n_paths)
            n_stack = len(inv.finite(folder, f"sampled[{N}].mean", run.mean, (n_stack,)))
            if np.min(inv.finite(folder, f"sampled[{N}].mcse", run.mcse, (n_stack,))) < 0:
                inv.violation(folder, f"sampled[{N}].mcse", "holds a negative Monte Carlo standard error")
            for s, e in run.sets.items():
                inv.accuracy(folder, f"sampled[{N}].sets[{s}]", [e["theory"], e["sampled"]])
            if _agreement(Uh, Ut) != self.agreement[N]:
                inv.violation(folder, f"agreement[{N}]", "is not the agreement of the stored U_hat and U_theory")


def _agreement(U_hat, U_theory) -> dict:
    out = sampling.order_parameter_agreement(U_hat, U_theory)
    out["corr"] = float(np.corrcoef(np.ravel(U_hat), np.ravel(U_theory))[0, 1])
    return out


def _config(scale: str, network, widths, tau, budget) -> dict:
    cfg = ONESHOT_SAMPLING[scale]
    cfg = replace(
        cfg,
        network=network or cfg.network,
        widths=tuple(int(n) for n in widths) if widths else cfg.widths,
        tau=float(tau) if tau is not None else cfg.tau,
    )
    out = asdict(cfg)
    if budget:
        s = with_budget({"kind": out["kind"], "sampler": out["sampler"]}, budget)
        out["kind"], out["sampler"] = s["kind"], s["sampler"]
    if not out["widths"]:  # each width >= 1 and tau > 0: checked by OneShotSamplingConfig itself
        raise ValueError("OneShotSamplingConfig.widths is empty: sample at one width or more")
    theory = asdict(replace(ONESHOT_EXPERIMENT[scale], network=out["network"]))
    out.update({k: theory[k] for k in ("P", "n_eval", "train_batches")})
    return out


def _theory_at(data: OneShotData, kernel: PathKernel, N: int, tau: float):
    """The certified theory solve at ``(N, tau)``, cold from the GP point (``kernel``: the training features')."""
    return solve(Action(kernel, data.y["train"], tau, Architecture.uniform(data.heads, N)), n_restarts=0)


def run_oneshot_sampling(
    scale: str | None = None,
    *,
    network: str | None = None,
    widths=None,
    tau: float | None = None,
    budget: dict | None = None,
    root=None,
    progress: bool = False,
    data: OneShotData | None = None,
) -> OneShotSamplingResult:
    """Posterior samples of the trained ``network`` at ``widths`` and temperature ``tau`` (default: the scale's
    :data:`ONESHOT_SAMPLING`), each against a certified theory solve at the same point.

    ``budget`` overrides sampler settings as in :func:`~.posterior.with_budget` (``kind`` chooses the
    sampler).  ``data`` reuses an extraction of the same network at the same scale.
    """
    scale = get_scale(scale)
    cfg = _config(scale, network, widths, tau, budget)
    t0 = time.perf_counter()
    net, rec = load_network(cfg["network"], progress=progress)
    if data is None:
        data = extract(net, dict(asdict(ONESHOT_EXPERIMENT[scale]), **cfg), root, rec, progress)
    seconds = {"extract": time.perf_counter() - t0}
    t1 = time.perf_counter()
    kernel = PathKernel(data.features["train"])  # one path kernel for every width
    solves = {N: _theory_at(data, kernel, N, cfg["tau"]) for N in cfg["widths"]}
    seconds["theory"] = time.perf_counter() - t1
    t2 = time.perf_counter()
    samples = sample_oneshot(data, {"sampling": cfg}, progress)
    seconds["sampling"] = time.perf_counter() - t2
    runs = {N: sampled_run(data, solves[N].U, cfg["tau"], samples[N]) for N in cfg["widths"]}
    return OneShotSamplingResult(
        scale=scale,
        config=cfg,
        data_info=data.info,
        network_record={k: v for k, v in (rec or {}).items() if k in ("source", "sha256", "config")},
        heads=tuple(int(h) for h in data.heads),
        U_gd=data.U_gd,
        U_theory={N: r.U for N, r in solves.items()},
        solver={N: r.summary() for N, r in solves.items()},
        agreement={N: _agreement(runs[N].U_hat, solves[N].U) for N in cfg["widths"]},
        sampled=runs,
        seconds=seconds,
        data=data,
        samples=samples,
    )


def sampling_run_claims(res: OneShotSamplingResult) -> list[dict]:
    """I3 and I4 at every sampled width (:func:`~.claims.sampling_claims`, the theory run's rule), ids suffixed
    with the width where more than one was sampled."""
    many = len(res.sampled) > 1
    return [
        c
        for N in sorted(res.sampled)
        for c in sampling_claims(N, res.sampled[N], res.U_theory[N], res.U_gd, suffix=f" (N={N})" if many else "")
    ]


def oneshot_sampling_summary(res: OneShotSamplingResult) -> tuple[dict, dict]:
    """``(summary, arrays)`` of a run, by the serialiser, with its claims (:func:`sampling_run_claims`)."""
    return to_folder(replace(res, claims=sampling_run_claims(res)))


def read_oneshot_sampling_run(folder, summary: dict, arrays: dict) -> OneShotSamplingResult:
    """The :class:`OneShotSamplingResult` of a results folder, checked against its invariants, its stored claims
    against those its numbers give (:func:`~attention_paths.tasks.claim.check_stored_claims`)."""
    res = read_checked(OneShotSamplingResult, summary, arrays, folder)
    check_stored_claims(res.claims, sampling_run_claims(res), folder)
    return res
