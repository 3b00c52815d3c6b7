"""A small synthetic problem with random W-form heads, and the two experiments of the Theory and Sampling
chapters on it: the width sweep (:func:`theory_demo`) and the theory against posterior samples
(:func:`posterior_check`).

Inputs are i.i.d. Gaussian token matrices; labels are the signs of one prior draw of the same
architecture at large width (a "teacher"), so the task is realisable and path-structured.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field

import numpy as np
import torch

from attention_paths import sampling
from attention_paths.base.config import get_scale
from attention_paths.theory.action import Action
from attention_paths.theory.architecture import Architecture
from attention_paths.theory.attention import WFormHeads, readout_vector
from attention_paths.theory.kernels import PathKernel, gp_kernel, renormalized_kernel
from attention_paths.theory.network import AttentionPathNetwork
from attention_paths.theory.paths import path_features, path_inputs
from attention_paths.theory.predictor import Prediction, kernel_alignment, predict
from attention_paths.theory.solver import SolveResult, solve_continuation

__all__ = [
    "random_wform_layers",
    "ToyProblem",
    "make_toy_problem",
    "TheoryDemoConfig",
    "THEORY_DEMO",
    "TheoryDemoResult",
    "theory_demo",
    "theory_summary",
    "PosteriorCheckConfig",
    "POSTERIOR_CHECK",
    "SampleAgreement",
    "PosteriorCheckRow",
    "PosteriorCheckResult",
    "posterior_check",
    "posterior_summary",
]


def random_wform_layers(n0: int, heads, beta: float = 1.0, rng: np.random.Generator | None = None):
    """One :class:`WFormHeads` per layer with i.i.d. ``N(0, beta^2 / N0)`` entries (sharp, input-dependent
    attention)."""
    rng = np.random.default_rng(0) if rng is None else rng
    return [WFormHeads(beta * rng.standard_normal((H, n0, n0)) / np.sqrt(n0)) for H in heads]


@dataclass
class ToyProblem:
    """Training and test inputs, labels, heads and their path features."""

    x_train: np.ndarray  # [P, N0, T]
    y_train: np.ndarray  # [P]
    x_test: np.ndarray  # [M, N0, T]
    y_test: np.ndarray  # [M]
    layers: list
    readout: np.ndarray  # [T]
    features_train: np.ndarray  # [P, N0, Pi]
    features_test: np.ndarray  # [M, N0, Pi]

    @property
    def heads(self) -> tuple[int, ...]:
        return tuple(layer.n_heads for layer in self.layers)

    def subset(self, P: int) -> "ToyProblem":
        """The same problem with only the first ``P`` training examples (the test set is unchanged)."""
        if not 1 <= P <= len(self.y_train):
            raise ValueError(f"P must be between 1 and {len(self.y_train)}, got {P}")
        return ToyProblem(
            self.x_train[:P],
            self.y_train[:P],
            self.x_test,
            self.y_test,
            self.layers,
            self.readout,
            self.features_train[:P],
            self.features_test,
        )

    def path_inputs(self, which: str = "train") -> np.ndarray:
        """Path-processed inputs ``xi`` [P or M, Pi, N0] of the training or test set (for the samplers)."""
        x = {"train": self.x_train, "test": self.x_test}[which]
        return path_inputs(x, self.layers, self.readout).numpy()


def make_toy_problem(
    P: int = 40,
    M: int = 200,
    n0: int = 16,
    T: int = 6,
    heads=(2, 2),
    beta: float = 2.0,
    readout: str = "mean",
    teacher_width: int = 256,
    teacher_path: int | None = None,
    seed: int = 0,
) -> ToyProblem:
    """Build a seeded toy problem (spec T§16.3 configuration by default).

    The labels are ``sign f_teacher(x)`` for one prior draw of the network with all widths equal to
    ``teacher_width`` or, if ``teacher_path`` is given, ``sign(g . xi^pi(x))`` for a random Gaussian
    ``g`` and that single path ``pi`` (a task that only one path can solve).  Train and test inputs
    are independent ``N(0, 1)`` token matrices.
    """
    if P < 1 or M < 1:
        raise ValueError(f"P and M must be positive, got P={P}, M={M}")
    rng = np.random.default_rng(seed)
    layers = random_wform_layers(n0, heads, beta, rng)
    r = readout_vector(readout, T)
    x = rng.standard_normal((P + M, n0, T))
    xi = path_inputs(x, layers, r)
    if teacher_path is None:
        teacher = AttentionPathNetwork(layers, r, (teacher_width,) * (len(heads) + 1))
        teacher.sample_prior(torch.Generator().manual_seed(seed + 1))
        with torch.no_grad():
            f = teacher(x).numpy()
    else:
        if not 0 <= teacher_path < xi.shape[1]:
            raise ValueError(f"teacher_path must index one of the {xi.shape[1]} paths, got {teacher_path}")
        f = xi[:, teacher_path, :].numpy() @ rng.standard_normal(n0)
    y = np.where(f > 0, 1.0, -1.0)
    feats = path_features(xi)
    return ToyProblem(x[:P], y[:P], x[P:], y[P:], layers, r, feats[:P], feats[P:])


# ------------------------------------------------------------------------------------------ the experiments
# The Theory chapter's problem: one path (index 3) carries the label; see book/theory.md.
@dataclass(frozen=True)
class TheoryDemoConfig:
    """Sizes of the Theory chapter's width sweep (:func:`theory_demo`): the toy problem, ``tau``, the widths
    (largest first: the continuation order) and the solver's restarts per width."""

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
    one at ``N = 10``, and their ``alignment_*`` (label overlaps of the first 20 eigenvectors)."""

    scale: str
    config: dict
    problem: ToyProblem
    results: list[SolveResult]
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
    sampler kind (``sampling.SAMPLER_KINDS``; the full-weight sampler only at the config's ``full_widths``)
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


def posterior_check(scale: str | None = None, progress: bool = False) -> PosteriorCheckResult:
    """Theory against posterior sampling on the spec's toy problem at fixed load ``alpha = P/N`` (T§16.3).

    For every width ``N`` the first ``P = alpha N`` examples of one seeded teacher problem are the training
    set; the theory is solved, the Rao-Blackwellised sampler runs at every width and the full-weight
    sampler at ``full_widths`` (:class:`PosteriorCheckResult`, one :class:`PosteriorCheckRow` per width).
    """
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
        for kind in sampling.SAMPLER_KINDS:
            if kind == "rao-blackwell" or N in cfg.full_widths:
                smp = sampling.sample(
                    kind,
                    prob.features_train,
                    prob.y_train,
                    tau,
                    arch,
                    prob.features_test,
                    path_inputs=(prob.path_inputs("train"), prob.path_inputs("test")),
                    config=sconf,
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


def theory_summary(res: TheoryDemoResult) -> tuple[dict, dict]:
    """``(summary, arrays)`` for ``summary.json`` / ``arrays.npz``: per width, accuracy, deviation from the
    GP point and the solver's checks; the sweep's arrays and kernels."""
    summary = {
        "experiment": "theory",
        "scale": res.scale,
        "config": res.config,
        "gp_accuracy_percent": res.gp_accuracy,
        "gp_generalization_error": res.gp_gen_error,
        "per_width": [
            {
                "N": float(N),
                "accuracy_percent": float(a),
                "generalization_error": float(e),
                "max_abs_U_minus_I": float(d),
                "grad_max": float(g),
                "hessian_min_eig": float(h),
                "iterations": int(it),
            }
            for N, a, e, d, g, h, it in zip(
                res.widths, res.accuracy, res.gen_error, res.deviation, res.grad_max, res.hessian_min_eig, res.n_iter
            )
        ],
        "solve_seconds": res.solve_seconds,
    }
    arrays = {
        k: getattr(res, k)
        for k in (
            "widths",
            "U",
            "deviation",
            "accuracy",
            "gen_error",
            "K_gp",
            "K_renorm",
            "alignment_gp",
            "alignment_renorm",
        )
    }
    return summary, arrays
