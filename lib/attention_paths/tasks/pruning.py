"""Theory-guided pruning of the trained transformer's attention heads (spec experiments §C, theory T§14).

The head score of the theory (T§14.1) sums ``|U_{pi pi'}|`` over the order-parameter entries whose paths use
the head.  Network-side pruning removes heads from the **trained** network, without retraining: the pruned
heads' outputs are zeroed and each layer's head sum is rescaled from ``1/sqrt(H)`` to ``1/sqrt(H - n)``.

Because the value path is linear, the network's output is a sum over attention paths,
``f(x) = sum_pi c_pi F_pi(x)`` with per-path outputs ``F_pi(x) = a^T V^(2,h2) V^(1,h1) W_in xi^pi(x)`` and
coefficients ``c_pi = prod_l m_(l, h_l) / sqrt(n_l)`` (``m`` = 1 for a kept head, ``n_l`` = heads kept in
layer ``l``).  :func:`path_outputs` computes ``F`` once per episode set; every pruned network is then one
matrix-vector product (:func:`pruned_outputs`), identical to running the pruned network
(checked against :meth:`InContextTransformer.set_pruned` in the tests and in the chapter).

``python -m attention_paths pruning --scale {quick,paper} --out DIR`` writes ``summary.json``
(:func:`run_pruning`).
"""

from __future__ import annotations

import copy
import itertools
import textwrap
from dataclasses import asdict, dataclass, field, fields

import numpy as np
import torch
from scipy.stats import spearmanr

from attention_paths.base import validate
from attention_paths.base.config import get_scale
from attention_paths.tasks.claim import check_table
from attention_paths.tasks.omniglot.episodes import evaluation_sets
from attention_paths.tasks.omniglot.recipe import config_for
from attention_paths.tasks.omniglot.training import load_network
from attention_paths.tasks.oneshot import OneShotResult, run_oneshot
from attention_paths.theory.paths import path_inputs
from attention_paths.theory.predictor import predict
from attention_paths.theory.scores import head_scores, silence_heads

__all__ = [
    "HEADS",
    "REFERENCE_COMBINATIONS",
    "PruningExperimentConfig",
    "PRUNING_EXPERIMENT",
    "PrunedNetwork",
    "RankCorrelation",
    "PruningResult",
    "path_outputs",
    "path_coefficients",
    "pruned_outputs",
    "correct",
    "drop_with_error",
    "score_order",
    "combinations_from_scores",
    "magnitude_scores",
    "theory_side_drops",
    "spearman_with_ci",
    "score_stability",
    "run_pruning",
    "pruning_claims",
    "pruning_summary",
    "read_pruning_run",
    "format_table",
    "format_statistics",
    "parse_heads",
    "head_name",
]

HEADS = (4, 4)
ALL_HEADS = [(l, h) for l in range(len(HEADS)) for h in range(HEADS[l])]
# the reference's literal combinations (0-based "layer-head"), which target its own network's heads (spec §C.3)
REFERENCE_COMBINATIONS = ("0-1,0-3", "0-1,0-3,0-2", "1-2,1-1", "1-2,1-1,1-3")
EVAL_SETS = ("test", "MNIST", "FashionMNIST")


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


@dataclass(kw_only=True)
class PrunedNetwork:
    """The trained network with the heads ``heads`` removed (no retraining), per evaluation set
    ({set: value}): its ``accuracy`` (%), the ``drop`` from the unpruned network (points; positive = worse)
    and the drop's paired standard error ``drop_se`` over the same episodes."""

    heads: list[str]
    accuracy: dict[str, float]
    drop: dict[str, float]
    drop_se: dict[str, float]


@dataclass(kw_only=True)
class RankCorrelation:
    """Spearman's rho between head scores and single-head in-distribution drops, with its bootstrap 95%
    interval ``ci95`` over ``n_boot`` resamples of the episodes."""

    rho: float
    ci95: list[float]
    n_boot: int


@dataclass(kw_only=True)
class PruningResult:
    """Everything :func:`run_pruning` computes, live or reloaded from its results folder (the same type:
    :func:`pruning_summary` writes it, :func:`read_pruning_run` reads it back).

    Heads are named "(layer)head", 1-based (:func:`head_name`); sets are "test" (Omniglot meta-test),
    "MNIST" and "FashionMNIST" (:data:`EVAL_SETS`).  ``scores`` are the theory's normalised head scores at
    ``N = 10``, ``tau = 0.5`` (T§14.1) and ``order`` the heads by ascending score; ``singles``,
    ``combinations`` (from the scores: "2 lowest", ...), ``reference_combinations`` (the reference's literal
    heads) and ``pairs`` (every pair) are :class:`PrunedNetwork` results; ``theory_side`` ({head: {set:
    drop}}) silences heads in the theory instead; ``stability`` (n_tau, n_width) is the rank correlation of
    the ranking at every grid point with the panel's; ``spearman`` ({"theory", "magnitude"}:
    :class:`RankCorrelation`).  ``F`` ({set: (n_episodes, n_paths)}) and ``y`` ({set: (n_episodes,)}) are
    the per-path outputs and targets every pruned network is computed from.  ``claims`` (C1-C6),
    ``wall_seconds`` and ``provenance`` exist once the result is written (``None`` on a live result).
    """

    scale: str
    config: dict
    network_record: dict
    n_episodes: dict[str, int]
    unpruned: dict[str, float]
    scores: dict[str, float]
    scores_selected_tau: dict
    magnitude: dict[str, float]
    order: list[str]
    singles: dict[str, PrunedNetwork]
    combinations: dict[str, PrunedNetwork]
    reference_combinations: dict[str, PrunedNetwork]
    pairs: dict[str, PrunedNetwork]
    theory_side: dict[str, dict[str, float]]
    stability: np.ndarray
    widths: list
    taus: list
    spearman: dict[str, RankCorrelation] = field(default_factory=dict)
    F: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    y: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    claims: list[dict] | None = None
    wall_seconds: float | None = None
    provenance: dict | None = None


# what a results folder's summary.json holds besides the fields (F and y go to arrays.npz)
_ARRAYS, _WRITTEN = ("F", "y"), ("claims", "wall_seconds", "provenance")
_NESTED = {f: PrunedNetwork for f in ("singles", "combinations", "reference_combinations", "pairs")}
_NESTED["spearman"] = RankCorrelation


def head_name(head) -> str:
    """``(layer, head)`` 0-based -> the figure label "(layer)head", 1-based."""
    return f"({head[0] + 1}){head[1] + 1}"


def parse_heads(spec: str) -> list[tuple[int, int]]:
    """The reference's 0-based "layer-head" strings, comma separated ("0-1,0-3") -> [(0, 1), (0, 3)]."""
    out = []
    for part in spec.split(","):
        try:
            layer, head = (int(v) for v in part.strip().split("-"))
        except ValueError:
            raise ValueError(f"cannot read head {part!r}; expected 'layer-head' such as '0-2'") from None
        if (layer, head) not in ALL_HEADS:
            raise ValueError(f"no head {part!r} in a network with heads per layer {HEADS}")
        out.append((layer, head))
    return out


# ------------------------------------------------------------------------------------------ network side
@torch.no_grad()
def path_outputs(net, episodes, batch: int = 256) -> np.ndarray:
    """Per-path outputs ``F[n, pi] = a^T V^(2,h2) V^(1,h1) W_in xi^pi(x_n)`` in float64, [n, 16].

    The unpruned network's output is ``F.sum(1) / 4`` (``1/sqrt(4)`` per layer).
    """
    net64 = copy.deepcopy(net).double().eval()
    net64.set_pruned(())
    scale = float(np.sqrt(np.prod([net64.n_heads] * net64.n_layers)))
    v = (net64.path_weights() * scale) @ net64.w_in.weight  # [Pi, 192]
    layers = net64.theory_layers()
    r = np.full(net64.positions.shape[0], 1.0 / net64.positions.shape[0])
    out = []
    for i in range(0, len(episodes), batch):
        x0 = net64.tokens((episodes.images[i : i + batch], episodes.labels[i : i + batch]))
        xi = path_inputs(x0.transpose(1, 2), layers, r)  # [B, Pi, 192]
        out.append(torch.einsum("pi,bpi->bp", v, xi).numpy())
    return np.concatenate(out)


def path_coefficients(pruned=(), heads=HEADS) -> np.ndarray:
    """``c_pi = prod_l m_(l,h_l) / sqrt(n_l)`` for the pruned heads ``[(layer, head), ...]`` (0-based), [Pi]."""
    masks = [np.ones(H) for H in heads]
    for layer, head in pruned:
        if not (0 <= layer < len(heads) and 0 <= head < heads[layer]):
            raise ValueError(f"no head {head} in layer {layer} (heads per layer {heads})")
        masks[layer][head] = 0.0
    for layer, m in enumerate(masks):
        if m.sum() == 0:
            raise ValueError(f"all heads of layer {layer + 1} are pruned; a layer needs at least one head")
    c = np.ones(1)
    for m in masks:  # paths flattened with the first layer's head varying slowest
        c = np.kron(c, m / np.sqrt(m.sum()))
    return c


def pruned_outputs(F, pruned=()) -> np.ndarray:
    """Outputs [n] of the network with heads ``pruned`` removed, from its path outputs ``F`` [n, Pi]."""
    return np.asarray(F) @ path_coefficients(pruned)


def correct(outputs, y) -> np.ndarray:
    """Per-episode correctness (bool); an output of exactly 0 counts as -1 (spec §F-11)."""
    return np.where(np.asarray(outputs) > 0, 1.0, -1.0) == np.asarray(y)


def drop_with_error(c_full, c_pruned) -> tuple[float, float]:
    """Accuracy drop (points) of a pruned network on the same episodes and its paired standard error."""
    d = np.asarray(c_full, float) - np.asarray(c_pruned, float)
    return 100.0 * float(d.mean()), 100.0 * float(d.std(ddof=1) / np.sqrt(len(d)))


# ------------------------------------------------------------------------------------------ scores
def score_order(scores) -> list[tuple[int, int]]:
    """Heads sorted by ascending score (ties: the lower layer, then head, first); ``scores`` as from
    :func:`attention_paths.head_scores` (one array per layer)."""
    flat = [(float(scores[l][h]), l, h) for l, h in ALL_HEADS]
    return [(l, h) for _, l, h in sorted(flat)]


def combinations_from_scores(scores) -> dict:
    """The combinations of spec OP-E9, from a network's own scores: the two and three lowest-scoring heads
    overall, and within each layer its two and three lowest."""
    order = score_order(scores)
    combos = {"2 lowest": order[:2], "3 lowest": order[:3]}
    for layer in range(len(HEADS)):
        in_layer = [hd for hd in order if hd[0] == layer]
        combos[f"2 lowest of layer {layer + 1}"] = in_layer[:2]
        combos[f"3 lowest of layer {layer + 1}"] = in_layer[:3]
    return combos


def magnitude_scores(net) -> list[np.ndarray]:
    """Baseline score: Frobenius norm of each head's value matrix ``V^(l,h)``, normalised by the largest."""
    out = []
    for layer in range(net.n_layers):
        V = net.v[layer].weight.detach().double().reshape(net.n_heads, net.d_model, net.d_model)
        out.append(torch.linalg.matrix_norm(V).numpy())
    m = max(float(s.max()) for s in out)
    return [s / m for s in out]


def theory_side_drops(U, data, tau: float, sets=EVAL_SETS) -> dict:
    """Theory-side pruning (T§14.2): silence each head inside ``U``, recompute the theory's mean predictor.

    ``data`` is an :class:`attention_paths.tasks.oneshot.OneShotData`.  Returns {head label: {set: drop in points}}.
    """
    X, y = data.features["train"], data.y["train"]
    base = {s: predict(U, X, y, tau, data.features[s], return_var=False).accuracy(data.y[s]) for s in sets}
    out = {}
    for head in ALL_HEADS:
        Us = silence_heads(U, HEADS, [head])
        out[head_name(head)] = {
            s: base[s] - predict(Us, X, y, tau, data.features[s], return_var=False).accuracy(data.y[s]) for s in sets
        }
    return out


def spearman_with_ci(scores, per_episode: dict, c_full, n_boot: int, seed: int) -> RankCorrelation:
    """Spearman correlation between head scores [8] and single-head drops, with a bootstrap 95% interval.

    ``per_episode`` maps head labels to the pruned network's per-episode correctness; the bootstrap
    resamples episodes (the drops' uncertainty), the scores being fixed.
    """
    labels = [head_name(h) for h in ALL_HEADS]
    s = np.array([scores[l][h] for l, h in ALL_HEADS])
    D = np.stack([np.asarray(c_full, float) - np.asarray(per_episode[k], float) for k in labels], 1)  # [n, 8]
    rho = float(spearmanr(s, D.mean(0)).statistic)
    rng = np.random.default_rng(seed)
    boots = []
    for _ in range(n_boot):
        idx = rng.integers(len(D), size=len(D))
        r = spearmanr(s, D[idx].mean(0)).statistic
        if np.isfinite(r):
            boots.append(r)
    lo, hi = np.percentile(boots, [2.5, 97.5])
    return RankCorrelation(rho=rho, ci95=[float(lo), float(hi)], n_boot=len(boots))


def score_stability(grid_U, widths, taus, ref: tuple[int, int]) -> np.ndarray:
    """Spearman correlation of the head scores at every grid point with those at ``ref = (i_tau, i_width)``,
    [n_taus, n_widths]."""
    ref_s = np.concatenate(head_scores(grid_U[ref], HEADS))
    out = np.zeros(grid_U.shape[:2])
    for i in range(grid_U.shape[0]):
        for j in range(grid_U.shape[1]):
            out[i, j] = spearmanr(ref_s, np.concatenate(head_scores(grid_U[i, j], HEADS))).statistic
    return out


# ------------------------------------------------------------------------------------------ the run
def _pruned_accuracy(pruned, F: dict, y: dict, full: dict) -> tuple[PrunedNetwork, dict]:
    """Accuracy and drop (with its paired standard error) of the network with the heads ``pruned`` silenced, on
    every set; and the per-episode correctness."""
    per = {s: correct(pruned_outputs(F[s], pruned), y[s]) for s in F}
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
    sel_scores = head_scores(theory.U[i_sel, i_n], HEADS)
    return {
        "tau": float(theory.taus[i_sel]),
        **{head_name(h): float(sel_scores[h[0]][h[1]]) for h in ALL_HEADS},
    }


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
    full = {s: correct(pruned_outputs(F[s]), y[s]) for s in sets}

    def evaluate(pruned):
        return _pruned_accuracy(pruned, F, y, full)

    tc = theory.config
    scores = theory.panel.head_scores  # N = 10, tau = 0.5
    singles, per_single = {}, {}
    for head in ALL_HEADS:
        singles[head_name(head)], per = evaluate([head])
        per_single[head_name(head)] = per["test"]
    combos = {name: evaluate(hs)[0] for name, hs in combinations_from_scores(scores).items()}
    reference = {spec: evaluate(parse_heads(spec))[0] for spec in REFERENCE_COMBINATIONS}
    pairs = {
        ",".join(head_name(h) for h in pair): evaluate(list(pair))[0] for pair in itertools.combinations(ALL_HEADS, 2)
    }
    mag = magnitude_scores(net)
    i_t, i_n = theory.panel.index
    return PruningResult(
        scale=scale,
        config=cfg,
        network_record={k: rec.get(k) for k in ("source", "sha256")},
        n_episodes={s: int(len(y[s])) for s in sets},
        unpruned={s: 100.0 * float(full[s].mean()) for s in sets},
        scores={head_name(h): float(scores[h[0]][h[1]]) for h in ALL_HEADS},
        scores_selected_tau=_selected_tau_scores(theory, i_n),
        magnitude={head_name(h): float(mag[h[0]][h[1]]) for h in ALL_HEADS},
        order=[head_name(h) for h in score_order(scores)],
        singles=singles,
        combinations=combos,
        reference_combinations=reference,
        pairs=pairs,
        theory_side=theory_side_drops(theory.panel.U, theory.data, tc["panel_tau"]),
        stability=score_stability(theory.U, theory.widths, theory.taus, (i_t, i_n)),
        widths=theory.widths,
        taus=theory.taus,
        spearman={
            "theory": spearman_with_ci(scores, per_single, full["test"], cfg["n_bootstrap"], cfg["seed"]),
            "magnitude": spearman_with_ci(mag, per_single, full["test"], cfg["n_bootstrap"], cfg["seed"]),
        },
        F=F,
        y=y,
    )


# ------------------------------------------------------------------------------------------ claims
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
    """Claims C1-C4 of spec §C.5 on the numbers of :func:`run_pruning`.

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


def _plain(value):
    """A field's value as it is written to summary.json (dataclasses as dicts)."""
    if isinstance(value, dict):
        return {k: asdict(v) if isinstance(v, (PrunedNetwork, RankCorrelation)) else v for k, v in value.items()}
    return value


def pruning_summary(res: PruningResult) -> tuple[dict, dict]:
    """``(summary, arrays)`` for ``summary.json`` / ``arrays.npz``: every field but the per-path outputs
    ``F`` and targets ``y`` (the arrays), then ``experiment`` and the claims (:func:`pruning_claims`)."""
    summary = {f.name: _plain(getattr(res, f.name)) for f in fields(res) if f.name not in _ARRAYS + _WRITTEN}
    summary["experiment"] = "pruning"
    summary["claims"] = pruning_claims(res)
    arrays = {f"F_{s}": F for s, F in res.F.items()} | {f"y_{s}": y for s, y in res.y.items()}
    return summary, arrays


def read_pruning_run(folder, summary: dict, arrays: dict) -> PruningResult:
    """The :class:`PruningResult` of a results folder written from :func:`pruning_summary` (read by
    ``runs.experiments.load_run``), checked against its summary (the path features and targets of every
    set, the heads named by the order, scores and single-head drops, the unpruned accuracies)."""
    names = {f.name for f in fields(PruningResult)}
    missing = [k for k in ("order", "scores", "singles", "combinations", "spearman", "claims") if k not in summary]
    if missing:
        raise ValueError(f"{folder}/summary.json lacks {missing}")
    unknown = sorted(set(summary) - names - {"format", "experiment"})
    if unknown:
        validate.refuse(folder, f"summary.json holds fields a pruning result does not have: {unknown}")
    for s_name, n in summary["n_episodes"].items():
        F = arrays.get(f"F_{s_name}")
        if F is None or F.shape != (n, int(np.prod(HEADS))):
            raise ValueError(f"{folder}/arrays.npz does not match its summary.json (set {s_name})")
        validate.finite(folder, f"F_{s_name}", F)
        y = validate.finite(folder, f"y_{s_name}", arrays.get(f"y_{s_name}", np.empty(0)), (n,))
        if not np.isin(y, (-1.0, 1.0)).all():
            validate.refuse(folder, f"y_{s_name} holds targets other than -1 and +1")
    heads = sorted(head_name(h) for h in ALL_HEADS)
    for what, names_ in (
        ("order", summary["order"]),
        ("scores", list(summary["scores"])),
        ("singles", list(summary["singles"])),
    ):
        if sorted(names_) != heads:
            validate.refuse(folder, f"the {what} name the heads {names_}, the network's are {heads}")
    validate.accuracies(folder, "unpruned accuracy", list(summary["unpruned"].values()))
    kw = {k: v for k, v in summary.items() if k in names}
    kw["stability"] = np.asarray(summary["stability"], float)
    for k, cls in _NESTED.items():
        kw[k] = {name: cls(**v) for name, v in summary[k].items()}
    kw["F"] = {s_name: arrays[f"F_{s_name}"] for s_name in summary["n_episodes"]}
    kw["y"] = {s_name: arrays[f"y_{s_name}"] for s_name in summary["n_episodes"]}
    return PruningResult(**kw)


# ------------------------------------------------------------------------------------------ tables
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
    mag = score_order(
        [np.array([res.magnitude[head_name((l, h))] for h in range(HEADS[l])]) for l in range(len(HEADS))]
    )
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
