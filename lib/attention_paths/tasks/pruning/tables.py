"""Text tables of the pruning chapter: every pruned network's drops and the statistics behind C1, C5, C6."""

from __future__ import annotations

import textwrap

import numpy as np
from scipy.stats import spearmanr

from attention_paths.tasks.pruning.result import EVAL_SETS, PruningResult, head_name
from attention_paths.tasks.pruning.scores import score_order

__all__ = ["format_table", "format_statistics"]


def format_statistics(res: PruningResult) -> str:
    """The statistics behind claims C1, C5 and C6 as text: Spearman(score, drop) with bootstrap intervals for
    the theory and the magnitude scores, the two lowest-scoring heads against all pairs of heads, the two
    smallest heads by value-weight norm, and the ranking at the validation-selected temperature."""
    lines = []
    for name, r in res.spearman.items():
        lines.append(
            f"Spearman(score, drop), {name:>9} score: {r.rho:+.2f}, 95% interval [{r.ci95[0]:+.2f}, {r.ci95[1]:+.2f}]"
        )
    n_boot = sorted({r.n_boot for r in res.spearman.values()})
    lines.append(f"(bootstrap intervals: {', '.join(map(str, n_boot))} resamples of the episodes)")
    pairs = res.pairs
    pair_drops = np.array([e.drop["test"] for e in pairs.values()])
    two = res.combinations["2 lowest"]
    lines.append(
        f"all {len(pairs)} pairs of heads: drop {pair_drops.mean():.1f} points on average, median "
        f"{np.median(pair_drops):.1f}; the two lowest-scoring heads {','.join(two.heads)}: "
        f"{two.drop['test']:+.1f} ± {two.drop_se['test']:.1f} "
        f"(rank {int((pair_drops < two.drop['test']).sum()) + 1} of {len(pairs)})"
    )
    heads = res.heads
    mag = score_order([np.array([res.magnitude[head_name((l, h))] for h in range(H)]) for l, H in enumerate(heads)])
    mag_two = ",".join(head_name(h) for h in sorted(mag[:2]))
    drop = pairs[mag_two].drop["test"] if mag_two in pairs else float("nan")
    lines.append(f"the two smallest heads by value-weight norm, {mag_two}: drop {drop:+.1f} points")
    sel = res.scores_selected_tau
    labels = list(res.scores)
    rho = spearmanr([res.scores[k] for k in labels], [sel[k] for k in labels]).statistic
    lines.append(
        f"scores at N = 10 and the validation-selected temperature tau = {sel['tau']:g} rank the heads "
        f"with Spearman {rho:.2f} against the tau = 0.5 scores"
    )
    return "\n".join(textwrap.fill(line, 80, subsequent_indent="    ", break_on_hyphens=False) for line in lines)


def format_table(res: PruningResult) -> str:
    """Accuracy and drop (± paired standard error) of every pruned network, in and out of distribution."""
    groups = [
        (
            "single heads (drop in points ± s.e.), by ascending score:",
            [(f"  {k} (score {res.scores[k]:.2f})", res.singles[k]) for k in res.order],
        ),
        (
            "combinations from this network's scores:",
            [(f"  {name}: {','.join(e.heads)}", e) for name, e in res.combinations.items()],
        ),
        (
            "the reference's literal combinations (its own network's heads):",
            [(f"  {name} = {','.join(e.heads)}", e) for name, e in res.reference_combinations.items()],
        ),
    ]
    # the label column as wide as its longest label, so that the table fits 80 columns
    w = max(len(label) for _, rows in groups for label, _ in rows) + 1
    lines = [
        f"{'pruned heads':<{w}}" + "".join(f"{s:>13}" for s in EVAL_SETS),
        f"{'none (unpruned)':<{w}}" + "".join(f"{res.unpruned[s]:>13.1f}" for s in EVAL_SETS),
    ]
    for title, rows in groups:
        lines.append(title)
        for label, e in rows:
            cells = "".join(f"{e.drop[s]:>+8.1f} ±{e.drop_se[s]:3.1f}" for s in EVAL_SETS)
            lines.append(f"{label:<{w}}{cells}")
    return "\n".join(lines)
