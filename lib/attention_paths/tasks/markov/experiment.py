"""The hidden-Markov-chain chapter's computation (spec §A.4-A.8): its sizes per scale (:data:`HMC_EXPERIMENT`),
the theory's width sweeps, ablations and seed sets (:func:`run_hmc`), posterior sampling
(:func:`sample_hmc`), and the JSON record and arrays of its results folder (:func:`hmc_summary`)."""

from __future__ import annotations

import time
import warnings
from dataclasses import asdict, dataclass, field

import numpy as np

from attention_paths import sampling
from attention_paths.base import validate
from attention_paths.base.config import get_scale
from attention_paths.tasks.markov.claims import hmc_claims
from attention_paths.tasks.markov.task import (
    MAIN_PATHS,
    NOISY_PATHS,
    HMCSeeds,
    HMCTask,
    _accuracy_with,
    make_hmc_task,
    seed_set_label,
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
    "HMCExperimentConfig",
    "HMC_EXPERIMENT",
    "theory_sweep",
    "ablations",
    "seed_set_summary",
    "run_hmc",
    "sample_hmc",
    "hmc_summary",
    "read_hmc_run",
]


@dataclass(frozen=True)
class HMCExperimentConfig:
    """Sizes of the hidden-Markov-chain chapter (:func:`run_hmc`): the theory's widths, ``tau``, the training
    and test set sizes, the number of numpy seed sets beside the reference's, the widths of the heat maps,
    the kernel rows shown (two class blocks), the alignment's ``k``, the sampling plan (per network, the
    widths of each sampler of ``sampling.SAMPLER_KINDS``) and the NUTS settings."""

    widths: tuple = (10, 30, 50, 100, 300, 500, 1000)
    tau: float = 0.01
    P: int = 100
    P_test: int = 1000
    seed_sets: int = 5
    heat_widths: tuple = (10, 100, 1000)
    kernel_subset: tuple = (tuple(range(0, 25)), tuple(range(75, 100)))
    n_align: int = 30
    sampling: dict = field(
        default_factory=lambda: {
            "main": {"rao-blackwell": (10,), "full": ()},
            "noisy": {"rao-blackwell": (10,), "full": ()},
        }
    )
    sampler: dict = field(default_factory=lambda: dict(num_chains=2, num_warmup=300, num_samples=300, seed=1))


HMC_EXPERIMENT = {
    # The theory runs at the paper's sizes at both scales; only the sampling budget differs.
    "quick": HMCExperimentConfig(),
    "paper": HMCExperimentConfig(
        # the Rao-Blackwellised sampler is ~10x faster per effective sample here (P = 100); the
        # full-weight one cross-checks it at N = 10
        sampling={
            "main": {"rao-blackwell": (10, 30, 100), "full": (10,)},
            "noisy": {"rao-blackwell": (10, 30, 100), "full": (10,)},
        },
        sampler=dict(num_chains=4, num_warmup=500, num_samples=500, seed=1, chain_method="parallel"),
    ),
}


def theory_sweep(task: HMCTask, widths, tau: float, progress: bool = False) -> dict:
    """Order parameter and test accuracy of ``task`` at every width (solved from the widest down).

    Returns a dict with ``widths`` (ascending), the :class:`~attention_paths.theory.solver.SolveResult` list,
    ``U`` [n_widths, Pi, Pi], ``accuracy`` [n_widths], the GP accuracy and the theory :class:`Prediction`
    objects.
    """
    widths = sorted(widths)
    kernel = PathKernel(task.features_train)
    actions = [Action(kernel, task.y_train, tau, Architecture.uniform(task.heads, N)) for N in reversed(widths)]
    results = solve_continuation(actions, progress=progress, desc=f"{task.name} widths")[::-1]
    preds = [predict(r.U, task.features_train, task.y_train, tau, task.features_test) for r in results]
    gp = predict(np.eye(task.n_paths), task.features_train, task.y_train, tau, task.features_test)
    return {
        "widths": np.array(widths),
        "results": results,
        "U": np.array([r.U for r in results]),
        "predictions": preds,
        "accuracy": np.array([p.accuracy(task.y_test) for p in preds]),
        "gp": gp,
        "gp_accuracy": gp.accuracy(task.y_test),
    }


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


def seed_set_summary(k, widths, tau: float, P: int = 100, P_test: int = 1000, seeds: HMCSeeds | None = None) -> dict:
    """Theory, GP lines, "each path alone" and the 2-path network for one seed set (robustness, H9).

    ``k``: the numpy seed set :meth:`HMCSeeds.shifted` ``(k)``, or ``"ref"`` with ``seeds`` =
    :meth:`HMCSeeds.reference` (the reference's own data and heads).
    """
    seeds = seeds or HMCSeeds().shifted(k)
    main = make_hmc_task("main", seeds, P, P_test)
    sw = theory_sweep(main, widths, tau)
    noisy = make_hmc_task("noisy", seeds, P, P_test)
    nsw = theory_sweep(noisy, widths, tau)
    out = {
        "k": k,
        "seeds": seeds,
        "main": main,
        "sweep": sw,
        "noisy": noisy,
        "noisy_sweep": nsw,
        "gp_all": sw["gp_accuracy"],
        "gp_g": _accuracy_with(main, subnetwork_U(4, [0]), tau),
        "gp_gd": _accuracy_with(main, subnetwork_U(4, [0, 2]), tau),
        "alone_network": np.array([_accuracy_with(main, single_path_U(4, p), tau) for p in range(4)]),
        "alone_mask": np.array([_accuracy_with(main, single_path_U(4, p, False), tau) for p in range(4)]),
        "head_scores": [s.tolist() for s in head_scores(sw["U"][0], main.heads)],
    }
    abl = [ablations(U) for U in nsw["U"]]
    out["noisy_diagonal_only"] = np.array([_accuracy_with(noisy, a["diagonal_only"], tau) for a in abl])
    out["noisy_equalised_diagonal"] = np.array([_accuracy_with(noisy, a["equalised_diagonal"], tau) for a in abl])
    return out


def run_hmc(scale: str | None = None, progress: bool = False, sample: bool = True) -> dict:
    """Everything the hidden-Markov-chain chapter shows (spec §A.6, claims §A.7).

    Theory at the paper's sizes on the reference's data (``sets[0]``, the headline; spec §A.1b) and on
    ``seed_sets`` independent numpy seed sets, kernels and label
    alignment at ``N = 10``, and posterior sampling of both networks at the widths of the scale's config
    (Rao-Blackwellised and full-weight NUTS).  ``sample=False`` skips the sampling.
    """
    scale = get_scale(scale)
    cfg = HMC_EXPERIMENT[scale]
    tau, widths = cfg.tau, cfg.widths
    t0 = time.perf_counter()
    # the headline: the reference's own data and heads (spec §A.1b); then independent numpy seed sets
    sets = [seed_set_summary("ref", widths, tau, cfg.P, cfg.P_test, HMCSeeds.reference())]
    sets += [seed_set_summary(k, widths, tau, cfg.P, cfg.P_test) for k in range(cfg.seed_sets)]
    theory_seconds = time.perf_counter() - t0
    head = sets[0]
    main, sw = head["main"], head["sweep"]
    i10 = list(sw["widths"]).index(10)
    U10 = sw["U"][i10]
    sub = np.concatenate([np.array(s) for s in cfg.kernel_subset])
    Xs = main.features_train[sub]
    Pi = main.n_paths
    kernels = {f"C_{main.path_names[p]}": Pi * path_kernel(Xs, p) for p in range(Pi)}  # without the 1/Pi
    kernels["GP"] = gp_kernel(Xs)
    kernels["renormalised"] = renormalized_kernel(U10, Xs)
    K_gp, K_rn = gp_kernel(main.features_train), renormalized_kernel(U10, main.features_train)
    contrast = {
        "GP": class_block_contrast(K_gp, main.y_train),
        "renormalised": class_block_contrast(K_rn, main.y_train),
    }
    res = {
        "scale": scale,
        "config": asdict(cfg),
        "sets": sets,
        "theory_seconds": theory_seconds,
        "block_contrast": contrast,
        "kernels": kernels,
        "kernel_subset": sub,
        "alignment": {
            "GP": kernel_alignment(K_gp, main.y_train, cfg.n_align),
            "renormalised": kernel_alignment(K_rn, main.y_train, cfg.n_align),
        },
        "samples": {"main": {}, "noisy": {}},
    }
    if sample:
        res["samples"] = sample_hmc(head, cfg, progress)
    return res


def sample_hmc(head: dict, cfg: HMCExperimentConfig, progress: bool = False) -> dict:
    """Posterior samples of the 4-path and 2-path networks at the widths listed in ``cfg.sampling``.

    Returns ``{network: {N: {kind: PosteriorSamples}}}``, ``kind`` one of ``sampling.SAMPLER_KINDS`` in that
    order.
    """
    sconf = sampling.SamplerConfig(**cfg.sampler)
    out = {}
    for net in ("main", "noisy"):
        task = head[net]
        plan = cfg.sampling[net]
        unknown = set(plan) - set(sampling.SAMPLER_KINDS)
        if unknown:
            raise ValueError(
                f"cfg.sampling[{net!r}] names unknown samplers {sorted(unknown)}: use {sampling.SAMPLER_KINDS}"
            )
        out[net] = {}
        for N in sorted(set().union(*plan.values())):
            arch = Architecture.uniform(task.heads, N)
            entry = {}
            with warnings.catch_warnings():
                warnings.simplefilter("always", sampling.SamplingWarning)
                for kind in sampling.SAMPLER_KINDS:
                    if N in plan.get(kind, ()):
                        entry[kind] = sampling.sample(
                            kind,
                            task.features_train,
                            task.y_train,
                            cfg.tau,
                            arch,
                            task.features_test,
                            path_inputs=(task.xi_train, task.xi_test),
                            config=sconf,
                            progress=progress,
                        )
            out[net][N] = entry
    return out


def hmc_summary(res: dict) -> tuple[dict, dict]:
    """``(summary, arrays)`` of a :func:`run_hmc` result: the JSON record and the arrays of its results folder."""
    arrays = {
        "alignment_GP": res["alignment"]["GP"],
        "alignment_renormalised": res["alignment"]["renormalised"],
        "kernel_subset": res["kernel_subset"],
    }
    arrays.update({f"kernel_{k}": v for k, v in res["kernels"].items()})
    sampled = _sampled_records(res, arrays)
    for k, s in enumerate(res["sets"]):
        arrays[f"set{k}_U_main"] = s["sweep"]["U"]
        arrays[f"set{k}_U_noisy"] = s["noisy_sweep"]["U"]
    arrays["widths"] = res["sets"][0]["sweep"]["widths"]
    summary = {
        "experiment": "hmc",
        "scale": res["scale"],
        "config": res["config"],
        "path_names": {"main": list(MAIN_PATHS), "noisy": list(NOISY_PATHS)},
        "seed_sets": [_seed_set_record(s) for s in res["sets"]],
        "sampled": sampled,
        "theory_seconds": res["theory_seconds"],
        "claims": hmc_claims(res),
    }
    return summary, arrays


def _sweep_records(sw: dict) -> list[dict]:
    """One JSON row per width of a sweep: accuracy, solver report and ``U``."""
    return [
        {
            "N": int(N),
            "accuracy_percent": float(a),
            "grad_max": float(r.grad_max),
            "hessian_min_eig": float(r.hessian_min_eig),
            "iterations": int(r.n_iter),
            "U": r.U.tolist(),
        }
        for N, a, r in zip(sw["widths"], sw["accuracy"], sw["results"])
    ]


def _seed_set_record(s: dict) -> dict:
    """The JSON record of one seed set's theory: GP lines, single paths, both sweeps, the noisy controls."""
    return {
        "seed_set": s["k"],
        "label": seed_set_label(s),
        "seeds": vars(s["seeds"]),
        "generator": s["seeds"].generator,
        "gp_all_percent": s["gp_all"],
        "gp_path_g_percent": s["gp_g"],
        "gp_paths_gd_percent": s["gp_gd"],
        "path_alone_network_percent": dict(zip(MAIN_PATHS, s["alone_network"].tolist())),
        "path_alone_mask_percent": dict(zip(MAIN_PATHS, s["alone_mask"].tolist())),
        "head_scores": s["head_scores"],
        "main": _sweep_records(s["sweep"]),
        "noisy": _sweep_records(s["noisy_sweep"]),
        "noisy_gp_percent": s["noisy_sweep"]["gp_accuracy"],
        "noisy_diagonal_only_percent": s["noisy_diagonal_only"].tolist(),
        "noisy_equalised_diagonal_percent": s["noisy_equalised_diagonal"].tolist(),
    }


def _sampled_records(res: dict, arrays: dict) -> dict:
    """The JSON record of every sampling run, keyed ``<network>_N<width>_<sampler>``; adds its arrays
    (posterior mean, variance, Monte Carlo error, ``U_hat``) to ``arrays``."""
    sampled = {}
    for net, per_N in res["samples"].items():
        task = res["sets"][0][net]
        for N, entry in per_N.items():
            for kind, smp in entry.items():
                key = f"{net}_N{N}_{kind}"
                arrays[f"sample_{key}_mean"] = smp.predictive_mean
                arrays[f"sample_{key}_var"] = smp.predictive_var
                arrays[f"sample_{key}_mcse"] = smp.mc_standard_error()
                arrays[f"sample_{key}_U_hat"] = smp.U_hat
                sampled[key] = {
                    "network": net,
                    "N": int(N),
                    "kind": smp.kind,
                    "accuracy_percent": smp.accuracy(task.y_test),
                    "accuracy_mcse_percent": smp.accuracy_mcse(task.y_test),
                    "U_hat": smp.U_hat.tolist(),
                    "U_hat_mcse": smp.U_mcse().tolist(),
                    "wall_seconds": smp.wall_seconds,
                    "settings": smp.settings,
                    "diagnostics": smp.diagnostics,
                }
    return sampled


def read_hmc_run(folder, summary: dict, arrays: dict) -> dict:
    """The reloaded results folder of :func:`hmc_summary` (read by ``runs.experiments.load_run``): the summary,
    with every sampling run's arrays (posterior ``mean``, ``var``, ``mcse``, ``U_hat``) under
    ``summary["sampled"][key]["arrays"]``, ``key = "<network>_N<width>_<sampler>"``; checked finite, ``U_hat``
    symmetric with a positive diagonal."""
    for key, entry in summary["sampled"].items():
        entry["arrays"] = {part: arrays[f"sample_{key}_{part}"] for part in ("mean", "var", "mcse", "U_hat")}
        for part, a in entry["arrays"].items():
            validate.finite(folder, f"sample_{key}_{part}", a)
        U_hat = entry["arrays"]["U_hat"]
        validate.order_parameters(folder, f"sample_{key}_U_hat", U_hat, U_hat.shape)
    return summary
