"""The hidden-Markov-chain chapter's computation (spec §A.4-A.8): the theory's width sweeps, ablations and seed
sets (:func:`run_markov`, at the sizes of :data:`~.config.MARKOV_EXPERIMENT`), posterior sampling
(:func:`sample_markov`), and its results folder (:func:`markov_summary`, :func:`read_markov_run`: the serialiser,
from the result type's declarations)."""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from attention_paths import sampling
from attention_paths.base.config import get_scale
from attention_paths.base.serialise import from_folder, to_folder
from attention_paths.tasks.claim import check_stored_claims
from attention_paths.tasks.markov.claims import markov_claims, measured_claims, stored_claims
from attention_paths.tasks.markov.config import MARKOV_EXPERIMENT, MarkovExperimentConfig
from attention_paths.tasks.markov.layout1 import is_layout1, read_layout1
from attention_paths.tasks.markov.result import MarkovResult, MarkovSampledRun, SeedSet, WidthSweep
from attention_paths.tasks.markov.task import (
    MarkovSeeds,
    MarkovTask,
    _accuracy_with,
    _correct_with,
    make_markov_task,
    single_path_U,
    subnetwork_U,
)
from attention_paths.theory.action import Action
from attention_paths.theory.architecture import Architecture
from attention_paths.theory.kernels import PathKernel, gp_kernel, path_kernel, renormalized_kernel
from attention_paths.theory.predictor import class_block_contrast, kernel_alignment, predict
from attention_paths.theory.scores import head_scores
from attention_paths.theory.solver import solve_continuation

__all__ = [
    "MarkovExperimentConfig",
    "MARKOV_EXPERIMENT",
    "theory_sweep",
    "ablations",
    "paired_difference",
    "gp_gd_minus_g",
    "with_gp_gd_minus_g",
    "seed_set_summary",
    "run_markov",
    "sample_markov",
    "markov_summary",
    "read_markov_run",
]


def theory_sweep(task: MarkovTask, widths, tau: float, progress: bool = False) -> WidthSweep:
    """Order parameter and test accuracy of ``task`` at every width (solved from the widest down), with
    the GP's accuracy: a :class:`~.result.WidthSweep` (widths ascending)."""
    widths = sorted(widths)
    kernel = PathKernel(task.features_train)
    actions = [Action(kernel, task.y_train, tau, Architecture.uniform(task.heads, N)) for N in reversed(widths)]
    results = solve_continuation(actions, progress=progress, desc=f"{task.name} widths")[::-1]
    preds = [predict(r.U, task.features_train, task.y_train, tau, task.features_test) for r in results]
    gp = predict(np.eye(task.n_paths), task.features_train, task.y_train, tau, task.features_test)
    return WidthSweep(
        widths=np.array(widths),
        U=np.array([r.U for r in results]),
        accuracy=np.array([p.accuracy(task.y_test) for p in preds]),
        gp_accuracy=gp.accuracy(task.y_test),
        grad_max=np.array([float(r.grad_max) for r in results]),
        hessian_min_eig=np.array([float(r.hessian_min_eig) for r in results]),
        iterations=np.array([int(r.n_iter) for r in results]),
        results=results,
        predictions=preds,
        gp=gp,
    )


def ablations(U) -> dict:
    """The two diagnostic variants of a 2x2 (g, d) order parameter (spec §A.6 item 5).

    ``diagonal_only``: off-diagonal entries set to zero; ``equalised_diagonal``: both diagonal entries set
    to ``U_gg`` with the off-diagonal kept.
    """
    U = np.asarray(U, dtype=np.float64)
    if U.shape != (2, 2):
        raise ValueError(f"ablations are defined for the 2-path network, got U of shape {U.shape}")
    return {
        "diagonal_only": np.diag(np.diag(U)),
        "equalised_diagonal": np.array([[U[0, 0], U[0, 1]], [U[0, 1], U[0, 0]]]),
    }


def paired_difference(correct_a, correct_b) -> tuple[float, float]:
    """Accuracy of predictor b minus that of predictor a on the same test examples, in points, and its paired
    standard error ``100 std(c_b - c_a, ddof=1) / sqrt(n)`` (``c`` = 1 where a predictor is right, else 0)."""
    a, b = np.asarray(correct_a, dtype=np.float64), np.asarray(correct_b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1 or a.size < 2:
        raise ValueError(f"need two correctness vectors of the same n >= 2 examples, got shapes {a.shape}, {b.shape}")
    d = b - a
    return 100.0 * float(d.mean()), 100.0 * float(d.std(ddof=1) / np.sqrt(d.size))


def _gp_g_and_gd(main: MarkovTask, tau: float) -> tuple[np.ndarray, np.ndarray]:
    """Per-test-sequence correctness of the GP lines "path g" and "paths g+d" of the 4-path task ``main``."""
    return _correct_with(main, subnetwork_U(4, [0]), tau), _correct_with(main, subnetwork_U(4, [0, 2]), tau)


def gp_gd_minus_g(main: MarkovTask, tau: float) -> tuple[float, float]:
    """The "paths g+d" GP line minus the "path g" one on the test sequences of the 4-path task ``main``:
    ``(difference, paired standard error)`` in points (:func:`paired_difference`; claim H4b)."""
    return paired_difference(*_gp_g_and_gd(main, tau))


def with_gp_gd_minus_g(res: MarkovResult) -> MarkovResult:
    """``res`` with :attr:`~.result.SeedSet.gp_gd_minus_g` on every seed set: a reloaded run written before it
    was recorded gets it recomputed from its stored seeds and sizes (the GP lines are deterministic: a few
    seconds per seed set), checked against the run's stored GP lines (``ValueError`` if they differ)."""
    cfg, sets = res.config, []
    for s in res.sets:
        if s.gp_gd_minus_g is None:
            main = s.main if s.main is not None else make_markov_task("main", s.seeds, cfg.P, cfg.P_test)
            d = gp_gd_minus_g(main, cfg.tau)
            if abs(d[0] - (s.gp_gd - s.gp_g)) > 1e-9:
                raise ValueError(
                    f"seed set {s.label}: recomputed GP lines differ from the stored ones "
                    f"(g+d - g = {d[0]:.3f} here, {s.gp_gd - s.gp_g:.3f} stored)"
                )
            s = replace(s, gp_gd_minus_g=d)
        sets.append(s)
    return replace(res, sets=sets)


def seed_set_summary(
    k, widths, tau: float, P: int = 100, P_test: int = 1000, seeds: MarkovSeeds | None = None
) -> SeedSet:
    """Theory, GP lines, "each path alone" and the 2-path network for one seed set (robustness, H9).

    ``k``: the numpy seed set :meth:`MarkovSeeds.shifted` ``(k)``, or ``"ref"`` with ``seeds`` =
    :meth:`MarkovSeeds.reference` (the reference's own data and heads).
    """
    seeds = seeds or MarkovSeeds().shifted(k)
    main = make_markov_task("main", seeds, P, P_test)
    sw = theory_sweep(main, widths, tau)
    noisy = make_markov_task("noisy", seeds, P, P_test)
    nsw = theory_sweep(noisy, widths, tau)
    abl = [ablations(U) for U in nsw.U]
    c_g, c_gd = _gp_g_and_gd(main, tau)
    return SeedSet(
        k=k,
        seeds=seeds,
        main=main,
        sweep=sw,
        noisy=noisy,
        noisy_sweep=nsw,
        gp_all=sw.gp_accuracy,
        gp_g=100.0 * float(np.mean(c_g)),  # = _accuracy_with(main, subnetwork_U(4, [0]), tau)
        gp_gd=100.0 * float(np.mean(c_gd)),
        gp_gd_minus_g=paired_difference(c_g, c_gd),
        alone_network=np.array([_accuracy_with(main, single_path_U(4, p), tau) for p in range(4)]),
        alone_mask=np.array([_accuracy_with(main, single_path_U(4, p, False), tau) for p in range(4)]),
        head_scores=[s.tolist() for s in head_scores(sw.U[0], main.heads)],
        noisy_diagonal_only=np.array([_accuracy_with(noisy, a["diagonal_only"], tau) for a in abl]),
        noisy_equalised_diagonal=np.array([_accuracy_with(noisy, a["equalised_diagonal"], tau) for a in abl]),
    )


def run_markov(scale: str | None = None, progress: bool = False, sample: bool = True) -> MarkovResult:
    """Everything the hidden-Markov-chain chapter shows (spec §A.6, claims §A.7).

    Theory at the paper's sizes on the reference's data (``sets[0]``, the headline; spec §A.1b) and on
    ``seed_sets`` independent numpy seed sets, kernels and label
    alignment at ``N = 10``, and posterior sampling of both networks at the widths of the scale's config
    (Rao-Blackwellised and full-weight NUTS).  ``sample=False`` skips the sampling.
    """
    scale = get_scale(scale)
    cfg = MARKOV_EXPERIMENT[scale]
    tau, widths = cfg.tau, cfg.widths
    t0 = time.perf_counter()
    # the headline: the reference's own data and heads (spec §A.1b); then independent numpy seed sets
    sets = [seed_set_summary("ref", widths, tau, cfg.P, cfg.P_test, MarkovSeeds.reference())]
    sets += [seed_set_summary(k, widths, tau, cfg.P, cfg.P_test) for k in range(cfg.seed_sets)]
    theory_seconds = time.perf_counter() - t0
    main, sw = sets[0].main, sets[0].sweep
    U10 = sw.U[sw.at(10)]
    sub = np.concatenate([np.array(s) for s in cfg.kernel_subset])
    Xs = main.features_train[sub]
    Pi = main.n_paths
    kernels = {f"C_{main.path_names[p]}": Pi * path_kernel(Xs, p) for p in range(Pi)}  # without the 1/Pi
    kernels["GP"] = gp_kernel(Xs)
    kernels["renormalised"] = renormalized_kernel(U10, Xs)
    K_gp, K_rn = gp_kernel(main.features_train), renormalized_kernel(U10, main.features_train)
    return MarkovResult(
        scale=scale,
        config=cfg,
        sets=sets,
        theory_seconds=theory_seconds,
        kernels=kernels,
        kernel_subset=sub,
        alignment={
            "GP": kernel_alignment(K_gp, main.y_train, cfg.n_align),
            "renormalised": kernel_alignment(K_rn, main.y_train, cfg.n_align),
        },
        block_contrast={
            "GP": class_block_contrast(K_gp, main.y_train),
            "renormalised": class_block_contrast(K_rn, main.y_train),
        },
        sampled=sample_markov(sets[0], cfg, progress) if sample else {},
    )


def sample_markov(head: SeedSet, cfg: MarkovExperimentConfig, progress: bool = False) -> dict[str, MarkovSampledRun]:
    """Posterior samples of the 4-path and 2-path networks of the seed set ``head`` at the widths listed in
    ``cfg.sampling``: ``{key: MarkovSampledRun}`` (:attr:`~.result.MarkovSampledRun.key`), per network and width in the
    order of ``sampling.SAMPLER_NAMES`` (every sampler usable by name, built-in ones first)."""
    sconf = sampling.SamplerConfig(**cfg.sampler)
    out = {}
    for net in ("main", "noisy"):
        task = getattr(head, net)
        plan = cfg.sampling[net]
        unknown = set(plan) - set(sampling.SAMPLER_NAMES)  # every sampler usable by name, built-in ones first
        if unknown:
            raise ValueError(
                f"cfg.sampling[{net!r}] names unknown samplers {sorted(unknown)}: use {tuple(sampling.SAMPLER_NAMES)}"
            )
        for N in sorted(set().union(*plan.values())):
            arch = Architecture.uniform(task.heads, N)
            for kind in sampling.SAMPLER_NAMES:  # sampling.sample shows every run's SamplingWarning
                if N in plan.get(kind, ()):
                    config = sampling.get_sampler(kind).configure(sconf, path_inputs=(task.xi_train, task.xi_test))
                    smp = sampling.sample(
                        kind,
                        task.features_train,
                        task.y_train,
                        cfg.tau,
                        arch,
                        task.features_test,
                        config=config,
                        progress=progress,
                    )
                    run = _sampled_run(net, N, smp, task.y_test)
                    out[run.key] = run
    return out


def _sampled_run(net: str, N: int, smp, y_test) -> MarkovSampledRun:
    return MarkovSampledRun(
        network=net,
        N=int(N),
        kind=smp.kind,
        accuracy=smp.accuracy(y_test),
        accuracy_mcse=smp.accuracy_mcse(y_test),
        U_hat=smp.U_hat,
        U_hat_mcse=smp.U_mcse(),
        mean=smp.predictive_mean,
        var=smp.predictive_var,
        mcse=smp.mc_standard_error(),
        wall_seconds=smp.wall_seconds,
        settings=smp.settings,
        diagnostics=smp.diagnostics,
        samples=smp,
    )


def markov_summary(res: MarkovResult) -> tuple[dict, dict]:
    """``(summary, arrays)`` of an :class:`~.result.MarkovResult`, by the serialiser
    (:func:`attention_paths.base.serialise.to_folder` of the fields as the type declares them: layout 2).  The
    claims are checked here on a live result; a reloaded one has those its stored numbers give recomputed
    (:func:`~.claims.stored_claims`) and keeps the others (:func:`~.claims.measured_claims`) as it was written with."""
    if res.live:
        return to_folder(replace(res, claims=markov_claims(res)))
    fresh = {c["id"]: c for c in stored_claims(res)}
    claims = None if res.claims is None else [fresh.get(c["id"], c) for c in res.claims]
    return to_folder(replace(res, claims=claims))


def read_markov_run(folder, summary: dict, arrays: dict) -> MarkovResult:
    """The :class:`~.result.MarkovResult` of a results folder written by :func:`markov_summary` (read by
    ``runs.experiments.load_run``; :func:`attention_paths.base.serialise.from_folder`), or of one in the
    deprecated layout 1 (:func:`~.layout1.read_layout1`, with a ``FutureWarning``), checked against the type's
    invariants (:meth:`~.result.MarkovResult.check`)."""
    if is_layout1(summary):
        res = read_layout1(folder, summary, arrays)
    else:
        res = from_folder(MarkovResult, summary, arrays, folder)
    res.check(folder)  # the type's invariants (issue 37 §2)
    # the stored verdicts agree with what the stored numbers give (issue 52), but for those needing predictions
    check_stored_claims(res.claims, stored_claims(res), folder, measured=measured_claims(res))
    return res
