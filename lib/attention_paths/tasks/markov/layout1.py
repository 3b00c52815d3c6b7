"""The reader of ``hmc`` results folders in layout 1 (deprecated): the hand-written summary that 0.2 wrote before
the result went through the serialiser (layout 2, :attr:`~.result.MarkovResult.LAYOUT`).

Layout 1 keeps one JSON row per width (``seed_sets[k].main`` / ``.noisy``: ``N``, ``accuracy_percent``, the
solver's report and ``U``), ``U`` again in ``arrays.npz`` (``set<k>_U_main``, ``set<k>_U_noisy``, checked equal),
the headline's widths (``widths``), labels computed from the seeds (``label``, ``generator``, ``path_names``) and
``_percent`` names.  :func:`read_layout1` reads it into the same :class:`~.result.MarkovResult` (every value
unchanged) with a ``FutureWarning``; written again (``markov.markov_summary``), the run is in layout 2.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

from attention_paths.base import validate
from attention_paths.tasks.markov.config import config_from_record
from attention_paths.tasks.markov.result import MarkovResult, MarkovSampledRun, SeedSet, WidthSweep
from attention_paths.tasks.markov.task import MAIN_PATHS, MarkovSeeds

__all__ = ["is_layout1", "read_layout1", "SAMPLED_ARRAYS"]

# the arrays of a sampling run in a layout-1 folder: name suffix -> MarkovSampledRun attribute
SAMPLED_ARRAYS = {"mean": "mean", "var": "var", "mcse": "mcse", "U_hat": "U_hat"}


def is_layout1(summary: dict) -> bool:
    """Whether an ``hmc`` summary is in layout 1 (every later layout records itself in a ``layout`` entry)."""
    return "layout" not in summary


def _read_sweep(rows: list[dict], gp_accuracy: float, U: np.ndarray) -> WidthSweep:
    return WidthSweep(
        widths=np.array([r["N"] for r in rows]),
        U=U,
        accuracy=np.array([r["accuracy_percent"] for r in rows]),
        gp_accuracy=gp_accuracy,
        grad_max=np.array([r["grad_max"] for r in rows]),
        hessian_min_eig=np.array([r["hessian_min_eig"] for r in rows]),
        iterations=np.array([r["iterations"] for r in rows]),
    )


def _read_seed_set(k: int, rec: dict, arrays: dict) -> SeedSet:
    return SeedSet(
        k=rec["seed_set"],
        seeds=MarkovSeeds(**rec["seeds"]),
        sweep=_read_sweep(rec["main"], rec["gp_all_percent"], arrays[f"set{k}_U_main"]),
        noisy_sweep=_read_sweep(rec["noisy"], rec["noisy_gp_percent"], arrays[f"set{k}_U_noisy"]),
        gp_all=rec["gp_all_percent"],
        gp_g=rec["gp_path_g_percent"],
        gp_gd=rec["gp_paths_gd_percent"],
        gp_gd_minus_g=tuple(rec["gp_gd_minus_g_points"]) if "gp_gd_minus_g_points" in rec else None,
        alone_network=np.array([rec["path_alone_network_percent"][p] for p in MAIN_PATHS]),
        alone_mask=np.array([rec["path_alone_mask_percent"][p] for p in MAIN_PATHS]),
        head_scores=rec["head_scores"],
        noisy_diagonal_only=np.array(rec["noisy_diagonal_only_percent"]),
        noisy_equalised_diagonal=np.array(rec["noisy_equalised_diagonal_percent"]),
    )


def _read_sampled(key: str, rec: dict, arrays: dict) -> MarkovSampledRun:
    part = {a: arrays[f"sample_{key}_{suffix}"] for suffix, a in SAMPLED_ARRAYS.items()}
    return MarkovSampledRun(
        network=rec["network"],
        N=int(rec["N"]),
        kind=rec["kind"],
        accuracy=rec["accuracy_percent"],
        accuracy_mcse=rec.get("accuracy_mcse_percent"),
        U_hat_mcse=np.asarray(rec["U_hat_mcse"]),
        wall_seconds=rec["wall_seconds"],
        settings=rec["settings"],
        diagnostics=rec["diagnostics"],
        **part,
    )


def _check_arrays(folder, summary: dict, arrays: dict) -> None:
    """Every sampling run's arrays finite, its ``U_hat`` symmetric with a positive diagonal, and each seed set's
    ``U`` in arrays.npz that of its rows in summary.json."""
    for key in summary["sampled"]:
        for suffix in SAMPLED_ARRAYS:
            validate.finite(folder, f"sample_{key}_{suffix}", arrays[f"sample_{key}_{suffix}"])
        U_hat = arrays[f"sample_{key}_U_hat"]
        validate.order_parameters(folder, f"sample_{key}_U_hat", U_hat, U_hat.shape)
    for k, rec in enumerate(summary["seed_sets"]):  # U is written twice: in the rows and in the arrays
        for net in ("main", "noisy"):
            rows, U = [r["U"] for r in rec[net]], arrays[f"set{k}_U_{net}"]
            if np.shape(rows) != U.shape or not np.allclose(rows, U, rtol=1e-12, atol=0, equal_nan=True):
                validate.refuse(folder, f"set{k}_U_{net} in arrays.npz is not the U of summary.json's rows")


def read_layout1(folder, summary: dict, arrays: dict) -> MarkovResult:
    """The :class:`~.result.MarkovResult` of an ``hmc`` results folder in layout 1 (not yet checked against its
    invariants: the caller, :func:`~.experiment.read_markov_run`, does), with a ``FutureWarning`` that the layout
    is deprecated."""
    where = f"{Path(folder)}: " if folder is not None else ""
    warnings.warn(
        f"{where}an hmc run in results layout 1, which is deprecated: write it again in layout 2 "
        "with attention_paths.runs.results.write(folder, *markov.markov_summary(run))",
        FutureWarning,
        stacklevel=3,
    )
    _check_arrays(folder, summary, arrays)
    return MarkovResult(
        scale=summary["scale"],
        config=config_from_record(summary["config"]),
        sets=[_read_seed_set(k, rec, arrays) for k, rec in enumerate(summary["seed_sets"])],
        theory_seconds=summary["theory_seconds"],
        kernels={k[len("kernel_") :]: a for k, a in arrays.items() if k.startswith("kernel_") and k != "kernel_subset"},
        kernel_subset=arrays["kernel_subset"],
        alignment={"GP": arrays["alignment_GP"], "renormalised": arrays["alignment_renormalised"]},
        block_contrast=summary.get("block_contrast"),
        sampled={key: _read_sampled(key, rec, arrays) for key, rec in summary["sampled"].items()},
        claims=summary["claims"],
        wall_seconds=summary.get("wall_seconds"),
        provenance=summary.get("provenance"),
    )
