"""The ensemble of trained networks (issue 23): one typed row per network, their spread, and claim tallies.

This is the ensemble's home.  Its three parts, each in the layer its imports put it in (one module is
impossible: book, Architecture, "Why the ensemble lives in three modules"):

* :mod:`attention_paths.tasks.omniglot.members`: the members' names, precise accuracies and commits (beside
  the training code, whose stage key it shares);
* this module: :class:`NetworkRow`, the numbers the chapters compare, built by :func:`network_row` from a
  member's three committed results (network record with precise accuracies, paper-size Omniglot theory run,
  pruning run); :func:`spread` (mean and spread over the networks) and :func:`claim_tally` (on how many
  networks each claim, I1-I5 and C1-C6 with C3-OOD and C3-OOD+, holds);
* :mod:`attention_paths.runs.committed_ensemble`: the committed members read back, checked, for the chapters.

Everything here works on loaded results (:func:`attention_paths.runs.experiments.load_run`); nothing is
recomputed.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from attention_paths.tasks.oneshot import OneShotResult
from attention_paths.tasks.pruning import EVAL_SETS, PruningResult, claims_of

__all__ = [
    "NetworkRow",
    "REFERENCE",
    "format_accuracies",
    "network_row",
    "spread",
    "claim_tally",
    "tally_claims",
    "format_rows",
    "format_spread",
    "format_tally",
    "limit_gaps",
    "limit_gap",
    "gp_on_every_temperature",
    "format_limit",
]

# The reference implementation's own numbers on its one network (its dumps use 1,024 meta-test episodes;
# the drops come from its plotting script), as compared in issue 23.
REFERENCE = {
    "test_accuracy": 83.8,
    "test_accuracy_se": 1.2,  # binomial, 1,024 episodes
    "episodes": 1024,
    "two_lowest_single_drops": (2.0, 0.8),
    "spearman": 0.86,
    "source": "the reference's theory and pruning dumps (1,024 meta-test episodes) and plotting script",
}

_SHORT = {"test": "ID", "MNIST": "MNIST", "FashionMNIST": "FMNIST"}


@dataclasses.dataclass(frozen=True)
class NetworkRow:
    """The per-network numbers of one trained network (:func:`network_row`).

    ``accuracy`` and ``accuracy_best``: {set: (%, s.e., episodes)} of the last and (where it was kept) the
    best-validation checkpoint; ``theory_minus_gp``: {set: (points, paired s.e.)}, the theory at the smallest
    width against the GP, each at its validation-selected temperature (``theory_tau``, ``gp_tau``);
    ``spearman``: (rho, 95% interval); ``lowest``: {"head", set: (drop, s.e.)}; ``two_lowest``: {"heads",
    set: (drop, s.e.)}; ``scores`` and ``single_drops`` ({head: value}); ``claims`` ({id: passed}),
    ``claim_text`` and ``claim_details`` ({id: text}); ``limit``: :func:`limit_gaps`.
    """

    seed: int
    name: str
    precision: str
    cpu: str
    accuracy: dict
    accuracy_best: dict | None
    best_step: int | None
    theory_minus_gp: dict
    theory_tau: float
    gp_tau: float
    spearman: tuple
    lowest: dict
    two_lowest: dict
    scores: dict
    single_drops: dict
    claims: dict
    claim_text: dict
    claim_details: dict
    limit: dict

    def as_dict(self) -> dict:
        """The row as a plain dict (for JSON)."""
        return dataclasses.asdict(self)

    def with_claims(self, claims: list[dict]) -> NetworkRow:
        """The row with ``claims`` (dicts with ``id``, ``passed``, ``claim``, ``detail``, as
        :func:`attention_paths.tasks.pruning.cumulative_claims` returns them) added to its own; a claim the
        row already holds is replaced.

        >>> row = row.with_claims(pruning.cumulative_claims(curves))  # doctest: +SKIP
        """
        return dataclasses.replace(
            self,
            claims=self.claims | {c["id"]: bool(c["passed"]) for c in claims},
            claim_text=self.claim_text | {c["id"]: c["claim"] for c in claims},
            claim_details=self.claim_details | {c["id"]: c["detail"] for c in claims},
        )


def network_row(seed: int, record: dict, theory: OneShotResult, prune: PruningResult) -> NetworkRow:
    """The per-network numbers (:class:`NetworkRow`): ``record`` is the network's ``record.json``, ``theory``
    and ``prune`` its loaded omniglot-theory and pruning runs.  The claims are the runs' recorded claims, with
    a pruning claim added since a run was written checked on its stored numbers
    (:func:`attention_paths.tasks.pruning.claims_of`)."""
    acc = record["accuracies"]
    best = record.get("accuracies_best", {})
    paired = theory.paired_by_set()
    selected = theory.select["val"]
    order = prune.order
    low = prune.singles[order[0]]
    two = prune.combinations["2 lowest"]
    claims = list(theory.claims) + claims_of(prune)  # a claim added since the run was written, on its numbers
    return NetworkRow(
        seed=int(seed),
        name=theory.config["network"],
        precision=record.get("precision", "float32"),
        cpu=record.get("hardware", {}).get("cpu", record.get("device_name", "?")),
        accuracy={s: (acc[s]["accuracy"], acc[s].get("se", np.nan), acc[s]["episodes"]) for s in EVAL_SETS},
        accuracy_best=(
            {s: (best[s]["accuracy"], best[s]["se"], best[s]["episodes"]) for s in EVAL_SETS}
            if "test" in best
            else None
        ),
        best_step=best.get("step"),
        theory_minus_gp={s: (paired[s]["diff"], paired[s]["se"]) for s in EVAL_SETS},
        theory_tau=float(np.asarray(selected["theory"].tau).ravel()[0]),
        gp_tau=float(selected["gp"].tau),
        spearman=(prune.spearman["theory"].rho, tuple(prune.spearman["theory"].ci95)),
        lowest={"head": order[0], **{s: (low.drop[s], low.drop_se[s]) for s in EVAL_SETS}},
        two_lowest={"heads": tuple(two.heads), **{s: (two.drop[s], two.drop_se[s]) for s in EVAL_SETS}},
        scores=dict(prune.scores),
        single_drops={k: (v.drop["test"], v.drop_se["test"]) for k, v in prune.singles.items()},
        claims={c["id"]: bool(c["passed"]) for c in claims},
        claim_text={c["id"]: c["claim"] for c in claims},
        claim_details={c["id"]: c["detail"] for c in claims},
        limit=limit_gaps(theory),
    )


def limit_gaps(theory: OneShotResult) -> dict:
    """Where the theory is farthest from the GP limit at the two largest widths (claim I2-limit).

    ``theory`` is an omniglot-theory result (its ``grid_accuracy`` and ``gp_grid_accuracy``: {set: (n_tau,
    n_width)} and {set: (n_tau,)}, in %).  Returns ``widths`` (the two largest), ``taus``, ``gap``
    ({set: ``abs(theory - GP)`` as nested lists, (n_tau, 2)}), ``worst`` (set, tau, gap at the largest
    width, gap at the next one) and ``worst_above`` (the largest gap at the largest width over every
    temperature but the grid's lowest).
    """
    widths, taus = [w.item() if hasattr(w, "item") else w for w in theory.widths], [float(t) for t in theory.taus]
    gap = {
        s: np.abs(np.asarray(theory.grid_accuracy[s])[:, -2:] - np.asarray(theory.gp_grid_accuracy[s])[:, None])
        for s in theory.grid_accuracy
    }
    s, i = max(((s, int(np.argmax(g[:, 1]))) for s, g in gap.items()), key=lambda si: gap[si[0]][si[1], 1])
    lowest = int(np.argmin(taus))
    above = max(float(np.delete(g[:, 1], lowest).max()) for g in gap.values())
    return {
        "widths": widths[-2:],
        "taus": taus,
        "gap": {k: g.tolist() for k, g in gap.items()},
        "worst": (s, taus[i], float(gap[s][i, 1]), float(gap[s][i, 0])),
        "worst_above": above,
    }


def limit_gap(limit: dict, min_tau: float | None = None) -> tuple[str, float, float]:
    """The largest ``abs(theory - GP)`` at the largest width, ``(set, tau, points)``, over the temperatures of
    ``limit`` (:func:`limit_gaps`, a row's ``limit``) at or above ``min_tau`` (default: all of them), e.g. to
    compare networks whose grids reach down to different temperatures; a ``min_tau`` above every temperature
    of the grid raises ``ValueError``.

    >>> limit_gap(row.limit)[:2] == row.limit["worst"][:2]  # doctest: +SKIP
    True
    """
    taus = [float(t) for t in limit["taus"]]
    keep = [i for i, t in enumerate(taus) if min_tau is None or t >= min_tau]
    if not keep:
        raise ValueError(f"no temperature of the grid {taus} is at or above min_tau = {min_tau}")
    return max(
        ((s, taus[i], float(np.asarray(g)[i, 1])) for s, g in limit["gap"].items() for i in keep),
        key=lambda c: c[2],
    )


def gp_on_every_temperature(*runs: OneShotResult) -> dict:
    """The GP limit selected on the validation episodes among *every* temperature at which ``runs`` (omniglot-
    theory results of one network on the same episodes) computed it, and the theory's gain over it.

    The reference protocol selects the GP's temperature from its own list (``gp_taus``: 0.25 to 0.025), the
    theory's from the grid's temperatures; this asks whether the theory's gain at the smallest width survives
    a GP that may choose from the grid's temperatures too (each run's ``gp_grid_accuracy``).  The candidates
    are read in order (the list, then each run's grid), so a tie keeps the reference's choice.  Returns
    ``tau``, ``source`` (``"list"`` or ``"grid"``), ``accuracy`` ({set: %}, validation included) and ``gain``
    ({set: points}: the first run's validation-selected theory at its smallest width minus this GP, unpaired:
    per-episode predictions are stored only at the selected temperatures).  Runs of another network, on other
    episodes or with another GP list raise ``ValueError``.

    >>> gp_on_every_temperature(theory8, theory8_low_tau)["tau"]  # doctest: +SKIP
    0.01
    """
    if not runs:
        raise ValueError("gp_on_every_temperature needs at least one omniglot-theory run")
    first = runs[0]
    for r in runs[1:]:
        same = {k: first.config.get(k) == r.config.get(k) for k in ("network", "P", "n_eval", "eval_pool", "gp_taus")}
        same["network SHA-256"] = r.network_record.get("sha256") == first.network_record.get("sha256")
        if not all(same.values()):
            raise ValueError(
                f"runs of other networks or episodes cannot be compared: {[k for k, v in same.items() if not v]} differ"
            )
    cands = [
        ("list", float(t), {s: float(a[i]) for s, a in first.gp_accuracy.items()}) for i, t in enumerate(first.gp_taus)
    ]
    for r in runs:
        cands += [
            ("grid", float(t), {s: float(np.asarray(a)[i]) for s, a in r.gp_grid_accuracy.items()})
            for i, t in enumerate(r.taus)
        ]
    source, tau, acc = max(cands, key=lambda c: c[2]["val"])  # max keeps the first of equal candidates
    theory = first.select["val"]["theory"]
    return {
        "tau": tau,
        "source": source,
        "accuracy": acc,
        "gain": {s: float(theory.accuracy[s][0]) - acc[s] for s in EVAL_SETS},
    }


def format_limit(rows: list[NetworkRow]) -> str:
    """Per network, the largest ``abs(theory - GP)`` at the largest width (set, temperature), the same cell
    at the next width, and the largest gap over the other temperatures, as text within 80 columns."""
    if not rows:
        return ""
    n1, n0 = rows[0].limit["widths"][::-1]
    lines = [
        "largest |theory - GP| (points) at the largest width, where it sits (set, tau),",
        "the same cell one width down, and the largest over the other temperatures:",
        f"{'seed':>4}  {'set':<13}{'tau':>6}{f'N={n1}':>9}{f'N={n0}':>8}{'other taus':>12}",
    ]
    for r in rows:
        s, tau, g1, g0 = r.limit["worst"]
        lines.append(f"{r.seed:>4}  {s:<13}{tau:>6g}{g1:>9.1f}{g0:>8.1f}{r.limit['worst_above']:>12.1f}")
    return "\n".join(lines)


def format_accuracies(records: dict) -> str:
    """The networks' precise accuracies as text within 80 columns: ``records`` maps each seed to its
    network's ``record.json``; the last checkpoint (the one analysed) and, where it was kept, the
    best-validation one."""
    lines = [f"{'seed':>4}  {'precision':<9} {'meta-test':>12} {'MNIST':>11} {'FashionMNIST':>13}  best-val ckpt"]
    for seed, rec in records.items():
        a = rec["accuracies"]
        cells = " ".join(
            f"{_pm(a[s]['accuracy'], a[s]['se'], 2 if s == 'test' else 1):>{w}}"
            for s, w in zip(EVAL_SETS, (12, 11, 13), strict=True)
        )
        best = rec.get("accuracies_best", {})
        b = (
            f"step {best['step']}: {best['test']['accuracy']:.1f}"
            if "test" in best
            else f"step {best.get('step')}: n/a"
        )
        lines.append(f"{seed:>4}  {rec.get('precision', 'float32'):<9} {cells}  {b}")
    n = {s: next(iter(records.values()))["accuracies"][s]["episodes"] for s in EVAL_SETS} if records else {}
    if n:
        lines.append(
            f"(episodes: meta-test {n['test']:,}, MNIST {n['MNIST']:,}, FashionMNIST {n['FashionMNIST']:,}; "
            "± binomial s.e.)"
        )
    return "\n".join(lines)


def _quantities(row: NetworkRow) -> dict:
    q = {f"accuracy {_SHORT[s]}": row.accuracy[s][0] for s in EVAL_SETS}
    q |= {f"theory - GP {_SHORT[s]}": row.theory_minus_gp[s][0] for s in EVAL_SETS}
    q["Spearman(score, drop)"] = row.spearman[0]
    q |= {f"lowest head drop {_SHORT[s]}": row.lowest[s][0] for s in EVAL_SETS}
    q |= {f"two lowest drop {_SHORT[s]}": row.two_lowest[s][0] for s in EVAL_SETS}
    return q


def spread(rows: list[NetworkRow]) -> dict:
    """``{quantity: {"mean", "sd", "min", "max", "n"}}`` over the networks (``sd`` with ddof = 1; NaN for a
    single network)."""
    if not rows:
        raise ValueError("no networks to summarise")
    table = [_quantities(r) for r in rows]
    out = {}
    for k in table[0]:
        v = np.array([t[k] for t in table], float)
        out[k] = {
            "mean": float(v.mean()),
            "sd": float(v.std(ddof=1)) if len(v) > 1 else float("nan"),
            "min": float(v.min()),
            "max": float(v.max()),
            "n": len(v),
        }
    return out


def claim_tally(rows: list[NetworkRow], label: str = "seed") -> dict:
    """``{claim id: {"holds", "of", "failing", "claim"}}``: on how many of the networks each
    claim was evaluated and held (a claim is evaluated where its inputs exist: I3 and I4 need posterior
    samples); ``failing`` names the networks where it fails by ``label`` (``"seed"`` or ``"name"``, for
    networks of several architectures, which share a seed)."""
    if label not in ("seed", "name"):
        raise ValueError(f"label must be 'seed' or 'name', got {label!r}")
    tally = {}
    for r in rows:
        for cid, ok in r.claims.items():
            t = tally.setdefault(cid, {"holds": 0, "of": 0, "failing": [], "claim": r.claim_text[cid]})
            t["of"] += 1
            t["holds"] += int(ok)
            if not ok:
                t["failing"].append(getattr(r, label))
    return tally


def tally_claims(rows: list[NetworkRow], label: str = "seed") -> list[dict]:
    """:func:`claim_tally` as claim records for the book's claims table (``runs.claims.record_claims``): per
    claim its ``id``, ``claim`` and, beside ``passed`` (it holds on every network where it was evaluated),
    ``holds`` and ``of`` (k of n networks) and ``detail`` naming the networks where it fails."""
    out = []
    for cid, t in claim_tally(rows, label).items():
        failing = [_display(r, label) for r in rows if cid in r.claims and not r.claims[cid]]
        detail = f"holds on {t['holds']} of {t['of']} networks" + (
            f"; fails on {', '.join(map(str, failing))}" if failing else ""
        )
        out.append(
            {"id": cid, "claim": t["claim"], "passed": t["holds"] == t["of"], "detail": detail}
            | {"holds": t["holds"], "of": t["of"]}
        )
    return out


def _display(r: NetworkRow, label: str):
    """A row's label in the printed tables: its seed, or its name without the recipe's ``paper-`` prefix
    (``paper-seed1`` -> ``seed1``, ``paper-3x3`` -> ``3x3``; ``paper`` stays)."""
    return r.seed if label == "seed" else (r.name.removeprefix("paper-") or r.name)


def _pm(v, se, digits=1) -> str:
    return f"{v:.{digits}f}±{se:.{digits}f}"


def format_rows(rows: list[NetworkRow], part: str = "theory", label: str = "seed") -> str:
    """The per-network table as text within 80 columns.  ``part="theory"``: accuracies (precise sets) and
    theory - GP (paired, smallest width, validation-selected temperatures); ``"pruning"``: Spearman(score,
    drop) with its bootstrap interval, the lowest-scoring head and its drops, the two lowest pruned together.
    ``label``: each row's first column, the network's training ``"seed"`` or its ``"name"`` (other
    architectures of one seed; printed without the recipe's ``paper-`` prefix)."""
    if label not in ("seed", "name"):
        raise ValueError(f"label must be 'seed' or 'name', got {label!r}")
    w = max([len(str(_display(r, label))) for r in rows] + [4])

    def first(r):
        return f"{_display(r, label):>{w}}"

    if part == "theory":
        lines = [f"{label:>{w}} {'prec.':<8}{'acc ID':>10}{'MNIST':>10}{'FMNIST':>10} theory-GP  ID / MNIST / FMNIST"]
        for r in rows:
            a, g = r.accuracy, r.theory_minus_gp
            lines.append(
                f"{first(r)} {r.precision:<8}"
                + "".join(f"{_pm(a[s][0], a[s][1]):>10}" for s in EVAL_SETS)
                + " "
                + " / ".join(f"{g[s][0]:+.1f}±{g[s][1]:.1f}" for s in EVAL_SETS)
            )
        return "\n".join(lines)
    if part != "pruning":
        raise ValueError(f"part must be 'theory' or 'pruning', got {part!r}")
    lines = [f"{label:>{w}} {'Spearman [95%]':<19}{'lowest':<7}{'drop ID':>9}{'FMNIST':>7}  two lowest: ID / FMNIST"]
    for r in rows:
        rho, ci = r.spearman
        lo, two = r.lowest, r.two_lowest
        lines.append(
            f"{first(r)} {rho:+.2f} [{ci[0]:+.2f},{ci[1]:+.2f}]  {lo['head']:<7}"
            f"{lo['test'][0]:>+9.1f}{lo['FashionMNIST'][0]:>+7.1f}  {','.join(two['heads'])}: "
            f"{two['test'][0]:+.1f}±{two['test'][1]:.1f} / {two['FashionMNIST'][0]:+.1f}"
        )
    return "\n".join(lines)


_GROUPS = {
    "theory": ("accuracy", "theory - GP"),
    "pruning": ("Spearman", "lowest head", "two lowest"),
}


def format_spread(rows: list[NetworkRow], part: str = "theory") -> str:
    """Mean, standard deviation and range over the networks of the ``part`` ("theory": accuracies and
    theory - GP; "pruning": Spearman and drops) quantities, with the reference's value where it has one."""
    if part not in _GROUPS:
        raise ValueError(f"part must be one of {sorted(_GROUPS)}, got {part!r}")
    lo, hi = REFERENCE["two_lowest_single_drops"]
    ref = {
        "accuracy ID": f"{REFERENCE['test_accuracy']:.1f}±{REFERENCE['test_accuracy_se']:.1f}",
        "Spearman(score, drop)": f"{REFERENCE['spearman']:.2f}",
        "lowest head drop ID": f"{lo:.1f}, {hi:.1f} (2 lowest)",
    }
    lines = [f"{'quantity (points)':<24}{'mean':>7}{'sd':>6}{'min':>7}{'max':>7}{'n':>3}  reference"]
    for k, v in spread(rows).items():
        if k.startswith(_GROUPS[part]):
            sd = f"{v['sd']:>6.2f}" if v["n"] > 1 else f"{'-':>6}"
            lines.append(
                f"{k:<24}{v['mean']:>7.2f}{sd}{v['min']:>7.2f}{v['max']:>7.2f}{v['n']:>3}  {ref.get(k, '')}".rstrip()
            )
    return "\n".join(lines)


def format_tally(rows: list[NetworkRow], prefix: str = "", label: str = "seed") -> str:
    """Each claim whose id starts with ``prefix`` as "holds on k of n", the networks where it fails in brackets,
    named by ``label`` (``"seed"``, or ``"name"`` for networks of several architectures, printed without the
    recipe's ``paper-`` prefix as in :func:`format_rows`)."""
    lines = []
    for cid, t in claim_tally(rows, label).items():
        if not cid.startswith(prefix):
            continue
        named = "seed " if label == "seed" else ""
        failing = [_display(r, label) for r in rows if cid in r.claims and not r.claims[cid]]
        fail = f"  (fails: {named}{', '.join(map(str, failing))})" if failing else ""
        lines.append(f"{cid:<10} holds on {t['holds']} of {t['of']}{fail}")
    return "\n".join(lines)
