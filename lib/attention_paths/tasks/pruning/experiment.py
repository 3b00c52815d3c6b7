"""The pruning chapter's computation: its sizes per scale (:data:`PRUNING_EXPERIMENT`), the run
(:func:`run_pruning`), and the JSON record and arrays of its results folder (:func:`pruning_summary`,
:func:`read_pruning_run`)."""

from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass, replace

from attention_paths.base.config import get_scale
from attention_paths.base.serialise import from_folder, to_folder
from attention_paths.tasks.omniglot.episodes import evaluation_sets
from attention_paths.tasks.omniglot.recipe import config_for
from attention_paths.tasks.omniglot.training import load_network
from attention_paths.tasks.oneshot import OneShotResult, run_oneshot
from attention_paths.tasks.pruning.claims import pruning_claims
from attention_paths.tasks.pruning.heads import all_heads, keeps_every_layer, reference_combinations
from attention_paths.tasks.pruning.network import correct, drop_with_error, path_outputs, pruned_outputs
from attention_paths.tasks.pruning.result import (
    EVAL_SETS,
    PrunedNetwork,
    PruningResult,
    head_name,
    parse_heads,
)
from attention_paths.tasks.pruning.scores import (
    combinations_from_scores,
    magnitude_scores,
    score_order,
    score_stability,
    spearman_with_ci,
    theory_side_drops,
)
from attention_paths.theory.scores import head_scores

__all__ = ["PruningExperimentConfig", "PRUNING_EXPERIMENT", "run_pruning", "pruning_summary", "read_pruning_run"]


@dataclass(frozen=True)
class PruningExperimentConfig:
    """Sizes of the pruning chapter (:func:`run_pruning`): the trained network, the meta-test episodes the
    drops are measured on (the OOD sets are always complete), the bootstrap resamples of the rank
    correlation, whether random head pairs are drawn for comparison, and the bootstrap's seed.

    A run records it as a dict (``res.config``: ``dataclasses.asdict``)."""

    network: str
    test_episodes: int
    n_bootstrap: int
    random_pairs: bool = True
    seed: int = 0


PRUNING_EXPERIMENT = {
    # the theory of the omniglot-theory run of the same scale (N = 10, tau = 0.5); evaluation on all of
    # the network's fixed test episodes and on the complete OOD sets
    "paper": PruningExperimentConfig(network="paper", test_episodes=4096, n_bootstrap=2000),
    "quick": PruningExperimentConfig(network="quick", test_episodes=2048, n_bootstrap=1000),
}


def _pruned_accuracy(pruned, F: dict, y: dict, full: dict, heads) -> tuple[PrunedNetwork, dict]:
    """Accuracy and drop (with its paired standard error) of the network (``heads`` per layer) with the heads
    ``pruned`` silenced, on every set; and the per-episode correctness."""
    per = {s: correct(pruned_outputs(F[s], pruned, heads), y[s]) for s in F}
    drop = {s: drop_with_error(full[s], per[s]) for s in F}
    return PrunedNetwork(
        heads=[head_name(h) for h in pruned],
        accuracy={s: 100.0 * float(per[s].mean()) for s in F},
        drop={s: d[0] for s, d in drop.items()},
        drop_se={s: d[1] for s, d in drop.items()},
    ), per


def _selected_tau_scores(theory: OneShotResult, i_n: int) -> dict:
    """Head scores at the validation-selected temperature of the panel's width (the paper's "selected
    temperature" scores)."""
    i_sel = int(theory.select["val"]["theory"].index[i_n])
    sel_scores = head_scores(theory.U[i_sel, i_n], theory.heads)
    return {
        "tau": float(theory.taus[i_sel]),
        **{head_name(h): float(sel_scores[h[0]][h[1]]) for h in all_heads(theory.heads)},
    }


def _head_sets(scores, heads, evaluate) -> tuple[dict, dict, dict]:
    """The pruned networks of several heads at once (``evaluate(heads) -> (PrunedNetwork, per-episode)``): the
    combinations from the scores, the reference's literal ones for this architecture, and every pair of heads
    that leaves each layer a head (all 28 of 2 x 4)."""
    combos = {name: evaluate(hs)[0] for name, hs in combinations_from_scores(scores).items()}
    if "2 lowest" not in combos:  # only possible with 2 heads per layer: the claims are about this pair
        raise ValueError(
            f"the two lowest-scoring heads {[head_name(h) for h in score_order(scores)[:2]]} are all the heads of "
            f"their layer (heads per layer {heads}): they cannot be pruned together"
        )
    reference = {spec: evaluate(parse_heads(spec, heads))[0] for spec in reference_combinations(heads)}
    pairs = {
        ",".join(head_name(h) for h in pair): evaluate(list(pair))[0]
        for pair in itertools.combinations(all_heads(heads), 2)
        if keeps_every_layer(pair, heads)
    }
    return combos, reference, pairs


def run_pruning(
    scale: str | None = None,
    *,
    theory: OneShotResult | None = None,
    network: str | None = None,
    root=None,
    progress: bool = False,
    net=None,
    record: dict | None = None,
) -> PruningResult:
    """Scores, network-side and theory-side pruning, baselines and their statistics (spec §C).

    ``theory`` is a live :func:`attention_paths.tasks.oneshot.run_oneshot` result (computed here, without
    sampling, when not given); its trained network is the one pruned (``net``: that network, when it is not the
    scale's committed or cached one, e.g. a checkpoint of a ``reproduce`` stage; ``record``: its record, with
    ``source`` and ``sha256``).
    """
    scale = get_scale(scale)
    cfg = asdict(PRUNING_EXPERIMENT[scale])
    cfg["network"] = network or (theory.config["network"] if theory is not None else cfg["network"])
    if theory is None:
        theory = run_oneshot(scale, network=cfg["network"], sample=False, root=root, progress=progress)
    if theory.data is None:
        raise ValueError(
            "theory-side pruning needs the path features: pass a live run_oneshot result, not a reloaded one"
        )
    rec = record or {"source": "given by the caller", "sha256": None}
    if net is None:
        net, rec = load_network(cfg["network"], progress=progress)
    tcfg = config_for(cfg["network"], test_episodes=cfg["test_episodes"], ood_episodes=None)
    sets = {k: v for k, v in evaluation_sets(tcfg, root).items() if k in EVAL_SETS}
    F = {s: path_outputs(net, eps) for s, eps in sets.items()}
    y = {s: eps.y.astype(float) for s, eps in sets.items()}
    heads = theory.data.heads  # the architecture travels with the extracted data
    every = all_heads(heads)
    full = {s: correct(pruned_outputs(F[s], (), heads), y[s]) for s in sets}

    def evaluate(pruned):
        return _pruned_accuracy(pruned, F, y, full, heads)

    tc = theory.config
    scores = theory.panel.head_scores  # N = 10, tau = 0.5
    singles, per_single = {}, {}
    for head in every:
        singles[head_name(head)], per = evaluate([head])
        per_single[head_name(head)] = per["test"]
    combos, reference, pairs = _head_sets(scores, heads, evaluate)
    mag = magnitude_scores(net)
    i_t, i_n = theory.panel.index
    return PruningResult(
        scale=scale,
        config=cfg,
        network_record={k: rec.get(k) for k in ("source", "sha256")},
        n_episodes={s: int(len(y[s])) for s in sets},
        unpruned={s: 100.0 * float(full[s].mean()) for s in sets},
        scores={head_name(h): float(scores[h[0]][h[1]]) for h in every},
        scores_selected_tau=_selected_tau_scores(theory, i_n),
        magnitude={head_name(h): float(mag[h[0]][h[1]]) for h in every},
        order=[head_name(h) for h in score_order(scores)],
        singles=singles,
        combinations=combos,
        reference_combinations=reference,
        pairs=pairs,
        theory_side=theory_side_drops(theory.panel.U, theory.data, tc["panel_tau"]),
        stability=score_stability(theory.U, theory.widths, theory.taus, (i_t, i_n), heads),
        widths=theory.widths,
        taus=theory.taus,
        spearman={
            "theory": spearman_with_ci(scores, per_single, full["test"], cfg["n_bootstrap"], cfg["seed"]),
            "magnitude": spearman_with_ci(mag, per_single, full["test"], cfg["n_bootstrap"], cfg["seed"]),
        },
        F=F,
        y=y,
    )


def pruning_summary(res: PruningResult) -> tuple[dict, dict]:
    """``(summary, arrays)`` for ``summary.json`` / ``arrays.npz``, by the serialiser
    (:func:`attention_paths.base.serialise.to_folder`: the per-path outputs ``F`` and targets ``y`` to the arrays,
    every other field to the summary), with the claims (:func:`pruning_claims`; for a reloaded run, those of them
    it was written with, so that it writes back its own summary: a claim added since is reported by
    :func:`~.claims.claims_of`, not recorded into an old run)."""
    claims = pruning_claims(res)
    if res.claims is not None:  # a written run, reloaded: the claims it was written with, checked again
        written = {c["id"] for c in res.claims}
        claims = [c for c in claims if c["id"] in written]
    return to_folder(replace(res, claims=claims))


def read_pruning_run(folder, summary: dict, arrays: dict) -> PruningResult:
    """The :class:`~.result.PruningResult` of a results folder written by :func:`pruning_summary` (read by
    ``runs.experiments.load_run``; :func:`attention_paths.base.serialise.from_folder`), checked against the
    type's invariants (:meth:`~.result.PruningResult.check`)."""
    res = from_folder(PruningResult, summary, arrays, folder)
    res.check(folder)  # the type's invariants (issue 37 §2)
    return res
