"""Text tables of the hidden-Markov-chain chapter: width sweeps, sampling diagnostics and seed sets."""

from __future__ import annotations

import numpy as np

from attention_paths.tasks.markov.task import seed_set_label

__all__ = ["format_sweep", "sampling_records", "format_sampling", "format_seed_sets"]


def format_sweep(sw: dict) -> str:
    """Text table of a :func:`theory_sweep`: accuracy and solver convergence at every width."""
    rows = [f"{'N':>5} {'accuracy %':>10} {'max|dS/dU|/N':>13} {'Hessian min eig':>16} {'iterations':>10}"]
    for N, a, r in zip(sw["widths"], sw["accuracy"], sw["results"]):
        rows.append(f"{N:5d} {a:10.1f} {r.grad_max:13.1e} {r.hessian_min_eig:16.2e} {r.n_iter:10d}")
    return "\n".join(rows)


def sampling_records(res: dict, paper: dict | None = None) -> list[dict]:
    """One record per sampling run of this build (``res``) and of a committed run (``paper``).

    Keys: source, network, N, sampler, chains, warmup, samples, accuracy, accuracy_mcse (Monte Carlo standard
    error over chains, points), divergences, rhat_U, ess_U, steps (mean leapfrog steps per draw),
    max_tree_depth (the NUTS cap: at most ``2**depth - 1`` steps), seconds and ``U_hat``.
    """
    out = []
    for net, per_N in res["samples"].items():
        for N, entry in per_N.items():
            for smp in entry.values():
                sc, d = smp.settings["sampler"], smp.diagnostics
                out.append(
                    dict(
                        source="this build",
                        network=net,
                        N=int(N),
                        sampler=smp.kind,
                        chains=sc["num_chains"],
                        warmup=sc["num_warmup"],
                        samples=sc["num_samples"],
                        accuracy=smp.accuracy(res["sets"][0][net].y_test),
                        accuracy_mcse=smp.accuracy_mcse(res["sets"][0][net].y_test),
                        divergences=d["divergences"],
                        rhat_U=d["rhat_U_max"],
                        ess_U=d["ess_bulk_U_min"],
                        steps=d["mean_tree_steps"],
                        max_tree_depth=sc.get("max_tree_depth"),
                        seconds=smp.wall_seconds,
                        U_hat=smp.U_hat,
                    )
                )
    for e in (paper or {}).get("sampled", {}).values():
        sc, d = e["settings"]["sampler"], e["diagnostics"]
        out.append(
            dict(
                source="committed",
                network=e["network"],
                N=int(e["N"]),
                sampler=e["kind"],
                chains=sc["num_chains"],
                warmup=sc["num_warmup"],
                samples=sc["num_samples"],
                accuracy=e["accuracy_percent"],
                accuracy_mcse=e.get("accuracy_mcse_percent", float("nan")),
                divergences=d["divergences"],
                rhat_U=d["rhat_U_max"],
                ess_U=d["ess_bulk_U_min"],
                steps=d["mean_tree_steps"],
                max_tree_depth=sc.get("max_tree_depth"),
                seconds=e["wall_seconds"],
                U_hat=np.asarray(e["arrays"]["U_hat"]),
            )
        )
    return out


def format_sampling(records: list[dict], res: dict) -> str:
    """Two text tables of :func:`sampling_records`, each within 80 columns: the accuracies (sampled, its Monte
    Carlo error, the theory's) with ``max|U_hat - U*| / max|U*|``, then the chain diagnostics.

    ``steps``: mean leapfrog steps per draw, with ``*`` when every tree reached the depth cap
    (``2**max_tree_depth - 1`` steps).  Records of more than one source (this build, committed) are
    prefixed with their source's first letter."""
    tag = len({r["source"] for r in records}) > 1
    s0 = res["sets"][0]
    key = f"{'net':>5} {'N':>4} {'sampler':>13}"
    first = [f"{key} {'budget':>11} {'acc.%':>6} {'MC se':>6} {'theory':>6} {'dU rel':>7}"]
    second = [f"{key} {'div':>5} {'R-hat':>6} {'ESS':>6} {'steps':>6} {'sec':>6}"]
    for r in records:
        sw = s0["sweep"] if r["network"] == "main" else s0["noisy_sweep"]
        i = list(sw["widths"]).index(r["N"])
        Ust = sw["U"][i]
        rel = np.abs(r["U_hat"] - Ust).max() / np.abs(Ust).max()
        budget = f"{r['chains']}x{r['warmup']}+{r['samples']}"
        cap = 2 ** r["max_tree_depth"] - 1 if r.get("max_tree_depth") else None
        steps = f"{r['steps']:.0f}" + ("*" if cap is not None and r["steps"] >= cap - 0.5 else " ")
        net = (r["source"][0] + " " if tag else "") + r["network"]
        key = f"{net:>5} {r['N']:4d} {r['sampler']:>13}"
        first.append(
            f"{key} {budget:>11} {r['accuracy']:6.1f} {r['accuracy_mcse']:6.2f} {sw['accuracy'][i]:6.1f} {rel:7.3f}"
        )
        second.append(
            f"{key} {r['divergences']:5d} {r['rhat_U']:6.3f} {r['ess_U']:6.0f} {steps:>6} {r['seconds']:6.0f}"
        )
    return "\n".join(first) + "\n\n" + "\n".join(second)


def format_seed_sets(res: dict) -> str:
    """Text table of the headline numbers of every seed set (accuracies in %, ``U`` at ``N = 10``)."""
    head = ("set", "GP all", "GP g", "GP g+d", "N=10", "N=1000", "U_gg", "U_dd", "U_gd", "noisy10", "noisyGP")
    rows = [("{:>9}" + " {:>6}" * 8 + " {:>7}" * 2).format(*head)]
    for s in res["sets"]:
        U, nsw = s["sweep"]["U"][0], s["noisy_sweep"]
        acc = (s["gp_all"], s["gp_g"], s["gp_gd"], s["sweep"]["accuracy"][0], s["sweep"]["accuracy"][-1])
        rows.append(
            f"{seed_set_label(s):>9}"
            + "".join(f" {v:6.1f}" for v in acc)
            + "".join(f" {v:6.2f}" for v in (U[0, 0], U[2, 2], U[0, 2]))
            + f" {nsw['accuracy'][0]:7.1f} {nsw['gp_accuracy']:7.1f}"
        )
    return "\n".join(rows)
