"""The Sampling chapter's experiment on the toy problem (:func:`posterior_check`): the theory against
posterior samples at several widths, its sizes per scale, result types and results-folder record."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from attention_paths import sampling
from attention_paths.base.config import get_scale
from attention_paths.sampling.names import parse_sampler_names
from attention_paths.tasks.toy.problem import ToyProblem, make_toy_problem
from attention_paths.theory.action import Action
from attention_paths.theory.architecture import Architecture
from attention_paths.theory.kernels import PathKernel
from attention_paths.theory.predictor import Prediction, predict
from attention_paths.theory.solver import SolveResult, solve_continuation

__all__ = [
    "PosteriorCheckConfig",
    "POSTERIOR_CHECK",
    "SampleAgreement",
    "PosteriorCheckRow",
    "PosteriorCheckResult",
    "posterior_check",
    "posterior_summary",
]


@dataclass(frozen=True)
class PosteriorCheckConfig:
    """Sizes of the sampling chapter's comparison (:func:`posterior_check`): the toy problem, the load
    ``alpha = P/N``, ``tau``, the widths, those where the full-weight sampler also runs, and the NUTS budget."""

    n0: int = 16
    T: int = 6
    heads: tuple = (2, 2)
    beta: float = 2.0
    alpha: int = 2
    tau: float = 0.05
    M: int = 300
    seed: int = 0
    widths: tuple = (10, 20, 40)
    full_widths: tuple = (20,)
    num_chains: int = 2
    num_warmup: int = 300
    num_samples: int = 300


POSTERIOR_CHECK = {
    "quick": PosteriorCheckConfig(),
    "paper": PosteriorCheckConfig(
        M=1000,
        widths=(10, 20, 50, 100),
        full_widths=(10, 20, 50, 100),
        num_chains=4,
        num_warmup=500,
        num_samples=500,
    ),
}


@dataclass(kw_only=True)
class SampleAgreement:
    """One sampler's run against the theory at one width: ``dU`` = max ``|U_hat - U*|``, and the RMS gaps
    of the sampled predictive mean to the theory's (``rms_theory``) and the GP limit's (``rms_gp``)."""

    dU: float
    rms_theory: float
    rms_gp: float


@dataclass(kw_only=True)
class PosteriorCheckRow:
    """One width of :func:`posterior_check`: ``N``, ``P = alpha N``, the theory's ``U_theory`` (Pi, Pi) and
    ``solve`` result, the test-set ``theory`` and ``gp`` predictions, ``samples`` and ``agreement`` per
    sampler kind (``sampling.SAMPLER_KINDS``; a sampler that is not ``every_width``, the full-weight one, only
    at the config's ``full_widths``)
    and ``gp_dU`` = max ``|I - U*|``."""

    N: int
    P: int
    U_theory: np.ndarray
    theory: Prediction
    gp: Prediction
    solve: SolveResult
    samples: dict = field(default_factory=dict)
    agreement: dict[str, SampleAgreement] = field(default_factory=dict)
    gp_dU: float = float("nan")


@dataclass(kw_only=True)
class PosteriorCheckResult:
    """:func:`posterior_check`: the configuration, the problem at the largest width (every width trains on
    its first ``alpha N`` examples) and one :class:`PosteriorCheckRow` per width."""

    scale: str
    config: dict
    problem: ToyProblem
    rows: list[PosteriorCheckRow]


def posterior_check(scale: str | None = None, progress: bool = False, samplers=None) -> PosteriorCheckResult:
    """Theory against posterior sampling on the spec's toy problem at fixed load ``alpha = P/N`` (T§16.3).

    For every width ``N`` the first ``P = alpha N`` examples of one seeded teacher problem are the training
    set; the theory is solved, and each of ``samplers`` (names of :data:`attention_paths.sampling.SAMPLER_NAMES`,
    a sequence or a comma-separated string; default ``sampling.SAMPLER_KINDS``, the built-in two) runs at
    every width when it declares ``every_width`` (the Rao-Blackwellised one), else at ``full_widths`` only
    (the full-weight one) (:class:`PosteriorCheckResult`, one :class:`PosteriorCheckRow` per width).
    """
    kinds = sampling.SAMPLER_KINDS if samplers is None else parse_sampler_names(samplers)
    scale = get_scale(scale)
    cfg = POSTERIOR_CHECK[scale]
    widths, alpha, tau = cfg.widths, cfg.alpha, cfg.tau
    base = make_toy_problem(
        P=alpha * max(widths),
        M=cfg.M,
        n0=cfg.n0,
        T=cfg.T,
        heads=cfg.heads,
        beta=cfg.beta,
        seed=cfg.seed,
    )
    sconf = sampling.SamplerConfig(
        num_warmup=cfg.num_warmup, num_samples=cfg.num_samples, num_chains=cfg.num_chains, seed=cfg.seed
    )
    Pi = int(np.prod(cfg.heads))
    rows = []
    for N in widths:
        prob = base.subset(alpha * N)
        arch = Architecture.uniform(cfg.heads, N)
        theory = solve_continuation([Action(PathKernel(prob.features_train), prob.y_train, tau, arch)])[0]
        th = predict(theory.U, prob.features_train, prob.y_train, tau, prob.features_test)
        gp = predict(np.eye(Pi), prob.features_train, prob.y_train, tau, prob.features_test)
        row = PosteriorCheckRow(N=N, P=alpha * N, U_theory=theory.U, theory=th, gp=gp, solve=theory)
        for kind in kinds:
            sampler = sampling.get_sampler(kind)
            if sampler.every_width or N in cfg.full_widths:  # a costlier sampler where the config lists it
                config = sampler.configure(sconf, path_inputs=(prob.path_inputs("train"), prob.path_inputs("test")))
                smp = sampling.sample(
                    kind,
                    prob.features_train,
                    prob.y_train,
                    tau,
                    arch,
                    prob.features_test,
                    config=config,
                    progress=progress,
                )
                row.samples[kind] = smp
                row.agreement[kind] = SampleAgreement(
                    dU=float(np.abs(smp.U_hat - theory.U).max()),
                    rms_theory=float(np.sqrt(np.mean((smp.predictive_mean - th.mean) ** 2))),
                    rms_gp=float(np.sqrt(np.mean((smp.predictive_mean - gp.mean) ** 2))),
                )
        row.gp_dU = float(np.abs(np.eye(Pi) - theory.U).max())
        rows.append(row)
    return PosteriorCheckResult(scale=scale, config=asdict(cfg), problem=base, rows=rows)


def posterior_summary(res: PosteriorCheckResult) -> tuple[dict, dict]:
    """``(summary, arrays)`` for ``summary.json`` / ``arrays.npz``: per width, accuracies and each sampler's
    agreement and diagnostics; the order parameters and sampled means as arrays."""
    per_width, arrays = [], {}
    y_test = res.problem.y_test
    for row in res.rows:
        entry = {
            "N": row.N,
            "P": row.P,
            "max_abs_U_theory_minus_GP": row.gp_dU,
            "theory_accuracy": row.theory.accuracy(y_test),
            "gp_accuracy": row.gp.accuracy(y_test),
        }
        arrays[f"N{row.N}_U_theory"] = row.U_theory
        for kind, smp in row.samples.items():
            agree = row.agreement[kind]
            entry[kind] = {
                "max_abs_Uhat_minus_theory": agree.dU,
                "rms_mean_gap_theory": agree.rms_theory,
                "rms_mean_gap_gp": agree.rms_gp,
                "accuracy": smp.accuracy(y_test),
                "wall_seconds": smp.wall_seconds,
                "diagnostics": smp.diagnostics,
            }
            arrays[f"N{row.N}_U_{kind}"] = smp.U_hat
            arrays[f"N{row.N}_mean_{kind}"] = smp.predictive_mean
        per_width.append(entry)
    return {"experiment": "posterior", "scale": res.scale, "config": res.config, "per_width": per_width}, arrays
