"""The paper's pruning claims C1-C4 and ours (C3-OOD, C3-OOD+, C5, C6), checked on a
:class:`~.result.PruningResult` (:func:`pruning_claims`, spec §C.5); :func:`claims_of` gives a committed run's
recorded claims with any claim added since computed from its stored numbers; :func:`c2_margin` and
:func:`theory_side_spearman` are the numbers behind C2 and C4."""

from __future__ import annotations

import numpy as np
from scipy.stats import spearmanr

from attention_paths.tasks.claim import TIE_SE, check_table, exceeds, verdict
from attention_paths.tasks.pruning.network import correct, pruned_outputs
from attention_paths.tasks.pruning.result import PruningResult, parse_head_name

__all__ = [
    "PRUNING_CLAIMS",
    "IMPROVEMENT_SE",
    "LATER",
    "pruning_claims",
    "claims_of",
    "c2_margin",
    "theory_side_spearman",
]

# C3-OOD+: out-of-distribution accuracy "improves" when the drop is below -IMPROVEMENT_SE paired standard errors:
# the book's tie rule (tasks.claim.TIE_SE)
IMPROVEMENT_SE = TIE_SE


def _drops(res: PruningResult) -> dict:
    """In-distribution accuracy drop (points) of pruning each head alone."""
    return {k: v.drop["test"] for k, v in res.singles.items()}


def _c1(res: PruningResult) -> tuple[bool, str]:
    sp = res.spearman["theory"]
    return (
        sp.rho > 0,
        f"Spearman(score, in-distribution drop) = {sp.rho:.2f}, bootstrap 95% interval "
        f"[{sp.ci95[0]:.2f}, {sp.ci95[1]:.2f}]; magnitude baseline {res.spearman['magnitude'].rho:.2f}",
    )


def _c2(res: PruningResult) -> tuple[bool, str]:
    order, d = res.order, _drops(res)
    m = c2_margin(res)
    if np.isnan(m["se"]):  # no per-path outputs stored: the strict comparison
        ok, tie = max(d[k] for k in order[:2]) < min(d[k] for k in order[-2:]), "no paired s.e."
    else:
        ok, tie = (
            exceeds(m["margin"], 0.0, m["se"]),
            f"{m['margin']:+.1f} ± {m['se']:.1f}, {verdict(m['margin'], m['se'])}",
        )
    return (
        ok,
        f"margin drop({m['high']}) - drop({m['low']}) {tie}; drops (points, in distribution): "
        + ", ".join(f"{k} {d[k]:+.1f}" for k in order),
    )


def _c3(res: PruningResult) -> tuple[bool, str]:
    c = res.combinations["2 lowest"]
    d, se = c.drop, c.drop_se
    return (
        not exceeds(d["test"], 3.0, se["test"]),
        f"heads {', '.join(c.heads)}: drop test {d['test']:+.1f} ± {se['test']:.1f}, "
        f"MNIST {d['MNIST']:+.1f} ± {se['MNIST']:.1f}, FashionMNIST "
        f"{d['FashionMNIST']:+.1f} ± {se['FashionMNIST']:.1f} points",
    )


def _c3_ood(res: PruningResult) -> tuple[bool, str]:
    c = res.combinations["2 lowest"]
    d, se = c.drop["FashionMNIST"], c.drop_se["FashionMNIST"]
    return (
        not exceeds(d, 0.0, se),
        f"FashionMNIST drop {d:+.1f} ± {se:.1f} points ({verdict(d, se)})",
    )


def _c3_ood_plus(res: PruningResult) -> tuple[bool, str]:
    c = res.combinations["2 lowest"]
    d, se = c.drop["FashionMNIST"], c.drop_se["FashionMNIST"]
    return (
        d < -IMPROVEMENT_SE * se,
        f"FashionMNIST drop {d:+.1f} ± {se:.1f} points ({d / se:+.1f} s.e.; an improvement needs a drop below "
        f"{-IMPROVEMENT_SE * se:+.1f})",
    )


def _c5(res: PruningResult) -> tuple[bool, str]:
    sp, c = res.spearman["theory"], res.combinations["2 lowest"]
    pair = np.array([e.drop["test"] for e in res.pairs.values()])
    mag = res.spearman["magnitude"].rho
    return (
        sp.rho > mag and c.drop["test"] < np.median(pair),
        f"Spearman theory {sp.rho:.2f} vs magnitude {mag:.2f}; two lowest {c.drop['test']:+.1f} vs median "
        f"random pair {np.median(pair):+.1f} points",
    )


def _c6(res: PruningResult) -> tuple[bool, str]:
    stab = np.asarray(res.stability)
    return stab.min() > 0, f"smallest Spearman correlation over the grid {stab.min():.2f}, median {np.median(stab):.2f}"


def theory_side_spearman(res: PruningResult) -> float:
    """Spearman's rho between the theory-side and the network-side single-head drops in distribution (C4)."""
    th, d = res.theory_side, _drops(res)
    labels = list(d)
    return float(spearmanr([th[k]["test"] for k in labels], [d[k] for k in labels]).statistic)


def _c4(res: PruningResult) -> tuple[bool, str]:
    rho = theory_side_spearman(res)
    return rho > 0, f"Spearman(theory-side drop, network-side drop) = {rho:.2f}"


def c2_margin(res: PruningResult) -> dict:
    """How far C2 passes or fails: of the two lowest-scoring heads the costlier (``low``), of the two
    highest-scoring the cheaper (``high``), ``margin`` = drop(high) - drop(low) (points, in distribution;
    C2 holds when it is > 0) and ``se``, its paired standard error over the same episodes, computed from the
    result's stored per-path outputs (``F``, ``y``; NaN without them).  Nothing is re-evaluated."""
    d, order = _drops(res), res.order
    low = max(order[:2], key=lambda k: d[k])
    high = min(order[-2:], key=lambda k: d[k])
    se = float("nan")
    if "test" in res.F:
        F, y = res.F["test"], res.y["test"]
        heads = res.heads
        per = {k: correct(pruned_outputs(F, [parse_head_name(k, heads)], heads), y).astype(float) for k in (low, high)}
        diff = per[low] - per[high]  # drop(high) - drop(low), episode by episode
        se = 100.0 * float(diff.std(ddof=1) / np.sqrt(len(diff)))
    return {"low": low, "high": high, "margin": d[high] - d[low], "se": se}


# (id, statement, check on a run_pruning result), in the order the chapter lists them
PRUNING_CLAIMS = (
    ("C1", "Head score and accuracy drop are positively associated.", _c1),
    (
        "C2",
        "The two lowest-scoring heads each cost less than either of the two highest-scoring heads (beyond a tie).",
        _c2,
    ),
    (
        "C3",
        "Pruning the two lowest-scoring heads together costs only marginal in-distribution accuracy (not beyond "
        "3 points by more than a tie).",
        _c3,
    ),
    (
        "C3-OOD",
        "Out of distribution, pruning the two lowest-scoring heads does not cost FashionMNIST accuracy beyond a tie "
        "(the paper: it even improves slightly).",
        _c3_ood,
    ),
    (
        "C3-OOD+",
        "Out of distribution, pruning the two lowest-scoring heads improves FashionMNIST accuracy, as the paper "
        f"says: the drop is below -{IMPROVEMENT_SE:g} times its paired standard error.",
        _c3_ood_plus,
    ),
    (
        "C5",
        "Beyond the paper: the theory's score predicts drops better than the weight-magnitude baseline, and its "
        "two lowest heads cost less than the median random pair of heads.",
        _c5,
    ),
    (
        "C6",
        "Beyond the paper: the head ranking is stable, positively rank-correlated with the N = 10, tau = 0.5 "
        "ranking at every width and temperature of the grid.",
        _c6,
    ),
    ("C4", "Theory-side silencing orders the heads broadly like network-side pruning.", _c4),
)


def pruning_claims(res: PruningResult) -> list[dict]:
    """Claims C1-C4 of spec §C.5 and ours on the numbers of :func:`~.experiment.run_pruning`.

    Every comparison with a standard error follows the book's tie rule (:mod:`attention_paths.tasks.claim`: a
    difference counts only beyond 1.5 paired standard errors).  Thresholds: C1 "positively associated" =
    Spearman(score, in-distribution drop) > 0; C2 = the costlier of the two lowest-scoring heads costs less
    than the cheaper of the two highest-scoring heads by more than 1.5 paired standard errors
    (:func:`c2_margin`); C3 "marginal" = pruning the two lowest-scoring heads together does not cost more than
    3 points in distribution by more than 1.5 paired standard errors; C3-OOD ("does not cost") = their
    FashionMNIST drop is not above 0 by more than 1.5 paired standard errors; C3-OOD+ ("improves", the paper's
    word) = that drop is below -1.5 paired standard errors (:data:`IMPROVEMENT_SE`); C4 =
    theory-side and network-side single-head drops are positively rank-correlated; C5 (beyond the paper) =
    the theory's Spearman correlation exceeds the magnitude baseline's and the two lowest heads' drop is below
    the median drop of all pairs of heads; C6 = the smallest rank correlation of the grid's rankings with the
    N = 10, tau = 0.5 ranking is positive.
    """

    return check_table(PRUNING_CLAIMS, res)


LATER = " [checked on the run's stored numbers: the run predates this claim]"


def claims_of(res: PruningResult) -> list[dict]:
    """A pruning result's claims, in the order of :data:`PRUNING_CLAIMS`: a written run's recorded claims
    (``res.claims``, as they were written), with every claim added to the table since the run was written
    checked on its stored numbers (its detail ends with :data:`LATER`); a live result's
    :func:`pruning_claims`."""
    fresh = pruning_claims(res)
    if res.claims is None:
        return fresh
    recorded = {c["id"]: c for c in res.claims}
    out = [recorded.pop(c["id"]) if c["id"] in recorded else {**c, "detail": c["detail"] + LATER} for c in fresh]
    return out + list(recorded.values())  # a recorded claim the table no longer holds stays, at the end
