"""Every experiment of the book as stages of one pipeline: ``python -m attention_paths reproduce``.

Stages (:func:`reproduction_stages`), what each reads, and what it writes under ``OUT/<stage>/``:

* ``data`` (the dataset root): ``datasets.json``, the prepared Omniglot splits, MNIST and FashionMNIST
  test sets (sizes and content hashes);
* ``train`` (``data``): ``model.pt`` + ``record.json``, the trained network (the committed checkpoint when
  there is one, else trained here, resumable from ``OUT/_work/train``; GPU);
* ``export`` (``train``): ``oneshot_data.npz`` (path features, targets and network outputs of every set)
  and ``qk.npz`` (query/key weights);
* ``grid-tau<t>`` (``export``): one temperature column of the widths x temperatures theory grid;
* ``sample-N<n>`` (``export``): Rao-Blackwellised posterior samples at width ``n`` (GPU);
* ``omniglot-theory`` (all of the above): ``summary.json`` + ``arrays.npz`` as the CLI experiment, and
  ``result.pkl``, the chapter's result (a results folder, :mod:`attention_paths.runs.results`);
* ``pruning`` (``train``, ``export``, the grid): ``summary.json``, ``arrays.npz``, ``result.pkl``;
* ``theory``, ``posterior``, ``hmc`` (nothing): the same three files for the Theory, posterior-check
  and hidden-Markov-chain experiments.

The temperature columns of the grid and the sampling widths are independent stages, so they run in
parallel on a Dask cluster.  See :mod:`attention_paths.runs.pipeline` for skipping, invalidation and atomicity.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
from pathlib import Path

import numpy as np

from attention_paths import sampling
from attention_paths.base import config
from attention_paths.base.io import atomic_savez, atomic_write_json
from attention_paths.base.provenance import DirtyTreeError, hardware, import_closure
from attention_paths.runs import results
from attention_paths.runs.experiments import load_run, stage_network
from attention_paths.runs.pipeline import Stage, StageContext
from attention_paths.runs.registry import EXPERIMENTS
from attention_paths.tasks import ensemble
from attention_paths.tasks.omniglot.checkpoints import (
    committed_checkpoint,
    read_json,
    resume_state,
    seal_network_folder,
)
from attention_paths.tasks.omniglot.data import load_ood, load_split
from attention_paths.tasks.omniglot.members import ENSEMBLE_SEEDS, commit_network, member_name
from attention_paths.tasks.omniglot.recipe import config_for, network_dir
from attention_paths.tasks.omniglot.training import train
from attention_paths.tasks.oneshot import (
    ONESHOT_EXPERIMENT,
    extract,
    load_oneshot_data,
    merge_grids,
    oneshot_summary,
    run_oneshot,
    sample_oneshot,
    save_oneshot_data,
    theory_grid,
    with_budget,
)
from attention_paths.tasks.oneshot.grid import load_grid, save_grid
from attention_paths.tasks.pruning import PRUNING_EXPERIMENT, pruning_summary, run_pruning

__all__ = [
    "reproduction_stages",
    "ensemble_stages",
    "ensemble_members",
    "commit_member",
    "spend_resume_state",
]


# The expensive, stable stages are keyed by the library code they run only: the files they import,
# transitively (base.provenance.import_closure), so that none is left out by hand.  An edit elsewhere in the
# package, this file included, does not retrain the network; use --force train after changing their glue
# below.  Every other stage is keyed by the whole package.
DATA_CODE = import_closure("tasks/omniglot/data.py")
TRAIN_CODE = import_closure("tasks/omniglot/training.py", "tasks/omniglot/members.py")


def _tau_name(tau: float) -> str:
    return f"grid-tau{tau:g}"


# ------------------------------------------------------------------------------------------ stage functions
def stage_data(ctx: StageContext) -> dict:
    """Prepare (and, online, download) every dataset; record sizes and content hashes."""

    info = {}
    for split in ("train", "val", "test"):
        images = np.ascontiguousarray(load_split(split).images)
        info[f"omniglot-{split}"] = {
            "shape": list(images.shape),
            "sha256": hashlib.sha256(images.tobytes()).hexdigest(),
        }
    for name in ("MNIST", "FashionMNIST"):
        ood = load_ood(name)
        arr = np.ascontiguousarray(ood["test"])
        info[name] = {"shape": list(arr.shape), "sha256": hashlib.sha256(arr.tobytes()).hexdigest()}

    atomic_write_json(ctx.out / "datasets.json", info)
    return {k: v["shape"] for k, v in info.items()}


def stage_train(ctx: StageContext) -> dict:
    """The trained network: the committed checkpoint of ``params["network"]`` unless ``retrain``, else
    :func:`attention_paths.tasks.omniglot.training.train` in the persistent work folder (resumable), then exported."""

    network = ctx.params["network"]
    committed = None if ctx.params["retrain"] else committed_checkpoint(network)
    if committed is not None:
        path, record = committed
        shutil.copyfile(path, ctx.out / "model.pt")
        shutil.copyfile(path.parent / "record.json", ctx.out / "record.json")
        return {
            "source": f"committed checkpoint data/{path.parent.name}/model.pt",
            "sha256": record["exported"]["sha256"],
        }
    train(
        config_for(network),
        ctx.work,
        progress=ctx.progress,
        threads=ctx.options.get("threads"),
        resume_from=resume_state(network),
    )
    # the last checkpoint, with its precise accuracies; into the results folder, so a dirty tree is recorded
    # with its diff here, and refused when the record is committed into data/ (commit_member)
    record = commit_network(ctx.work, ctx.out, allow_dirty=True)
    return {
        "source": f"trained by the train stage ({record.get('device', '?')})",
        "sha256": record["exported"]["sha256"],
    }


def stage_export(ctx: StageContext) -> dict:
    """Path features, targets and network outputs of every set (spec §B.7-B.8), and the query/key weights."""

    net, record = stage_network(ctx.inputs["train"])
    data = extract(net, ctx.params["config"], None, record, ctx.progress)
    save_oneshot_data(data, ctx.out / "oneshot_data.npz")
    sd = net.state_dict()
    atomic_savez(ctx.out / "qk.npz", **{k: v.double().numpy() for k, v in sd.items() if k.startswith(("q.", "k."))})
    return {"sets": {k: int(len(v)) for k, v in data.y.items()}, "network_sha256": record["sha256"]}


def stage_grid(ctx: StageContext) -> dict:
    """One temperature column of the theory grid (all widths, by continuation)."""

    data = load_oneshot_data(ctx.inputs["export"] / "oneshot_data.npz")
    grid = theory_grid(data, ctx.params["widths"], [ctx.params["tau"]], ctx.progress)
    save_grid(grid, ctx.out / "grid.npz")
    return {"seconds": grid.seconds, "max_grad": float(grid.grad_max.max())}


def stage_sample(ctx: StageContext) -> dict:
    """Posterior sampling (the configured sampler) at one width (spec §B.9)."""

    data = load_oneshot_data(ctx.inputs["export"] / "oneshot_data.npz")
    cfg = {"sampling": dict(ctx.params["sampling"], widths=(ctx.params["N"],))}
    smp = sample_oneshot(data, cfg, ctx.progress)[ctx.params["N"]]
    smp.save(ctx.out / "samples.npz")
    return {"diagnostics": smp.diagnostics, "wall_seconds": smp.wall_seconds}


def _oneshot_result(ctx: StageContext, with_samples: bool) -> dict:

    data = load_oneshot_data(ctx.inputs["export"] / "oneshot_data.npz")
    grid = merge_grids([load_grid(ctx.inputs[d] / "grid.npz") for d in ctx.inputs if d.startswith("grid-tau")])
    samples = (
        {
            int(d.split("-N", 1)[1]): sampling.load_samples(ctx.inputs[d] / "samples.npz")
            for d in ctx.inputs
            if d.startswith("sample-N")
        }
        if with_samples
        else None
    )
    _, record = stage_network(ctx.inputs["train"])
    return run_oneshot(
        ctx.params["scale"],
        network=ctx.params["network"],
        data=data,
        grid=grid,
        samples=samples,
        sample=False,
        record=record,
        progress=ctx.progress,
    )


def stage_oneshot(ctx: StageContext) -> dict:
    """The Omniglot theory experiment from its pieces; the same files as ``python -m attention_paths
    omniglot-theory``."""

    res = _oneshot_result(ctx, with_samples=True)
    summary, arrays = oneshot_summary(res)
    results.write(ctx.out, summary, arrays, res)
    return {"claims": {c["id"]: c["passed"] for c in summary["claims"]}}


def stage_pruning(ctx: StageContext) -> dict:
    """Head pruning of the trained network with the theory's scores (spec §C)."""

    theory = _oneshot_result(ctx, with_samples=False)
    net, record = stage_network(ctx.inputs["train"])
    res = run_pruning(ctx.params["scale"], theory=theory, net=net, record=record, progress=ctx.progress)
    summary, arrays = pruning_summary(res)
    results.write(ctx.out, summary, arrays, (theory, res))
    return {"claims": {c["id"]: c["passed"] for c in summary["claims"]}}


def stage_experiment(ctx: StageContext) -> dict:
    """A self-contained experiment of :data:`attention_paths.runs.registry.EXPERIMENTS` (its record's run,
    summary and ``stored`` functions)."""

    exp = EXPERIMENTS[ctx.params["experiment"]]
    res = exp.resolve("run")(ctx.params["scale"], progress=ctx.progress)
    summary, arrays = exp.resolve("summary")(res)
    stored = exp.resolve("stored")
    results.write(ctx.out, summary, arrays, res if stored is None else stored(res))
    return {"claims": {c["id"]: c["passed"] for c in summary.get("claims", []) if "id" in c}}


# ------------------------------------------------------------------------------------------ the pipeline
def _committed_sha(network: str) -> str | None:
    """The SHA-256 of the committed network :func:`~attention_paths.tasks.omniglot.recipe.network_dir` (part of
    the train stage's key), or ``None`` when none is committed; a damaged folder (``record.json``, its seal,
    ``model.pt``) raises ``ValueError`` naming the file (:func:`~attention_paths.tasks.omniglot.checkpoints.
    committed_checkpoint`)."""
    committed = committed_checkpoint(network)
    return None if committed is None else committed[1]["exported"]["sha256"]


def network_chain(
    network: str,
    scale: str,
    cfg: dict,
    *,
    prefix: str = "",
    retrain: bool = False,
    sample: bool = True,
    options: dict | None = None,
) -> list[Stage]:
    """The stages of one trained network, used by :func:`reproduction_stages` and :func:`ensemble_stages`:
    ``train`` (needs the ``data`` stage), ``export``, one ``grid-tau<t>`` per temperature, one ``sample-N<n>``
    per sampling width (with ``sample``), ``omniglot-theory`` and ``pruning``; each name (and dependency)
    after ``prefix``.

    ``cfg``: the Omniglot theory's settings (:data:`~attention_paths.tasks.oneshot.ONESHOT_EXPERIMENT`, as a
    dict, its ``network`` set); ``retrain``: train even when a committed checkpoint exists; ``options``: the
    train stage's run-time options (``threads``), which enter no key.
    """
    p = prefix
    # what the extraction reads (the sampler budget must not invalidate it)
    extract_cfg = {k: cfg[k] for k in ("network", "P", "n_eval", "train_batches", "eval_pool")}
    widths, export = sorted(cfg["widths"]), (p + "export",)
    grids = [
        Stage(p + _tau_name(t), stage_grid, {"tau": float(t), "widths": widths}, export, prefix=p)
        for t in sorted(cfg["taus"])
    ]
    sampled = cfg["sampling"]["widths"] if sample else ()
    samples = [
        Stage(p + f"sample-N{N}", stage_sample, {"N": int(N), "sampling": cfg["sampling"]}, export, gpu=True, prefix=p)
        for N in sampled
    ]
    committed = None if retrain else _committed_sha(network)
    common = {"scale": scale, "network": network}
    train = {"network": network, "retrain": retrain, "committed_sha256": committed}
    analysed = (p + "train", p + "export", *[g.name for g in grids])
    return [
        Stage(p + "train", stage_train, train, ("data",), True, TRAIN_CODE, options or {}, prefix=p),
        Stage(p + "export", stage_export, {"config": extract_cfg}, (p + "train",), prefix=p),
        *grids,
        *samples,
        Stage(
            p + "omniglot-theory",
            stage_oneshot,
            dict(common, config=cfg),
            (*analysed, *[s.name for s in samples]),
            prefix=p,
        ),
        Stage(
            p + "pruning",
            stage_pruning,
            dict(
                common,
                config=extract_cfg | {k: cfg[k] for k in ("widths", "taus")},
                pruning=dataclasses.asdict(PRUNING_EXPERIMENT[scale]),
            ),
            analysed,
            prefix=p,
        ),
    ]


def _data_stage() -> Stage:
    return Stage("data", stage_data, {"datasets": ["omniglot", "MNIST", "FashionMNIST"]}, code=DATA_CODE)


def reproduction_stages(
    scale: str | None = None,
    *,
    network: str | None = None,
    retrain: bool = False,
    sampling: dict | None = None,
    sample: bool = True,
) -> list[Stage]:
    """The stages that regenerate every result of the book at ``scale``: ``data``, the trained network's
    chain (:func:`network_chain`), and one stage per self-contained experiment of
    :data:`~attention_paths.runs.registry.EXPERIMENTS` (those not computed in the chain).

    Parameters
    ----------
    network : str, optional
        the trained network the Omniglot stages use (default: the scale's own; ``"quick"`` with
        ``scale="paper"`` gives the paper-size theory on the committed CPU-trained network)
    retrain : bool
        train even when a committed checkpoint exists
    sampling : dict, optional
        overrides of the sampler budget (``num_chains``, ``num_warmup``, ``num_samples``; ``kind``: the sampler)
    sample : bool
        with the posterior-sampling stages (``--no-sample``: without; the ``omniglot-theory`` stage then
        holds the theory grid alone, as ``omniglot-theory --no-sample`` writes it)
    """

    scale = config.get_scale(scale)
    network = network or ONESHOT_EXPERIMENT[scale].network
    cfg = dataclasses.asdict(dataclasses.replace(ONESHOT_EXPERIMENT[scale], network=network))
    if sampling:
        cfg["sampling"] = with_budget(cfg["sampling"], sampling)
    stages = [_data_stage(), *network_chain(network, scale, cfg, retrain=retrain, sample=sample)]
    for exp in EXPERIMENTS.values():  # the self-contained experiments, one stage each
        if not exp.network_chain:
            stages.append(Stage(exp.name, stage_experiment, {"experiment": exp.name, "scale": scale}, gpu=exp.gpu))
    return stages


# ------------------------------------------------------------------------------------------ the ensemble
def stage_ensemble(ctx: StageContext) -> dict:
    """The per-network table, the spread over networks and the claim tally of every member (issue 23), as the
    ``summary.json`` of a results folder (:func:`attention_paths.runs.results.write`)."""

    rows = []
    for seed, name in ctx.params["members"]:
        record = json.loads((ctx.inputs[f"{name}.train"] / "record.json").read_text())
        theory = load_run(ctx.inputs[f"{name}.omniglot-theory"], "omniglot-theory")
        prune = load_run(ctx.inputs[f"{name}.pruning"], "pruning")
        rows.append(ensemble.network_row(seed, record, theory, prune))
    summary = {
        "experiment": "ensemble",
        "members": ctx.params["members"],
        "rows": [r.as_dict() for r in rows],
        "spread": ensemble.spread(rows),
        "tally": ensemble.claim_tally(rows),
    }
    results.write(ctx.out, summary, {})  # a results folder: format version and digests, read by results.read
    return {cid: f"{t['holds']}/{t['of']}" for cid, t in summary["tally"].items()}


def ensemble_stages(seeds=None, *, threads: int | None = None) -> list[Stage]:
    """Every network of the ensemble of issue 23 with its paper-size theory and pruning, as stages.

    Per seed ``k`` (network ``n`` = :func:`~attention_paths.tasks.omniglot.members.member_name` of ``k``):
    :func:`network_chain` prefixed ``n.``, without posterior sampling: ``n.train`` (the committed
    ``data/omniglot-<n>`` when there is one, else the paper's recipe with seed ``k``, resumable, from a
    committed ``resume.pt`` when there is one; its ``record.json`` holds the precise accuracies),
    ``n.export``, ``n.grid-tau<t>`` (ten temperature columns), ``n.omniglot-theory`` and ``n.pruning``; then
    ``ensemble``, the table over all of them.  The seeds are independent, so a Dask cluster trains and
    analyses them in parallel.  ``threads``: CPU threads per training (not part of the stages' keys).
    """

    cfg = dataclasses.asdict(ONESHOT_EXPERIMENT["paper"])
    stages = [_data_stage()]
    members = [list(m) for m in ensemble_members(seeds)]
    for _, name in members:  # a network's stages have the same keys in any ensemble
        net_cfg = dict(cfg, network=name)
        stages += network_chain(name, "paper", net_cfg, prefix=f"{name}.", sample=False, options={"threads": threads})
    deps = [f"{n}.{part}" for _, n in members for part in ("train", "omniglot-theory", "pruning")]
    stages.append(Stage("ensemble", stage_ensemble, {"members": members}, deps=tuple(deps)))
    return stages


def ensemble_members(seeds=None) -> list[tuple[int, str]]:
    """``[(seed, network name)]`` of an ensemble (default seeds: :data:`~attention_paths.tasks.omniglot.members.
    ENSEMBLE_SEEDS`); repeated seeds raise ``ValueError``."""

    seeds = tuple(ENSEMBLE_SEEDS if seeds is None else seeds)
    if not seeds or len(set(seeds)) != len(seeds):
        raise ValueError(f"the ensemble needs distinct seeds, got {seeds!r}")
    return [(int(k), member_name(k)) for k in seeds]


def commit_member(out, name: str, data_dir=None, *, allow_dirty: bool = False) -> dict:
    """Copy one network's ensemble results from a results folder ``out`` into ``data/``: the network
    (``data/omniglot-<name>/``: ``model.pt`` + ``record.json``; a committed resumable state is removed), its
    theory (``data/omniglot-theory/paper-sizes-<name>-network/``) and its pruning
    (``data/pruning/<name>-network/``), each ``summary.json`` + ``arrays.npz``.  Returns ``{what: folder}``.

    A network evaluated from code with uncommitted changes (its ``evaluation.provenance``) is refused with
    :class:`~attention_paths.base.provenance.DirtyTreeError` naming the files, unless ``allow_dirty=True``
    (the record keeps the full ``git diff``)."""

    out, data = Path(out), Path(data_dir or config.repo_data_dir())
    targets = {
        "train": (network_dir(name, data), ("model.pt", "record.json")),
        "omniglot-theory": (
            data / "omniglot-theory" / f"paper-sizes-{name}-network",
            (results.ARRAYS, results.SUMMARY),
        ),
        "pruning": (data / "pruning" / f"{name}-network", (results.ARRAYS, results.SUMMARY)),
    }
    for part in targets:
        state, reason = results.stage_state(out / f"{name}.{part}")
        if state != "done":
            raise ValueError(f"stage {name}.{part} in {out} is {state} ({reason}); run the ensemble first")
    _refuse_dirty_network(out / f"{name}.train" / "record.json", allow_dirty)
    done = {}
    for part, (dest, files) in targets.items():
        dest.mkdir(parents=True, exist_ok=True)
        for f in files:  # the summary last: a folder with a summary is complete
            tmp = dest / f".{f}.tmp"
            shutil.copyfile(out / f"{name}.{part}" / f, tmp)
            tmp.replace(dest / f)
        if part != "train":  # the committed run's own record: the SHA-256 of the files committed
            stage = results.read_record(out / f"{name}.{part}")
            results.write_files_record(
                dest,
                {
                    "command": f"python -m attention_paths ensemble --seeds ... --commit (stage {name}.{part})",
                    "stage_key": stage["key"],
                    "code": stage["provenance"],
                    "wall_seconds": stage["wall_seconds"],
                    "hardware": hardware(),
                },
            )
        done[part] = str(dest)
    for finish in (spend_resume_state, seal_network_folder):  # then the committed files sealed (issue 37 §1)
        finish(network_dir(name, data))
    return done


def _refuse_dirty_network(record_file: Path, allow_dirty: bool) -> None:
    """Raise :class:`DirtyTreeError` when the network record ``record_file`` was evaluated from code with
    uncommitted changes (or from no git checkout), unless ``allow_dirty``."""
    prov = (read_json(record_file, "network record").get("evaluation") or {}).get("provenance") or {}
    if allow_dirty or (prov.get("git_commit") and prov.get("git_dirty") is False):
        return
    changes = ", ".join(prov.get("git_changes") or []) or "files not recorded"
    raise DirtyTreeError(
        f"refusing to commit {record_file} into data/: it was evaluated from code with uncommitted changes "
        f"({changes}; commit {prov.get('git_commit')}); commit them and run its train stage again, or pass "
        "allow_dirty=True to commit it with the git diff it records"
    )


def spend_resume_state(folder) -> None:
    """Remove a committed network's spent resumable state (``resume.pt``, ``resume.json``) from ``folder``,
    moving the note of ``resume.json`` (how the run was interrupted) into ``record.json`` as
    ``training_note`` unless the record has one."""
    folder = Path(folder)
    note_file, record_file = folder / "resume.json", folder / "record.json"
    if note_file.exists() and record_file.exists():
        note = read_json(note_file, "resume record").get("note")  # damage named, not a bare JSONDecodeError
        record = read_json(record_file, "network record")
        if note and "training_note" not in record:
            atomic_write_json(record_file, record | {"training_note": note})
    for spent in (folder / "resume.pt", note_file):
        spent.unlink(missing_ok=True)
