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
  ``result.pkl``, the chapter's result;
* ``pruning`` (``train``, ``export``, the grid): ``summary.json``, ``arrays.npz``, ``result.pkl``;
* ``theory``, ``posterior``, ``hmc`` (nothing): the same three files for the Theory, posterior-check
  and hidden-Markov-chain experiments.

The temperature columns of the grid and the sampling widths are independent stages, so they run in
parallel on a Dask cluster.  See :mod:`attention_paths.pipeline` for skipping, invalidation and atomicity.
"""
from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np

from .pipeline import Stage, StageContext

__all__ = ["reproduction_stages", "results_dir", "load_stage_result", "result_or_compute", "trained_network"]


# The expensive, stable stages are keyed by the library code they run only (an edit elsewhere in the
# package, this file included, does not retrain the network; use --force train after changing their glue
# below); every other stage by the whole package.
DATA_CODE = ("config.py", "io.py", "omniglot.py", "progress.py")
TRAIN_CODE = DATA_CODE + ("attention.py", "incontext.py", "training.py")


def _tau_name(tau: float) -> str:
    return f"grid-tau{tau:g}"


# ------------------------------------------------------------------------------------------ stage functions
def stage_data(ctx: StageContext) -> dict:
    """Prepare (and, online, download) every dataset; record sizes and content hashes."""
    from .omniglot import load_ood, load_split

    info = {}
    for split in ("train", "val", "test"):
        images = np.ascontiguousarray(load_split(split).images)
        info[f"omniglot-{split}"] = {"shape": list(images.shape),
                                     "sha256": hashlib.sha256(images.tobytes()).hexdigest()}
    for name in ("MNIST", "FashionMNIST"):
        ood = load_ood(name)
        arr = np.ascontiguousarray(ood["test"])
        info[name] = {"shape": list(arr.shape), "sha256": hashlib.sha256(arr.tobytes()).hexdigest()}
    from .io import atomic_write_json

    atomic_write_json(ctx.out / "datasets.json", info)
    return {k: v["shape"] for k, v in info.items()}


def stage_train(ctx: StageContext) -> dict:
    """The trained network: the committed checkpoint of ``params["network"]`` unless ``retrain``, else
    :func:`attention_paths.training.train` in the persistent work folder (resumable), then exported."""
    from .training import committed_checkpoint, config_for, export_checkpoint, train

    network = ctx.params["network"]
    committed = None if ctx.params["retrain"] else committed_checkpoint(network)
    if committed is not None:
        path, record = committed
        shutil.copyfile(path, ctx.out / "model.pt")
        shutil.copyfile(path.parent / "record.json", ctx.out / "record.json")
        return {"source": f"committed checkpoint data/omniglot-{network}/model.pt",
                "sha256": record["exported"]["sha256"]}
    train(config_for(network), ctx.work, progress=ctx.progress)
    record = export_checkpoint(ctx.work, ctx.out)
    return {"source": f"trained by the train stage ({record.get('device', '?')})", "sha256": record["exported"]["sha256"]}


def _network(folder: Path):
    from .training import checkpoint_sha256, load_trained

    net, _ = load_trained(folder / "model.pt")
    record = json.loads((folder / "record.json").read_text())
    sha = checkpoint_sha256(folder / "model.pt")
    return net, {**record, "source": f"reproduce stage {folder.name} ({folder})", "sha256": sha}


def stage_export(ctx: StageContext) -> dict:
    """Path features, targets and network outputs of every set (spec §B.7-B.8), and the query/key weights."""
    from .io import atomic_savez
    from .oneshot import extract, save_oneshot_data

    net, record = _network(ctx.inputs["train"])
    data = extract(net, ctx.params["config"], None, record, ctx.progress)
    save_oneshot_data(data, ctx.out / "oneshot_data.npz")
    sd = net.state_dict()
    atomic_savez(ctx.out / "qk.npz", **{k: v.double().numpy() for k, v in sd.items() if k.startswith(("q.", "k."))})
    return {"sets": {k: int(len(v)) for k, v in data.y.items()}, "network_sha256": record["sha256"]}


def _save_grid(grid: dict, path: Path):
    from .io import atomic_savez

    atomic_savez(path, widths=grid["widths"], taus=grid["taus"], U=grid["U"], seconds=np.array(grid["seconds"]),
                 grad_max=grid["solver"]["grad_max"], n_iter=grid["solver"]["n_iter"],
                 **{f"accuracy/{s}": a for s, a in grid["accuracy"].items()})


def _load_grid(path: Path) -> dict:
    from .io import load_npz

    a = load_npz(path)
    return {"widths": a["widths"], "taus": a["taus"], "U": a["U"], "seconds": float(a["seconds"]),
            "solver": {"grad_max": a["grad_max"], "n_iter": a["n_iter"]},
            "accuracy": {k.split("/", 1)[1]: v for k, v in a.items() if k.startswith("accuracy/")}}


def stage_grid(ctx: StageContext) -> dict:
    """One temperature column of the theory grid (all widths, by continuation)."""
    from .oneshot import load_oneshot_data, theory_grid

    data = load_oneshot_data(ctx.inputs["export"] / "oneshot_data.npz")
    grid = theory_grid(data, ctx.params["widths"], [ctx.params["tau"]], ctx.progress)
    _save_grid(grid, ctx.out / "grid.npz")
    return {"seconds": grid["seconds"], "max_grad": float(grid["solver"]["grad_max"].max())}


def stage_sample(ctx: StageContext) -> dict:
    """Posterior sampling (the configured sampler) at one width (spec §B.9)."""
    from .oneshot import load_oneshot_data, sample_oneshot

    data = load_oneshot_data(ctx.inputs["export"] / "oneshot_data.npz")
    cfg = {"sampling": dict(ctx.params["sampling"], widths=(ctx.params["N"],))}
    smp = sample_oneshot(data, cfg, ctx.progress)[ctx.params["N"]]
    smp.save(ctx.out / "samples.npz")
    return {"diagnostics": smp.diagnostics, "wall_seconds": smp.wall_seconds}


def _oneshot_result(ctx: StageContext, with_samples: bool) -> dict:
    from .oneshot import load_oneshot_data, merge_grids, run_oneshot
    from .sampling import load_samples

    data = load_oneshot_data(ctx.inputs["export"] / "oneshot_data.npz")
    grid = merge_grids([_load_grid(ctx.inputs[d] / "grid.npz") for d in ctx.inputs if d.startswith("grid-tau")])
    samples = ({int(d.split("-N", 1)[1]): load_samples(ctx.inputs[d] / "samples.npz")
                for d in ctx.inputs if d.startswith("sample-N")} if with_samples else None)
    _, record = _network(ctx.inputs["train"])
    return run_oneshot(ctx.params["scale"], network=ctx.params["network"], data=data, grid=grid, samples=samples,
                       sample=False, record=record, progress=ctx.progress)


def stage_oneshot(ctx: StageContext) -> dict:
    """The Omniglot theory experiment from its pieces; the same files as ``python -m attention_paths
    omniglot-theory``."""
    from .oneshot import oneshot_summary

    res = _oneshot_result(ctx, with_samples=True)
    summary, arrays = oneshot_summary(res)
    _write_result(ctx.out, res)
    _write_summary(ctx.out, summary, arrays)
    return {"claims": {c["id"]: c["passed"] for c in summary["claims"]}}


def stage_pruning(ctx: StageContext) -> dict:
    """Head pruning of the trained network with the theory's scores (spec §C)."""
    from .pruning import pruning_summary, run_pruning

    theory = _oneshot_result(ctx, with_samples=False)
    net, _ = _network(ctx.inputs["train"])
    res = run_pruning(ctx.params["scale"], theory=theory, net=net, progress=ctx.progress)
    summary, arrays = pruning_summary(res)
    _write_result(ctx.out, (theory, res))
    _write_summary(ctx.out, summary, arrays)
    return {"claims": {c["id"]: c["passed"] for c in summary["claims"]}}


def _write_summary(folder: Path, summary: dict, arrays: dict) -> None:
    """``summary.json`` and ``arrays.npz``, the files the experiments' CLI writes."""
    from .io import atomic_savez, atomic_write_json

    atomic_savez(folder / "arrays.npz", **arrays)
    atomic_write_json(folder / "summary.json", summary)


def _write_result(folder: Path, result) -> None:
    """The chapter's in-memory result, pickled (read back by :func:`result_or_compute`)."""
    import pickle

    from .io import _atomic

    _atomic(folder / "result.pkl", lambda fh: pickle.dump(result, fh, protocol=pickle.HIGHEST_PROTOCOL))


def _slim_hmc(res: dict) -> dict:
    """The hmc result without the raw input sequences of the seed sets other than the headline one (the
    chapter uses only their sweeps; 57 MB per task at the paper's 1000 test sequences)."""
    import dataclasses

    sets = [res["sets"][0]]
    for s in res["sets"][1:]:
        s = dict(s)
        for net in ("main", "noisy"):
            if net in s:
                s[net] = dataclasses.replace(s[net], x_train=np.empty(0), x_test=np.empty(0))
        sets.append(s)
    return dict(res, sets=sets)


_STORABLE = {"hmc": _slim_hmc}


def stage_experiment(ctx: StageContext) -> dict:
    """A self-contained experiment of :data:`attention_paths.experiments.EXPERIMENTS`."""
    from .experiments import EXPERIMENTS

    run, summarize = EXPERIMENTS[ctx.params["experiment"]]
    res = run(ctx.params["scale"], progress=ctx.progress)
    summary, arrays = summarize(res)
    _write_summary(ctx.out, summary, arrays)
    _write_result(ctx.out, _STORABLE.get(ctx.params["experiment"], lambda r: r)(res))
    return {"claims": {c["id"]: c["passed"] for c in summary.get("claims", []) if "id" in c}}


# ------------------------------------------------------------------------------------------ the pipeline
def reproduction_stages(scale: str | None = None, *, network: str | None = None, retrain: bool = False,
                        sampling: dict | None = None) -> list[Stage]:
    """The stages that regenerate every result of the book at ``scale``.

    Parameters
    ----------
    network : str, optional
        the trained network the Omniglot stages use (default: the scale's own; ``"quick"`` with
        ``scale="paper"`` gives the paper-size theory on the committed CPU-trained network)
    retrain : bool
        train even when a committed checkpoint exists
    sampling : dict, optional
        overrides of the sampler budget (``num_chains``, ``num_warmup``, ``num_samples``; ``kind``: the sampler)
    """
    from .config import get_scale
    from .oneshot import ONESHOT_EXPERIMENT, with_budget
    from .pruning import PRUNING_EXPERIMENT
    from .training import repo_data_dir

    scale = get_scale(scale)
    network = network or ONESHOT_EXPERIMENT[scale]["network"]
    cfg = dict(ONESHOT_EXPERIMENT[scale], network=network)
    if sampling:
        cfg["sampling"] = with_budget(cfg["sampling"], sampling)
    committed = repo_data_dir() / f"omniglot-{network}" / "record.json"
    committed_sha = (json.loads(committed.read_text())["exported"]["sha256"]
                     if committed.exists() and not retrain else None)
    # what the extraction reads (the sampler budget must not invalidate it)
    extract_cfg = {k: cfg[k] for k in ("network", "P", "n_eval", "train_batches", "eval_pool")}
    grids = [Stage(_tau_name(t), stage_grid, {"tau": float(t), "widths": sorted(cfg["widths"])}, deps=("export",))
             for t in sorted(cfg["taus"])]
    samples = [Stage(f"sample-N{N}", stage_sample, {"N": int(N), "sampling": cfg["sampling"]}, deps=("export",),
                     gpu=True) for N in cfg["sampling"]["widths"]]
    common = {"scale": scale, "network": network}
    stages = [
        Stage("data", stage_data, {"datasets": ["omniglot", "MNIST", "FashionMNIST"]}, code=DATA_CODE),
        Stage("train", stage_train, {"network": network, "retrain": retrain, "committed_sha256": committed_sha},
              deps=("data",), gpu=True, code=TRAIN_CODE),
        Stage("export", stage_export, {"config": extract_cfg}, deps=("train",)),
        *grids, *samples,
        Stage("omniglot-theory", stage_oneshot, dict(common, config=cfg),
              deps=("train", "export", *[g.name for g in grids], *[s.name for s in samples])),
        Stage("pruning", stage_pruning, dict(common, config=extract_cfg | {k: cfg[k] for k in ("widths", "taus")},
                                             pruning=PRUNING_EXPERIMENT[scale]),
              deps=("train", "export", *[g.name for g in grids])),
    ]
    for name, gpu in (("theory", False), ("posterior", True), ("hmc", True)):
        stages.append(Stage(name, stage_experiment, {"experiment": name, "scale": scale}, gpu=gpu))
    return stages


# ------------------------------------------------------------------------------------------ reading results
def results_dir() -> Path | None:
    """The results folder the book renders from: ``$REPRO_RESULTS`` when set (a ``reproduce`` output), else
    ``None`` (chapters compute live or read the committed results under ``data/``)."""
    import os

    value = os.environ.get("REPRO_RESULTS", "").strip()
    if not value:
        return None
    path = Path(value).expanduser()
    if not path.is_dir():
        raise FileNotFoundError(f"REPRO_RESULTS={value!r} is not a folder; point it at the --out folder of "
                                "`python -m attention_paths reproduce`")
    return path.resolve()


def load_stage_result(stage: str, folder=None) -> dict | None:
    """The record of stage ``stage`` in a results folder (default :func:`results_dir`), after checking that
    every file still matches it; ``None`` when there is no results folder or the stage has not run.
    A damaged stage output raises ``ValueError``."""
    from .pipeline import RECORD, stage_state

    folder = Path(folder) if folder is not None else results_dir()
    if folder is None or not (folder / stage).exists():
        return None
    state, reason = stage_state(folder / stage)
    if state != "done":
        raise ValueError(f"results of stage {stage!r} in {folder} are {state}: {reason}; rerun "
                         f"`python -m attention_paths reproduce --out {folder}`")
    record = json.loads((folder / stage / RECORD).read_text())
    record["folder"] = str(folder / stage)
    return record


def _describe(record: dict) -> str:
    prov, proc = record.get("provenance", {}), record.get("process", {})
    commit = (prov.get("git_commit") or "unknown")[:10] + (" (uncommitted changes)" if prov.get("git_dirty") else "")
    return (f"{record['folder']} (stage computed {prov.get('time_utc', '?')} on {proc.get('host', '?')}, "
            f"commit {commit}, {record.get('wall_seconds', float('nan')):.0f} s)")


def result_or_compute(stage: str, compute, scale: str | None = None):
    """A chapter's main result: ``compute()`` in this build, or, when ``$REPRO_RESULTS`` names a results
    folder, the result that stage ``stage`` of ``python -m attention_paths reproduce`` stored there.

    Prints where the result comes from (the figures of the chapter are drawn from it).  A stored result
    must have been made at the chapter's scale and by this version of the code (same :func:`code_version`);
    otherwise this raises rather than show figures of other code or another scale.
    """
    import pickle

    from .config import get_scale
    from .pipeline import code_version

    folder = results_dir()
    if folder is None:
        print("Results: computed in this build.")
        return compute()
    record = load_stage_result(stage, folder)
    if record is None:
        raise FileNotFoundError(f"REPRO_RESULTS={folder} has no output of stage {stage!r}; run `python -m "
                                f"attention_paths reproduce --out {folder} --only {stage}`")
    scale = get_scale(scale)
    if record["params"].get("scale") != scale:
        raise ValueError(f"REPRO_RESULTS stage {stage!r} was computed at scale {record['params'].get('scale')!r}, "
                         f"this build is at REPRO_SCALE={scale!r}; set REPRO_SCALE to match")
    files = record.get("code_files")
    if record["code_version"] != code_version(tuple(files) if isinstance(files, list) else None):
        raise ValueError(f"REPRO_RESULTS stage {stage!r} was computed by other code (code version "
                         f"{record['code_version'][:12]}, this is {code_version()[:12]}); rerun the stage with "
                         "this code or check out the commit that made it")
    with open(Path(record["folder"]) / "result.pkl", "rb") as fh:
        result = pickle.load(fh)
    print(f"Results: loaded from {_describe(record)}.")
    return result


def trained_network(scale: str | None = None, network: str | None = None):
    """``(net, record)``: the ``train`` stage's network when ``$REPRO_RESULTS`` is set, else
    :func:`attention_paths.training.trained_network` of ``network`` (default: the scale's)."""
    from .training import trained_network as _trained

    folder = results_dir()
    if folder is None:
        return _trained(network or scale)
    record = load_stage_result("train", folder)
    if record is None:
        raise FileNotFoundError(f"REPRO_RESULTS={folder} has no output of stage 'train'")
    if network is not None and record["params"].get("network") != network:
        raise ValueError(f"REPRO_RESULTS trained network is {record['params'].get('network')!r}, "
                         f"not {network!r}")
    return _network(Path(record["folder"]))
