"""The Sampling chapter's experiment on the toy problem (:func:`posterior_check`): the theory against
posterior samples at several widths, its sizes per scale, result types and results folder, written
(:func:`posterior_summary`) and read back (:func:`read_posterior_run`) by the declared serialiser
(:mod:`attention_paths.base.serialise`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from attention_paths import sampling
from attention_paths.base import validate
from attention_paths.base.config import get_scale
from attention_paths.base.fields import check_fields
from attention_paths.base.serialise import Stored, read_checked, to_folder
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
    "read_posterior_run",
]


@dataclass(frozen=True)
class PosteriorCheckConfig:
    """Sizes of the sampling chapter's comparison (:func:`posterior_check`): the toy problem, the load
    ``alpha = P/N``, ``tau``, the widths, those where the full-weight sampler also runs, and the NUTS budget."""

    # each field's range, checked at construction with its type (base.fields.check_fields)
    RANGES = {
        "T": ">= 1",
        "M": ">= 1",
        "n0": ">= 1",
        "heads": ">= 1",
        "beta": "> 0",
        "alpha": ">= 1",
        "tau": "> 0",
        "seed": ">= 0",
        "widths": ">= 1",
        "full_widths": ">= 1",
        "num_chains": ">= 1",
        "num_warmup": ">= 0",
        "num_samples": ">= 2",
    }

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

    def __post_init__(self):
        check_fields(self)


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
    of the sampled predictive mean to the theory's (``rms_theory``) and the GP limit's (``rms_gp``); the run's
    test ``accuracy`` (%), ``wall_seconds`` and chain ``diagnostics``, its ``U_hat`` (Pi, Pi) and predictive
    ``mean`` (M,)."""

    dU: float
    rms_theory: float
    rms_gp: float
    accuracy: float
    wall_seconds: float
    diagnostics: dict
    U_hat: np.ndarray
    mean: np.ndarray

    STORED = {
        "dU": Stored(key="max_abs_Uhat_minus_theory"),
        "rms_theory": Stored(key="rms_mean_gap_theory"),
        "rms_gp": Stored(key="rms_mean_gap_gp"),
    }


@dataclass(kw_only=True)
class PosteriorCheckRow:
    """One width of :func:`posterior_check`: ``N``, ``P = alpha N``, the theory's ``U_theory`` (Pi, Pi) and
    ``solve`` result, the test-set ``theory`` and ``gp`` predictions, ``samples`` and ``agreement`` per
    sampler kind (``sampling.SAMPLER_KINDS``; a sampler that is not ``every_width``, the full-weight one, only
    at the config's ``full_widths``), ``gp_dU`` = max ``|I - U*|`` and the test accuracies (%) of the theory
    and the GP.  Live only (``None``, ``{}`` when read back): ``theory``, ``gp``, ``solve`` and ``samples``."""

    N: int
    P: int
    gp_dU: float = float("nan")
    theory_accuracy: float = float("nan")
    gp_accuracy: float = float("nan")
    U_theory: np.ndarray
    theory: Prediction | None = field(default=None, repr=False)
    gp: Prediction | None = field(default=None, repr=False)
    solve: SolveResult | None = field(default=None, repr=False)
    samples: dict = field(default_factory=dict, repr=False)
    agreement: dict[str, SampleAgreement] = field(default_factory=dict)

    # one JSON record per width (the sampler kinds' records in it); U_theory, U_hat and the means in arrays.npz
    STORED = {
        "gp_dU": Stored(key="max_abs_U_theory_minus_GP"),
        **{k: Stored(to="live") for k in ("theory", "gp", "solve", "samples")},
        "agreement": Stored(flatten=True),
    }


@dataclass(kw_only=True)
class PosteriorCheckResult:
    """:func:`posterior_check`: the configuration, the problem at the largest width (every width trains on
    its first ``alpha N`` examples; live only) and one :class:`PosteriorCheckRow` per width; ``wall_seconds``
    and ``provenance`` exist once written."""

    scale: str
    config: dict
    problem: ToyProblem | None = field(default=None, repr=False)
    rows: list[PosteriorCheckRow]
    wall_seconds: float | None = None
    provenance: dict | None = None

    EXPERIMENT = "posterior"
    STORED = {
        "problem": Stored(to="live"),
        "rows": Stored(key="per_width", indexed=True),
        "wall_seconds": Stored(none="omit"),
        "provenance": Stored(none="omit"),
    }

    def check(self, folder=None) -> None:
        """Raise ``ValueError`` naming ``folder`` and the field when a row breaks an invariant: widths
        increasing, ``U_theory`` and every ``U_hat`` (Pi, Pi) symmetric with a positive diagonal, accuracies in
        [0, 100] %, and every sampled mean finite and of one length."""
        folder = "<result>" if folder is None else folder
        widths = [row.N for row in self.rows]
        if widths != sorted(set(widths)):
            validate.refuse(folder, f"per_width's widths {widths} are not strictly increasing")
        Pi = int(np.prod(self.config["heads"]))
        for k, row in enumerate(self.rows):
            where = f"per_width[{k}]"
            validate.order_parameters(folder, f"{where}.U_theory", row.U_theory, (Pi, Pi))
            validate.accuracies(folder, f"{where} accuracies", [row.theory_accuracy, row.gp_accuracy])
            for kind, agree in row.agreement.items():
                validate.order_parameters(folder, f"{where}[{kind}].U_hat", agree.U_hat, (Pi, Pi))
                validate.finite(folder, f"{where}[{kind}].mean", agree.mean, (self.config["M"],))
                validate.accuracies(folder, f"{where}[{kind}].accuracy", [agree.accuracy])


def posterior_check(scale: str | None = None, progress: bool = False, samplers=None) -> PosteriorCheckResult:
    """Theory against posterior sampling on the spec's toy problem at fixed load ``alpha = P/N`` (T§16.3).

    For every width ``N`` the first ``P = alpha N`` examples of one seeded teacher problem are the training
    set; the theory is solved, and each of ``samplers`` (names of :data:`attention_paths.sampling.SAMPLER_NAMES`,
    a sequence or a comma-separated string; default ``sampling.SAMPLER_KINDS``, the built-in two) runs at
    every width when it declares ``every_width`` (the Rao-Blackwellised one), else at ``full_widths`` only
    (the full-weight one) (:class:`PosteriorCheckResult`, one :class:`PosteriorCheckRow` per width).

    Long: one loop over widths in which the theory, each sampler and their comparison share the width's data; its
    docstring is a third of it.
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
        y_test = prob.y_test
        row = PosteriorCheckRow(N=N, P=alpha * N, U_theory=theory.U, theory=th, gp=gp, solve=theory)
        row.theory_accuracy, row.gp_accuracy = th.accuracy(y_test), gp.accuracy(y_test)
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
                    accuracy=smp.accuracy(y_test),
                    wall_seconds=smp.wall_seconds,
                    diagnostics=smp.diagnostics,
                    U_hat=smp.U_hat,
                    mean=smp.predictive_mean,
                )
        row.gp_dU = float(np.abs(np.eye(Pi) - theory.U).max())
        rows.append(row)
    return PosteriorCheckResult(scale=scale, config=asdict(cfg), problem=base, rows=rows)


def posterior_summary(res: PosteriorCheckResult) -> tuple[dict, dict]:
    """``(summary, arrays)`` for ``summary.json`` / ``arrays.npz`` (:func:`~attention_paths.base.serialise.to_folder`
    of the declared :class:`PosteriorCheckResult`): per width (``per_width``), the accuracies and each sampler's
    agreement and diagnostics; the order parameters and sampled means as arrays (``per_width_<k>_...``)."""
    return to_folder(res)


def read_posterior_run(folder, summary: dict, arrays: dict) -> PosteriorCheckResult:
    """The :class:`PosteriorCheckResult` of a results folder written by :func:`posterior_summary` (read by
    ``runs.experiments.load_run``), its invariants checked (:meth:`PosteriorCheckResult.check`)."""
    return read_checked(PosteriorCheckResult, summary, arrays, folder)  # with the type's invariants (issue 37 §2)
