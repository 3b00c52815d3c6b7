"""Text tables of the hidden-Markov-chain chapter: width sweeps, sampling diagnostics and seed sets."""

from __future__ import annotations

import numpy as np

from attention_paths.tasks.markov.result import MarkovResult, WidthSweep

__all__ = ["format_sweep", "sampling_records", "format_sampling", "format_seed_sets"]


def format_sweep(sw: WidthSweep) -> str:
    """Text table of a :func:`theory_sweep`: accuracy and solver convergence at every width."""
    rows = [f"{'N':>5} {'accuracy %':>10} {'max|dS/dU|/N':>13} {'Hessian min eig':>16} {'iterations':>10}"]
    for N, a, g, h, it in zip(sw.widths, sw.accuracy, sw.grad_max, sw.hessian_min_eig, sw.iterations, strict=True):
        rows.append(f"{N:5d} {a:10.1f} {g:13.1e} {h:16.2e} {it:10d}")
    return "\n".join(rows)


def sampling_records(res: MarkovResult, committed: MarkovResult | None = None) -> list[dict]:
    """One record per sampling run of this build (``res``) and of a committed run (``committed``).

    Keys: source ("this build" or "committed"), network, N, sampler, chains, warmup, samples, accuracy,
    accuracy_mcse (Monte Carlo standard error over chains, points; NaN where not recorded), divergences,
    rhat_U, ess_U, steps (mean leapfrog steps per draw), max_tree_depth (the NUTS cap: at most
    ``2**depth - 1`` steps), seconds and ``U_hat``.
    """
    out = []
    for source, result in (("this build", res), ("committed", committed)):
        for r in result.sampled.values() if result is not None else ():
            sc, d = r.settings["sampler"], r.diagnostics
            out.append(
                dict(
                    source=source,
                    network=r.network,
                    N=r.N,
                    sampler=r.kind,
                    chains=sc["num_chains"],
                    warmup=sc["num_warmup"],
                    samples=sc["num_samples"],
                    accuracy=r.accuracy,
                    accuracy_mcse=float("nan") if r.accuracy_mcse is None else r.accuracy_mcse,
                    divergences=d["divergences"],
                    rhat_U=d["rhat_U_max"],
                    ess_U=d["ess_bulk_U_min"],
                    steps=d["mean_tree_steps"],
                    max_tree_depth=sc.get("max_tree_depth"),
                    seconds=r.wall_seconds,
                    U_hat=np.asarray(r.U_hat),
                )
            )
    return out


def format_sampling(records: list[dict], res: MarkovResult) -> str:
    """Two text tables of :func:`sampling_records`, each within 80 columns: the accuracies (sampled, its Monte
    Carlo error, the theory's) with ``max|U_hat - U*| / max|U*|``, then the chain diagnostics.

    ``steps``: mean leapfrog steps per draw, with ``*`` when every tree reached the depth cap
    (``2**max_tree_depth - 1`` steps).  Records of more than one source (this build, committed) are
    prefixed with their source's first letter."""
    tag = len({r["source"] for r in records}) > 1
    s0 = res.headline
    key = f"{'net':>5} {'N':>4} {'sampler':>13}"
    first = [f"{key} {'budget':>11} {'acc.%':>6} {'MC se':>6} {'theory':>6} {'dU rel':>7}"]
    second = [f"{key} {'div':>5} {'R-hat':>6} {'ESS':>6} {'steps':>6} {'sec':>6}"]
    for r in records:
        sw = s0.sweep_of(r["network"])
        i = sw.at(r["N"])
        Ust = sw.U[i]
        rel = np.abs(r["U_hat"] - Ust).max() / np.abs(Ust).max()
        budget = f"{r['chains']}x{r['warmup']}+{r['samples']}"
        cap = 2 ** r["max_tree_depth"] - 1 if r.get("max_tree_depth") else None
        steps = f"{r['steps']:.0f}" + ("*" if cap is not None and r["steps"] >= cap - 0.5 else " ")
        net = (r["source"][0] + " " if tag else "") + r["network"]
        key = f"{net:>5} {r['N']:4d} {r['sampler']:>13}"
        first.append(
            f"{key} {budget:>11} {r['accuracy']:6.1f} {r['accuracy_mcse']:6.2f} {sw.accuracy[i]:6.1f} {rel:7.3f}"
        )
        second.append(
            f"{key} {r['divergences']:5d} {r['rhat_U']:6.3f} {r['ess_U']:6.0f} {steps:>6} {r['seconds']:6.0f}"
        )
    return "\n".join(first) + "\n\n" + "\n".join(second)


def format_seed_sets(res: MarkovResult) -> str:
    """Text table of the headline numbers of every seed set (accuracies in %, ``U`` at ``N = 10``)."""
    head = ("set", "GP all", "GP g", "GP g+d", "N=10", "N=1000", "U_gg", "U_dd", "U_gd", "noisy10", "noisyGP")
    rows = [("{:>9}" + " {:>6}" * 8 + " {:>7}" * 2).format(*head)]
    for s in res.sets:
        U, nsw = s.sweep.U[0], s.noisy_sweep
        acc = (s.gp_all, s.gp_g, s.gp_gd, s.sweep.accuracy[0], s.sweep.accuracy[-1])
        rows.append(
            f"{s.label:>9}"
            + "".join(f" {v:6.1f}" for v in acc)
            + "".join(f" {v:6.2f}" for v in (U[0, 0], U[2, 2], U[0, 2]))
            + f" {nsw.accuracy[0]:7.1f} {nsw.gp_accuracy:7.1f}"
        )
    return "\n".join(rows)
