"""The paper's pruning claims C1-C4 and ours (C3-OOD, C5, C6), checked on a :class:`~.result.PruningResult`
(:func:`pruning_claims`, spec §C.5)."""

from __future__ import annotations

import numpy as np
from scipy.stats import spearmanr

from attention_paths.tasks.claim import check_table
from attention_paths.tasks.pruning.result import PruningResult

__all__ = ["PRUNING_CLAIMS", "pruning_claims"]


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
    low, high = order[:2], order[-2:]
    return (
        max(d[k] for k in low) < min(d[k] for k in high),
        "drops (points, in distribution): " + ", ".join(f"{k} {d[k]:+.1f}" for k in order),
    )


def _c3(res: PruningResult) -> tuple[bool, str]:
    c = res.combinations["2 lowest"]
    d, se = c.drop, c.drop_se
    return (
        d["test"] <= 3.0,
        f"heads {', '.join(c.heads)}: drop test {d['test']:+.1f} ± {se['test']:.1f}, "
        f"MNIST {d['MNIST']:+.1f} ± {se['MNIST']:.1f}, FashionMNIST "
        f"{d['FashionMNIST']:+.1f} ± {se['FashionMNIST']:.1f} points",
    )


def _c3_ood(res: PruningResult) -> tuple[bool, str]:
    c = res.combinations["2 lowest"]
    return (
        c.drop["FashionMNIST"] <= 0.0,
        f"FashionMNIST drop {c.drop['FashionMNIST']:+.1f} ± {c.drop_se['FashionMNIST']:.1f} points",
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


def _c4(res: PruningResult) -> tuple[bool, str]:
    th, d = res.theory_side, _drops(res)
    labels = list(d)
    rho = float(spearmanr([th[k]["test"] for k in labels], [d[k] for k in labels]).statistic)
    return rho > 0, f"Spearman(theory-side drop, network-side drop) = {rho:.2f}"


# (id, statement, check on a run_pruning result), in the order the chapter lists them
PRUNING_CLAIMS = (
    ("C1", "Head score and accuracy drop are positively associated.", _c1),
    ("C2", "The two lowest-scoring heads each cost less than either of the two highest-scoring heads.", _c2),
    ("C3", "Pruning the two lowest-scoring heads together costs only marginal in-distribution accuracy.", _c3),
    (
        "C3-OOD",
        "Out of distribution, pruning the two lowest-scoring heads does not cost FashionMNIST accuracy "
        "(the paper: it even improves slightly).",
        _c3_ood,
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
    """Claims C1-C4 of spec §C.5 on the numbers of :func:`~.experiment.run_pruning`.

    Thresholds: C1 "positively associated" = Spearman(score, in-distribution drop) > 0; C2 = each of the two
    lowest-scoring heads drops less than every one of the two highest-scoring heads; C3 "marginal" = pruning
    the two lowest-scoring heads together costs at most 3 points in distribution (and FashionMNIST "even
    improves" is reported, not required); C4 = theory-side and network-side single-head drops are positively
    rank-correlated; C3-OOD = the FashionMNIST drop of the two lowest heads is <= 0; C5 (beyond the paper) =
    the theory's Spearman correlation exceeds the magnitude baseline's and the two lowest heads' drop is below
    the median drop of all pairs of heads; C6 = the smallest rank correlation of the grid's rankings with the
    N = 10, tau = 0.5 ranking is positive.
    """

    return check_table(PRUNING_CLAIMS, res)
