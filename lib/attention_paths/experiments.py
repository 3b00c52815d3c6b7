"""Experiments shared by the book chapters and the command line (``python -m attention_paths``).

Each experiment is a function ``run(scale) -> dict`` whose result holds plain numbers (the
summary) and arrays; :func:`run_experiment` writes ``summary.json`` and ``arrays.npz``.
"""
from __future__ import annotations

import platform
import subprocess
import time
from pathlib import Path
from typing import Callable

import numpy as np

from . import __version__
from .architecture import Architecture
from .action import Action
from .config import get_scale
from .io import atomic_savez, atomic_write_json
from .kernels import PathKernel, gp_kernel, renormalized_kernel
from .predictor import kernel_alignment, predict
from .solver import solve_continuation
from .toy import make_toy_problem

__all__ = ["EXPERIMENTS", "theory_demo", "posterior_check", "run_experiment", "provenance", "reproducibility_report"]

# The Theory chapter's problem: one path (index 3) carries the label; see book/theory.md.
THEORY_DEMO = {
    "quick": dict(P=150, M=2000, n0=24, T=10, heads=(2, 2), beta=4.0, teacher_path=3, tau=0.5, seed=1,
                  widths=(10000, 3000, 1000, 300, 100, 30, 10, 3), n_restarts=1),
    "paper": dict(P=150, M=2000, n0=24, T=10, heads=(2, 2), beta=4.0, teacher_path=3, tau=0.5, seed=1,
                  widths=(100000, 30000, 10000, 3000, 1000, 300, 100, 30, 10, 3), n_restarts=3),
}


def provenance() -> dict:
    """Code version, platform and time, recorded next to every result."""
    try:
        here = Path(__file__).parent
        commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=here,
                                timeout=10).stdout.strip() or None
        dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                                    text=True, cwd=here, timeout=10).stdout.strip()) if commit else None
    except (OSError, subprocess.SubprocessError):
        commit, dirty = None, None
    return {"package_version": __version__, "git_commit": commit, "git_dirty": dirty, "python": platform.python_version(),
            "numpy": np.__version__, "machine": platform.machine(), "platform": platform.platform(),
            "time_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def reproducibility_report(scale: str | None = None, seeds: dict | None = None, notes: dict | None = None) -> str:
    """The closing "Reproducibility" record of a chapter: scale, seeds, versions, devices, dtype and commit.

    ``seeds`` and ``notes`` are printed as given (e.g. ``{"training set": 27}``); package versions are read
    from the installed distributions, devices from torch and (when already imported) JAX.
    """
    import importlib.metadata as md
    import sys

    from .config import get_scale

    p = provenance()
    lines = [f"scale              REPRO_SCALE={get_scale(scale)}",
             f"code               attention_paths {p['package_version']}, git commit {p['git_commit'] or 'unknown'}"
             + (" (with uncommitted changes)" if p.get("git_dirty") else "")]
    for label, d in (("seeds", seeds), ("notes", notes)):
        for k, v in (d or {}).items():
            lines.append(f"{label:<19}{k}: {v}")
            label = ""
    versions = []
    for dist in ("numpy", "scipy", "torch", "jax", "numpyro", "matplotlib"):
        try:
            versions.append(f"{dist} {md.version(dist)}")
        except md.PackageNotFoundError:
            pass
    lines.append(f"packages           Python {p['python']}, " + ", ".join(versions))
    try:
        import torch

        dev = f"torch: {torch.cuda.get_device_name(0)}" if torch.cuda.is_available() else \
            f"torch: CPU ({torch.get_num_threads()} threads)"
    except Exception:  # pragma: no cover - torch is a dependency
        dev = "torch: unavailable"
    if "jax" in sys.modules:
        import jax

        dev += f"; JAX: {', '.join(sorted({d.platform for d in jax.devices()}))} x {jax.device_count()}"
    lines.append(f"devices            {dev}; {p['machine']}, {p['platform']}")
    lines.append("dtype              float64 for the theory, kernels and sampling; float32 (CPU) or float16 "
                 "autocast (GPU) for training")
    import os

    results = os.environ.get("REPRO_RESULTS", "").strip()
    lines.append("results            " + (f"loaded from REPRO_RESULTS={results} (the stage records printed above "
                                          "say where and when each was computed)" if results
                                          else "computed in this build"))
    lines.append(f"built              {p['time_utc']}")
    return "\n".join(lines)


def theory_demo(scale: str | None = None, progress: bool = False) -> dict:
    """Width sweep of the order parameter on the Theory chapter's toy problem.

    Returns a dict with the configuration, the problem, the solver results (largest width first),
    accuracies, deviations from the GP point and the kernels at the smallest non-trivial width.
    """
    scale = get_scale(scale)
    cfg = dict(THEORY_DEMO[scale])
    tau, widths, heads = cfg["tau"], cfg["widths"], cfg["heads"]
    prob = make_toy_problem(P=cfg["P"], M=cfg["M"], n0=cfg["n0"], T=cfg["T"], heads=heads, beta=cfg["beta"],
                            teacher_path=cfg["teacher_path"], seed=cfg["seed"])
    kernel = PathKernel(prob.features_train)
    t0 = time.perf_counter()
    actions = [Action(kernel, prob.y_train, tau, Architecture.uniform(heads, N)) for N in widths]
    results = solve_continuation(actions, n_restarts=cfg["n_restarts"], progress=progress, desc="widths")
    solve_seconds = time.perf_counter() - t0
    Pi = kernel.n_paths
    gp_pred = predict(np.eye(Pi), prob.features_train, prob.y_train, tau, prob.features_test)
    preds = [predict(r.U, prob.features_train, prob.y_train, tau, prob.features_test) for r in results]
    out = {
        "scale": scale, "config": cfg, "problem": prob, "results": results,
        "widths": np.array(widths, dtype=float),
        "U": np.array([r.U for r in results]),
        "deviation": np.array([np.abs(r.U - np.eye(Pi)).max() for r in results]),
        "accuracy": np.array([p.accuracy(prob.y_test) for p in preds]),
        "gen_error": np.array([p.generalization_error(prob.y_test) for p in preds]),
        "gp_accuracy": gp_pred.accuracy(prob.y_test),
        "gp_gen_error": gp_pred.generalization_error(prob.y_test),
        "grad_max": np.array([r.grad_max for r in results]),
        "hessian_min_eig": np.array([r.hessian_min_eig for r in results]),
        "n_iter": np.array([r.n_iter for r in results]),
        "solve_seconds": solve_seconds,
    }
    i10 = list(widths).index(10)
    out["K_gp"] = gp_kernel(prob.features_train)
    out["K_renorm"] = renormalized_kernel(results[i10].U, prob.features_train)
    out["alignment_gp"] = kernel_alignment(out["K_gp"], prob.y_train, k=20)
    out["alignment_renorm"] = kernel_alignment(out["K_renorm"], prob.y_train, k=20)
    return out


POSTERIOR_CHECK = {
    "quick": dict(n0=16, T=6, heads=(2, 2), beta=2.0, alpha=2, tau=0.05, M=300, seed=0, widths=(10, 20, 40),
                  full_widths=(20,), num_chains=2, num_warmup=300, num_samples=300),
    "paper": dict(n0=16, T=6, heads=(2, 2), beta=2.0, alpha=2, tau=0.05, M=1000, seed=0, widths=(10, 20, 50, 100),
                  full_widths=(10, 20, 50, 100), num_chains=4, num_warmup=500, num_samples=500),
}


def posterior_check(scale: str | None = None, progress: bool = False) -> dict:
    """Theory against posterior sampling on the spec's toy problem at fixed load ``alpha = P/N`` (T§16.3).

    For every width ``N`` the first ``P = alpha N`` examples of one seeded teacher problem are the training
    set; the theory is solved, the Rao-Blackwellised sampler runs at every width and the full-weight
    sampler at ``full_widths``.  Returns per-width order parameters, predictor means and variances
    (theory, GP, samplers), their gaps and the sampler diagnostics.
    """
    from . import sampling  # JAX is imported only when sampling is asked for

    scale = get_scale(scale)
    cfg = dict(POSTERIOR_CHECK[scale])
    widths, alpha, tau = cfg["widths"], cfg["alpha"], cfg["tau"]
    base = make_toy_problem(P=alpha * max(widths), M=cfg["M"], n0=cfg["n0"], T=cfg["T"], heads=cfg["heads"],
                            beta=cfg["beta"], seed=cfg["seed"])
    sconf = sampling.SamplerConfig(num_warmup=cfg["num_warmup"], num_samples=cfg["num_samples"],
                                   num_chains=cfg["num_chains"], seed=cfg["seed"])
    Pi = int(np.prod(cfg["heads"]))
    rows = []
    for N in widths:
        prob = base.subset(alpha * N)
        arch = Architecture.uniform(cfg["heads"], N)
        theory = solve_continuation([Action(PathKernel(prob.features_train), prob.y_train, tau, arch)])[0]
        th = predict(theory.U, prob.features_train, prob.y_train, tau, prob.features_test)
        gp = predict(np.eye(Pi), prob.features_train, prob.y_train, tau, prob.features_test)
        row = {"N": N, "P": alpha * N, "U_theory": theory.U, "theory": th, "gp": gp, "solve": theory}
        row["rb"] = sampling.sample_rao_blackwell(prob.features_train, prob.y_train, tau, arch, prob.features_test,
                                                  config=sconf, progress=progress)
        if N in cfg["full_widths"]:
            row["full"] = sampling.sample_full(prob.path_inputs("train"), prob.y_train, tau, arch,
                                               prob.path_inputs("test"), config=sconf, progress=progress)
        for kind in ("rb", "full"):
            if kind in row:
                smp = row[kind]
                row[f"{kind}_dU"] = float(np.abs(smp.U_hat - theory.U).max())
                row[f"{kind}_rms_theory"] = float(np.sqrt(np.mean((smp.predictive_mean - th.mean) ** 2)))
                row[f"{kind}_rms_gp"] = float(np.sqrt(np.mean((smp.predictive_mean - gp.mean) ** 2)))
        row["gp_dU"] = float(np.abs(np.eye(Pi) - theory.U).max())
        rows.append(row)
    return {"scale": scale, "config": cfg, "problem": base, "rows": rows}


def _posterior_summary(res: dict) -> tuple[dict, dict]:
    per_width, arrays = [], {}
    for row in res["rows"]:
        entry = {"N": row["N"], "P": row["P"], "max_abs_U_theory_minus_GP": row["gp_dU"],
                 "theory_accuracy": row["theory"].accuracy(res["problem"].y_test),
                 "gp_accuracy": row["gp"].accuracy(res["problem"].y_test)}
        arrays[f"N{row['N']}_U_theory"] = row["U_theory"]
        for kind in ("rb", "full"):
            if kind in row:
                smp = row[kind]
                entry[kind] = {"max_abs_Uhat_minus_theory": row[f"{kind}_dU"],
                               "rms_mean_gap_theory": row[f"{kind}_rms_theory"],
                               "rms_mean_gap_gp": row[f"{kind}_rms_gp"],
                               "accuracy": smp.accuracy(res["problem"].y_test),
                               "wall_seconds": smp.wall_seconds, "diagnostics": smp.diagnostics}
                arrays[f"N{row['N']}_U_{kind}"] = smp.U_hat
                arrays[f"N{row['N']}_mean_{kind}"] = smp.predictive_mean
        per_width.append(entry)
    return {"experiment": "posterior", "scale": res["scale"], "config": res["config"], "per_width": per_width}, arrays


def _theory_summary(res: dict) -> tuple[dict, dict]:
    summary = {
        "experiment": "theory", "scale": res["scale"], "config": res["config"],
        "gp_accuracy_percent": res["gp_accuracy"], "gp_generalization_error": res["gp_gen_error"],
        "per_width": [
            {"N": float(N), "accuracy_percent": float(a), "generalization_error": float(e),
             "max_abs_U_minus_I": float(d), "grad_max": float(g), "hessian_min_eig": float(h), "iterations": int(it)}
            for N, a, e, d, g, h, it in zip(res["widths"], res["accuracy"], res["gen_error"], res["deviation"],
                                            res["grad_max"], res["hessian_min_eig"], res["n_iter"])
        ],
        "solve_seconds": res["solve_seconds"],
    }
    arrays = {k: res[k] for k in ("widths", "U", "deviation", "accuracy", "gen_error", "K_gp", "K_renorm",
                                  "alignment_gp", "alignment_renorm")}
    return summary, arrays


def _hmc_run(scale: str | None = None, progress: bool = False) -> dict:
    from .hmc import run_hmc

    return run_hmc(scale, progress=progress)


def _hmc_summary(res: dict) -> tuple[dict, dict]:
    from .hmc import MAIN_PATHS, NOISY_PATHS, hmc_claims, seed_set_label

    def sweep_rows(sw):
        return [{"N": int(N), "accuracy_percent": float(a), "grad_max": float(r.grad_max),
                 "hessian_min_eig": float(r.hessian_min_eig), "iterations": int(r.n_iter), "U": r.U.tolist()}
                for N, a, r in zip(sw["widths"], sw["accuracy"], sw["results"])]

    sets = []
    for s in res["sets"]:
        sets.append({"seed_set": s["k"], "label": seed_set_label(s), "seeds": vars(s["seeds"]),
                     "generator": s["seeds"].generator, "gp_all_percent": s["gp_all"],
                     "gp_path_g_percent": s["gp_g"], "gp_paths_gd_percent": s["gp_gd"],
                     "path_alone_network_percent": dict(zip(MAIN_PATHS, s["alone_network"].tolist())),
                     "path_alone_mask_percent": dict(zip(MAIN_PATHS, s["alone_mask"].tolist())),
                     "head_scores": s["head_scores"],
                     "main": sweep_rows(s["sweep"]),
                     "noisy": sweep_rows(s["noisy_sweep"]), "noisy_gp_percent": s["noisy_sweep"]["gp_accuracy"],
                     "noisy_diagonal_only_percent": s["noisy_diagonal_only"].tolist(),
                     "noisy_equalised_diagonal_percent": s["noisy_equalised_diagonal"].tolist()})
    sampled = {}
    arrays = {"alignment_GP": res["alignment"]["GP"], "alignment_renormalised": res["alignment"]["renormalised"],
              "kernel_subset": res["kernel_subset"]}
    arrays.update({f"kernel_{k}": v for k, v in res["kernels"].items()})
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
                    "network": net, "N": int(N), "kind": smp.kind, "accuracy_percent": smp.accuracy(task.y_test),
                    "accuracy_mcse_percent": smp.accuracy_mcse(task.y_test),
                    "U_hat": smp.U_hat.tolist(), "U_hat_mcse": smp.U_mcse().tolist(),
                    "wall_seconds": smp.wall_seconds, "settings": smp.settings,
                    "diagnostics": smp.diagnostics}
    for k, s in enumerate(res["sets"]):
        arrays[f"set{k}_U_main"] = s["sweep"]["U"]
        arrays[f"set{k}_U_noisy"] = s["noisy_sweep"]["U"]
    arrays["widths"] = res["sets"][0]["sweep"]["widths"]
    summary = {"experiment": "hmc", "scale": res["scale"], "config": res["config"],
               "path_names": {"main": list(MAIN_PATHS), "noisy": list(NOISY_PATHS)},
               "seed_sets": sets, "sampled": sampled, "theory_seconds": res["theory_seconds"],
               "claims": hmc_claims(res)}
    return summary, arrays


def _oneshot_run(scale: str | None = None, progress: bool = False, network: str | None = None,
                 sample: bool = True, budget: dict | None = None) -> dict:
    from .oneshot import run_oneshot

    return run_oneshot(scale, network=network, sample=sample, progress=progress, budget=budget)


def _oneshot_summary(res: dict) -> tuple[dict, dict]:
    from .oneshot import oneshot_summary

    return oneshot_summary(res)


def _pruning_run(scale: str | None = None, progress: bool = False, network: str | None = None, **_) -> dict:
    from .pruning import run_pruning

    return run_pruning(scale, network=network, progress=progress)


def _pruning_summary(res: dict) -> tuple[dict, dict]:
    from .pruning import pruning_summary

    return pruning_summary(res)


EXPERIMENTS: dict[str, tuple[Callable, Callable]] = {
    "theory": (theory_demo, _theory_summary),
    "posterior": (posterior_check, _posterior_summary),
    "hmc": (_hmc_run, _hmc_summary),
    "omniglot-theory": (_oneshot_run, _oneshot_summary),
    "pruning": (_pruning_run, _pruning_summary),
}


def run_experiment(name: str, scale: str | None = None, out: str | Path = "out", progress: bool = True,
                   save_samples: bool = False, **options) -> dict:
    """Run experiment ``name`` and write ``out/summary.json`` and ``out/arrays.npz``; returns the summary.

    With ``save_samples``, every posterior-sampling run is also written whole to
    ``out/samples_<network>_N<width>_<sampler>.npz`` (reload with ``sampling.load_samples``); the summary and
    arrays always hold its posterior means, variances, sampled order parameter and diagnostics.  Other
    keyword ``options`` go to the experiment (``omniglot-theory``: ``network``, ``sample``).
    """
    if name not in EXPERIMENTS:
        raise ValueError(f"unknown experiment {name!r}; choose from {sorted(EXPERIMENTS)}")
    run, summarize = EXPERIMENTS[name]
    prov = provenance()  # the code that runs: recorded before it runs
    t0 = time.perf_counter()
    res = run(scale, progress=progress, **options)
    summary, arrays = summarize(res)
    summary["wall_seconds"] = time.perf_counter() - t0
    summary["provenance"] = prov
    out = Path(out)
    if save_samples:
        for net, per_N in res.get("samples", {}).items():
            if not isinstance(per_N, dict):  # {width: PosteriorSamples} (omniglot-theory)
                per_N.save(out / f"samples_N{net}_{per_N.kind}.npz")
                continue
            for N, entry in per_N.items():
                for kind, smp in entry.items():
                    smp.save(out / f"samples_{net}_N{N}_{kind}.npz")
    atomic_savez(out / "arrays.npz", **arrays)
    atomic_write_json(out / "summary.json", summary)
    return summary
