"""The pruning chapter's computation: its sizes per scale (:data:`PRUNING_EXPERIMENT`), the run
(:func:`run_pruning`), and the JSON record and arrays of its results folder (:func:`pruning_summary`,
:func:`read_pruning_run`)."""

from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass, replace

import numpy as np

from attention_paths.base.config import get_scale
from attention_paths.base.fields import check_fields
from attention_paths.base.serialise import read_checked, to_folder
from attention_paths.tasks.claim import check_stored_claims
from attention_paths.tasks.omniglot.episodes import evaluation_sets
from attention_paths.tasks.omniglot.recipe import config_for
from attention_paths.tasks.omniglot.training import load_network
from attention_paths.tasks.oneshot import ONESHOT_EXPERIMENT, Grid, OneShotResult, restricted_grid, run_oneshot
from attention_paths.tasks.pruning.claims import pruning_claims
from attention_paths.tasks.pruning.cumulative import RANDOM_ORDERS, cumulative_pruning
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

__all__ = [
    "PruningExperimentConfig",
    "PRUNING_EXPERIMENT",
    "run_pruning",
    "live_theory",
    "pruning_summary",
    "read_pruning_run",
]


@dataclass(frozen=True)
class PruningExperimentConfig:
    """Sizes of the pruning chapter (:func:`run_pruning`): the trained network, the meta-test episodes the
    drops are measured on (the OOD sets are always complete), the bootstrap resamples of the rank
    correlation, whether random head pairs are drawn for comparison, the bootstrap's seed (also the seed of the
    cumulative-pruning curves' random orders) and how many random orders the stored curves hold.

    A run records it as a dict (``res.config``: ``dataclasses.asdict``)."""

    # each field's range, checked at construction with its type (base.fields.check_fields)
    RANGES = {
        "test_episodes": ">= 1",
        "n_bootstrap": ">= 0",
        "seed": ">= 0",
        "random_orders": ">= 0",
    }

    network: str
    test_episodes: int
    n_bootstrap: int
    random_pairs: bool = True
    seed: int = 0
    random_orders: int = RANDOM_ORDERS

    def __post_init__(self):
        check_fields(self)


PRUNING_EXPERIMENT = {
    # the theory of the omniglot-theory run of the same scale (N = 10, tau = 0.5); evaluation on all of
    # the network's fixed test episodes and on the complete OOD sets.  Paper: 16,384 meta-test episodes
    # (issue 36 section 4; 4,096 before, too few where a drop sits near a claim's threshold: the paired
    # standard error of a drop is about 0.3 points at 16,384)
    "paper": PruningExperimentConfig(network="paper", test_episodes=16384, n_bootstrap=2000),
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
    sampling, when not given), or a written one (``python -m attention_paths pruning --theory-from DIR``): its
    grid is then reused and the rest made live again (:func:`live_theory`, checked against it); its trained network
    is the one pruned (``net``: that network, when it is not the scale's committed or cached one, e.g. a checkpoint
    of a ``reproduce`` stage; ``record``: its record, with ``source`` and ``sha256``).

    Long: the steps in the spec's order, each a call into the task's modules, sharing a dozen values.
    """
    scale = get_scale(scale)
    cfg = asdict(PRUNING_EXPERIMENT[scale])
    cfg["network"] = network or (theory.config["network"] if theory is not None else cfg["network"])
    if theory is None:
        theory = run_oneshot(scale, network=cfg["network"], sample=False, root=root, progress=progress)
    elif theory.data is None:
        if net is not None:
            raise ValueError("a written theory run is made live on a committed network only: do not pass net")
        cfg["theory_grid_from"] = _written_theory_record(theory)
        theory = live_theory(theory, scale, cfg["network"], root=root, progress=progress)
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
    res = PruningResult(
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
    # the cumulative-pruning curves (score, value-norm, reference and random orders), stored with the run
    return replace(res, cumulative=cumulative_pruning(res, cfg["random_orders"], seed=cfg["seed"]))


# the largest difference allowed between a written grid's U at the panel point and a cold solve on the features
# extracted again (the solver stops at |dS/dU| / N ~ 1e-10 or below: differences of 1e-8 and less)
LIVE_THEORY_TOLERANCE = 1e-6


def _written_theory_record(theory: OneShotResult) -> dict:
    """What a pruning run records of the written theory run whose grid it reused."""
    prov = theory.provenance or {}
    return {
        "network_sha256": (theory.network_record or {}).get("sha256"),
        "git_commit": prov.get("git_commit"),
        "git_dirty": prov.get("git_dirty"),
        "grid_seconds": (theory.seconds or {}).get("grid"),
    }


def live_theory(
    written: OneShotResult, scale: str, network: str, *, root=None, progress: bool = False
) -> OneShotResult:
    """A written omniglot-theory run (reloaded: no path features) made live for pruning without solving its grid
    again: the path features are extracted anew from the committed ``network`` and
    :func:`~attention_paths.tasks.oneshot.run_oneshot` runs on them with the written grid (its ``U`` and
    accuracies), recomputing the GP lines, selection, panel and paired predictions.

    Checked, each a ``ValueError`` naming the difference: the written run is of this ``network`` (its SHA-256)
    and of the ``scale``'s settings (every field but sampling); the network's accuracies on the re-extracted
    episodes are the written ones exactly (the same episodes); and a cold solve at the panel point (from the GP
    point, with restarts) lands within :data:`LIVE_THEORY_TOLERANCE` of the written ``U`` there (the same
    features and the same minimum).
    """
    scale_cfg = asdict(replace(ONESHOT_EXPERIMENT[scale], network=network))
    # a grid restricted to some of the scale's widths and temperatures (omniglot-theory --widths/--taus) is kept
    grid_of = restricted_grid(scale_cfg, written.widths, written.taus)
    want = {k: v for k, v in (scale_cfg | grid_of).items() if k != "sampling"}
    have = {k: v for k, v in written.config.items() if k != "sampling"}
    diff = sorted(k for k in set(want) | set(have) if _plain(want.get(k)) != _plain(have.get(k)))
    if diff:
        raise ValueError(
            f"the written theory run's settings differ from the {scale} scale's for network {network!r} in "
            + ", ".join(f"{k} ({have.get(k)!r} written, {want.get(k)!r} now)" for k in diff)
        )
    net, rec = load_network(network, progress=progress)
    sha = (written.network_record or {}).get("sha256")
    if sha != rec.get("sha256"):
        raise ValueError(
            f"the written theory run is of a network with SHA-256 {sha}, not {network!r} ({rec.get('sha256')})"
        )
    grid = Grid(
        widths=np.asarray(written.widths),
        taus=np.asarray(written.taus),
        U=np.asarray(written.U),
        accuracy={s: np.asarray(a) for s, a in written.grid_accuracy.items()},
        grad_max=np.asarray([written.solver["max_grad"]]),  # the written run keeps the largest only
        n_iter=np.asarray(written.solver["iterations"]),
        seconds=0.0,
    )
    live = run_oneshot(
        scale, network=network, sample=False, root=root, progress=progress, grid=grid, record=rec, **grid_of
    )
    before = written.network_accuracy
    moved = {s: (before.get(s), a) for s, a in live.network_accuracy.items() if a != before.get(s)}
    if moved:
        raise ValueError(
            f"the network's accuracies on the re-extracted episodes differ from the written run's: {moved}"
        )
    dU = live.panel.check["max_abs_dU"]
    if not dU <= LIVE_THEORY_TOLERANCE:
        raise ValueError(
            f"a cold solve on the re-extracted features is {dU:.3g} from the written U at the panel point "
            f"(allowed {LIVE_THEORY_TOLERANCE:g}): the written grid is not of these features"
        )
    return live


def _plain(value):
    """A config value compared as JSON would store it (tuples as lists)."""
    return [_plain(v) for v in value] if isinstance(value, (list, tuple)) else value


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
    ``runs.experiments.load_run``; :func:`attention_paths.base.serialise.read_checked`), checked against the
    type's invariants (:meth:`~.result.PruningResult.check`) and its stored claims against those its numbers give
    (:func:`~attention_paths.tasks.claim.check_stored_claims`)."""
    res = read_checked(PruningResult, summary, arrays, folder)  # with the type's invariants (issue 37 §2)
    check_stored_claims(res.claims, pruning_claims(res), folder)
    return res
