"""The paper's claims I1-I5 about the theory on the trained transformer, checked on a
:func:`~.experiment.run_oneshot` result (:func:`oneshot_claims`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from scipy.stats import spearmanr

from attention_paths import sampling
from attention_paths.tasks.claim import claim
from attention_paths.tasks.oneshot.data import EVAL_SETS, SET_TITLES

if TYPE_CHECKING:  # the result module computes the claims when it writes a run
    from attention_paths.tasks.oneshot.result import OneShotResult

__all__ = ["oneshot_claims", "sampling_claims"]


def _i1(res: OneShotResult) -> list[dict]:
    net = res.network_accuracy
    return [
        claim(
            "I1",
            "The gradient-descent-trained network solves the in-distribution one-shot task well above chance.",
            net["test"] >= 65,
            f"network accuracy: meta-test {net['test']:.1f}%, MNIST {net['MNIST']:.1f}%, "
            f"FashionMNIST {net['FashionMNIST']:.1f}%",
        )
    ]


def _i2(res: OneShotResult) -> list[dict]:
    """I2-ID, I2-MNIST, I2-FMNIST: the theory beats the GP at the smallest width on each test set."""
    th, gp = res.select["val"]["theory"], res.select["val"]["gp"]
    widths, claims = res.widths, []
    for s, cid in (("test", "I2-ID"), ("MNIST", "I2-MNIST"), ("FashionMNIST", "I2-FMNIST")):
        gain = th.accuracy[s][0] - gp.accuracy[s]
        claims.append(
            claim(
                cid,
                f"At the smallest width the finite-width theory beats the GP limit on {SET_TITLES[s]}.",
                gain >= 1.0,
                f"theory {th.accuracy[s][0]:.1f}% at N={widths[0]} (tau {th.tau[0]:g}) vs GP {gp.accuracy[s]:.1f}% "
                f"(tau {float(gp.tau):g}): {gain:+.1f} points",
            )
        )
    return claims


def _i2_limit(res: OneShotResult) -> list[dict]:
    gaps = {
        s: np.abs(np.asarray(res.grid_accuracy[s])[:, -1] - np.asarray(res.gp_grid_accuracy[s])).max()
        for s in EVAL_SETS
    }
    return [
        claim(
            "I2-limit",
            "At the largest width the theory is back at the GP limit: within 2 points of the GP at the same "
            "temperature, on every set and at every temperature of the grid.",
            all(g <= 2.0 for g in gaps.values()),
            f"largest |theory - GP| at N={res.widths[-1]} over the grid's temperatures: "
            + ", ".join(f"{s} {g:.1f}" for s, g in gaps.items()),
        )
    ]


def _i3_i4(res: OneShotResult) -> list[dict]:
    """I3 (samples agree with the theory) and I4 (the order parameters' pattern), where sampled."""
    if not res.sampled:
        return []
    N = min(res.sampled)
    taus, widths = [float(t) for t in res.taus], [float(w) for w in res.widths]
    Ut = res.U[taus.index(float(res.config["sampling"]["tau"])), widths.index(float(N))]
    return sampling_claims(N, res.sampled[N], Ut, res.panel.U_gd)


def sampling_claims(N, run, U_theory, U_gd, suffix: str = "") -> list[dict]:
    """I3 and I4 for one sampling run ``run`` (:class:`~.result.SampledRun`) at width ``N`` against the theory's
    ``U_theory`` there and the gradient-descent order parameter ``U_gd``; ``suffix`` is appended to the ids.
    The one rule of the theory runs and of the ``omniglot-sampling`` experiment (:func:`oneshot_claims`)."""
    ok = run.corr > 0.9 and all(abs(run.sets[s]["theory"] - run.sets[s]["sampled"]) <= 2.5 for s in EVAL_SETS[1:])
    i3 = claim(
        "I3" + suffix,
        f"At N = {N} the sampled posterior agrees with the theory in and out of distribution.",
        ok,
        "; ".join(
            f"{s}: theory {run.sets[s]['theory']:.1f}% vs sampled {run.sets[s]['sampled']:.1f}%" for s in EVAL_SETS[1:]
        )
        + f"; corr(means) {run.corr:.3f}",
    )
    u = sampling.order_parameter_agreement(run.U_hat, U_theory)
    signs, rel = u["signs_equal"], u["max_rel_error"]
    rho = float(spearmanr(np.diag(U_gd), np.diag(U_theory)).statistic)
    i4 = claim(
        "I4" + suffix,
        "Theory U* and sampled U agree in pattern and magnitude; the GD order parameter shares the "
        "pattern of its diagonal.",
        signs and rel <= 0.25 and rho > 0.5,
        f"sign pattern {'equal' if signs else 'differs'}; largest entries within {100 * rel:.0f}%; "
        f"Spearman(diag U_gd, diag U*) = {rho:.2f}",
    )
    return [i3, i4]


def _i5(res: OneShotResult) -> list[dict]:
    al = res.panel.alignment
    a_rn, a_gp = float(np.max(al["renormalised"][:5])), float(np.max(al["GP"][:5]))
    return [
        claim(
            "I5",
            "The renormalised kernel is better aligned with the labels than the GP kernel.",
            a_rn > a_gp,
            f"largest label overlap among the first 5 eigenvectors: renormalised {a_rn:.3f}, GP {a_gp:.3f}",
        )
    ]


# the checks, in the order the chapter lists the claims; each returns its claims' records (I3 and I4 only
# where the run sampled)
ONESHOT_CHECKS = (_i1, _i2, _i2_limit, _i3_i4, _i5)


def oneshot_claims(res: OneShotResult) -> list[dict]:
    """Check the claims of spec §B.11 (I1-I5) on the numbers of :func:`run_oneshot`; one record per claim.

    Thresholds: "well above chance" = network test accuracy >= 65 %; "beats the GP limit" (one claim per test
    set) = the theory at the smallest width and its validation-selected temperature is at least 1 point above
    the validation-selected GP; "approaches the GP value" = at the widest width the theory is within 2 points
    of the GP at the same temperature, at every temperature of the grid and on every set; theory and samples
    "agree" = accuracies
    within 2.5 points on every set and corr(means) > 0.9; "pattern" = the signs of the entries larger than 10 %
    of the maximum agree (theory vs sampled, entries within 25 %), and the GD order parameter's diagonal is
    rank-correlated with the theory's (Spearman > 0.5); "better aligned" = the largest label overlap among
    the first 5 eigenvectors of the renormalised kernel exceeds the GP's.
    """

    return [record for check in ONESHOT_CHECKS for record in check(res)]
