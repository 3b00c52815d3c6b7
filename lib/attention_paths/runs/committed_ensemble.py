"""The committed ensemble of paper-recipe networks (issue 23), read for the chapters.

A member is complete when three committed results exist: ``data/omniglot-<name>/`` (the network and its
record with precise accuracies), ``data/omniglot-theory/paper-sizes-<name>-network/`` and
``data/pruning/<name>-network/``.  A member whose training is still under way has only a resumable state
``data/omniglot-<name>/resume.pt`` and its progress ``resume.json``.  Nothing here computes.

This is one of the ensemble's three modules, each in the lowest layer its imports allow (book, Architecture:
"Why the ensemble lives in three modules"): this one reads results folders (:mod:`attention_paths.runs`);
:mod:`attention_paths.tasks.omniglot.members` names the members and records their precise accuracies (in the
``train`` stage's key, so apart from the analysis); :mod:`attention_paths.tasks.ensemble` builds the typed
rows (:class:`~attention_paths.tasks.ensemble.NetworkRow`) these readers return.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from attention_paths.base import config
from attention_paths.base.io import atomic_write, atomic_write_json
from attention_paths.runs import experiments, results
from attention_paths.tasks import ensemble
from attention_paths.tasks.omniglot.checkpoints import (
    checkpoint_precision,
    committed_checkpoint,
    load_trained,
    read_resume_state,
    seal_network_folder,
)
from attention_paths.tasks.omniglot.members import ENSEMBLE_SEEDS, member_name
from attention_paths.tasks.omniglot.recipe import TRAIN_CONFIGS, network, network_config, network_dir

__all__ = [
    "ENSEMBLE_SEEDS",
    "member_folders",
    "load_records",
    "load_members",
    "load_records_of",
    "load_member",
    "CommittedMember",
    "load_committed_member",
    "load_committed_members",
    "BF16_CONTROL",
    "training_status",
    "network_status",
    "training_record",
    "save_resume_state",
    "format_status",
]


# the precision control: seed 42 (the network "paper") trained again with bfloat16 mixed precision
BF16_CONTROL = ("paper-bf16", 42)


def member_folders(name: str, data_dir=None) -> dict[str, Path]:
    """``{"network", "theory", "pruning"}``: where a member's committed results live."""
    data = Path(data_dir or config.repo_data_dir())
    return {
        "network": network_dir(name, data),
        "theory": data / "omniglot-theory" / f"paper-sizes-{name}-network",
        "pruning": data / "pruning" / f"{name}-network",
    }


def _distinct_seeds(seeds) -> tuple:
    """``seeds`` as a tuple; a repeated seed (one network counted twice) raises ``ValueError``."""
    seeds = tuple(seeds)
    dup = sorted({int(k) for k in seeds if seeds.count(k) > 1})
    if dup:
        raise ValueError(f"seeds {seeds!r} name a network more than once (seed {', '.join(map(str, dup))})")
    return seeds


def load_records(seeds=ENSEMBLE_SEEDS, data_dir=None) -> dict[int, dict]:
    """``{seed: record.json}`` of every member of ``seeds`` whose network is committed, its folder checked
    against its seal and its model file's SHA-256 against the record; a repeated seed raises ``ValueError``."""
    out = {}
    for seed in _distinct_seeds(seeds):
        name = member_name(seed)
        committed = committed_checkpoint(name, data_dir)
        if committed is not None:
            out[int(seed)] = committed[1]
    return out


def load_records_of(names, data_dir=None) -> dict[str, dict]:
    """``{name: record.json}`` of the committed networks ``names`` (e.g. the precision control; one name as a
    string is one network), each folder checked against its seal and model file against its record.  An
    unregistered name raises ``ValueError``, a registered one with no committed network
    ``FileNotFoundError``, both naming it; a repeated name raises ``ValueError``."""
    names = [names] if isinstance(names, str) else list(names)
    out = {}
    for name in names:
        network(name)  # an unknown name is an error naming it
        if name in out:
            raise ValueError(f"network {name!r} is asked for more than once in {names!r}")
        committed = committed_checkpoint(name, data_dir)
        if committed is None:
            raise FileNotFoundError(
                f"network {name!r} is not committed: {network_dir(name, data_dir)} holds no model.pt"
            )
        out[name] = committed[1]
    return out


@dataclasses.dataclass(frozen=True)
class CommittedMember:
    """A committed network read back whole: its :class:`~attention_paths.tasks.ensemble.NetworkRow`, its
    ``record.json`` and its two loaded runs (``theory``: the paper-size omniglot-theory run, ``pruning``: the
    pruning run), each read once (:func:`load_committed_member`)."""

    row: ensemble.NetworkRow
    record: dict
    theory: object
    pruning: object


def load_members(seeds=ENSEMBLE_SEEDS, data_dir=None) -> list[ensemble.NetworkRow]:
    """The rows (:func:`attention_paths.tasks.ensemble.network_row`) of every member of ``seeds`` whose three
    results are committed, in seed order; a member with some but not all of them raises ``ValueError``
    (an incomplete commit), one with none is left out (see :func:`training_status`)."""
    return [m.row for m in load_committed_members(seeds, data_dir)]


def load_committed_members(seeds=ENSEMBLE_SEEDS, data_dir=None) -> list[CommittedMember]:
    """As :func:`load_members`, each member with its record and loaded runs (:class:`CommittedMember`)."""
    members = [load_committed_member(member_name(seed), seed, data_dir) for seed in _distinct_seeds(seeds)]
    return [m for m in members if m is not None]


def load_member(name: str, seed: int | None = None, data_dir=None) -> ensemble.NetworkRow | None:
    """The row of the network ``name`` (trained with ``seed``; default: its registered seed) from its three
    committed results, ``None`` when none of them is committed; a network committed only in part, or whose
    theory or pruning run was computed on another network, raises ``ValueError``.  Members of the ensemble
    and controls (such as :data:`BF16_CONTROL`) alike; :func:`load_committed_member` returns the loaded runs
    with it."""
    member = load_committed_member(name, seed, data_dir)
    return None if member is None else member.row


def load_committed_member(name: str, seed: int | None = None, data_dir=None) -> CommittedMember | None:
    """The network ``name`` with its row, record and loaded runs (:class:`CommittedMember`), each results
    folder read once and checked as in :func:`load_member`; ``None`` when none of them is committed."""
    seed = network_config(name).seed if seed is None else seed
    f = member_folders(name, data_dir)
    have = {k: (p / ("record.json" if k == "network" else results.SUMMARY)).exists() for k, p in f.items()}
    have["network"] = have["network"] and (f["network"] / "model.pt").exists()
    if not any(have.values()):
        return None
    if not all(have.values()):
        missing = [str(f[k]) for k, ok in have.items() if not ok]
        raise ValueError(f"network {name} is committed only in part: {missing} missing")
    model, record = committed_checkpoint(name, data_dir)  # the folder checked against its seal and record
    if network_config(name).seed != seed:
        raise ValueError(f"network {name!r} was trained with seed {network_config(name).seed}, not {seed!r}")
    _, ck = load_trained(model)  # the weights' own configuration: a folder relabelled as another seed is refused
    if ck["config"] != record["config"]:
        raise ValueError(f"{model} was trained with other settings (seed {ck['config'].get('seed')}) than its record")
    theory = experiments.load_run(f["theory"], "omniglot-theory")
    prune = experiments.load_run(f["pruning"], "pruning")
    for run, what, folder in ((theory, "theory", f["theory"]), (prune, "pruning", f["pruning"])):
        sha = run.network_record.get("sha256")
        if sha != record["exported"]["sha256"]:
            raise ValueError(f"the committed {what} run of {name} was computed on another network (SHA-256 {sha})")
        if run.config.get("network") != name:
            raise ValueError(f"{folder} is a {what} run of network {run.config.get('network')!r}, not of {name!r}")
    return CommittedMember(ensemble.network_row(seed, record, theory, prune), record, theory, prune)


def save_resume_state(run_dir, name: str, data_dir=None, *, precision: str | None = None) -> Path:
    """Commit an unfinished training run's state: ``run_dir/last.pt`` (verified) as
    ``data/omniglot-<name>/resume.pt`` and its progress as ``resume.json``, the pair sealed as one unit
    (:func:`~attention_paths.tasks.omniglot.checkpoints.seal_network_folder`).  ``precision``: the run's
    (default: the one its checkpoint records; a checkpoint from before precisions were recorded is float32);
    a disagreement raises ``ValueError``.  Resume it with ``python -m attention_paths omniglot-train --network
    NAME --resume-from data/omniglot-<name>/resume.pt`` (or the ensemble's train stage, which picks it up)."""
    cfg = network_config(name)
    run_dir = Path(run_dir)
    _, ck = load_trained(run_dir / "last.pt")  # verifies the digest
    if ck["config"] != dataclasses.asdict(cfg):
        raise ValueError(f"{run_dir / 'last.pt'} is not a run of network {name}")
    recorded = checkpoint_precision(ck)
    if precision is not None and precision != recorded:
        raise ValueError(f"{run_dir / 'last.pt'} records precision {recorded}, not {precision}")
    folder = member_folders(name, data_dir)["network"]
    if (folder / "model.pt").exists():
        raise ValueError(f"{folder} already holds the finished network {name}; its resumable state is spent")
    folder.mkdir(parents=True, exist_ok=True)
    data = (run_dir / "last.pt").read_bytes()
    atomic_write(folder / "resume.pt", lambda fh: fh.write(data))
    atomic_write_json(
        folder / "resume.json",
        {
            "network": name,
            "steps_done": ck["step"],
            "steps": cfg.steps,
            "precision": recorded,
            "training_seconds": ck["seconds"],
            "last_evaluation": ck["history"][-1],
            "resume": f"python -m attention_paths omniglot-train --network {name} "
            f"--resume-from data/{folder.name}/resume.pt --out OUT",
        },
    )
    seal_network_folder(folder)
    return folder / "resume.pt"


def training_status(seeds=ENSEMBLE_SEEDS, data_dir=None) -> list[dict]:
    """One entry per seed: ``{"seed", "name", "state"}`` with state ``committed``, ``training`` (a committed
    resumable state: ``steps_done``, ``steps``) or ``not started`` (:func:`network_status`)."""
    return [{"seed": int(seed), **network_status(member_name(seed), data_dir)} for seed in seeds]


def network_status(name: str, data_dir=None) -> dict:
    """How far the committed network ``name`` has come: ``{"name", "state"}`` with state ``committed`` (with
    its theory and pruning runs), ``trained`` (without them), ``training`` (a committed resumable state:
    ``steps_done``, ``steps``, ``last_evaluation``) or ``not started``; the folder is checked against its seal."""
    folder = member_folders(name, data_dir)["network"]
    entry = {"name": name, "state": "not started"}
    if (folder / "model.pt").exists():
        committed_checkpoint(name, data_dir)  # the folder checked against its seal and record
        f = member_folders(name, data_dir)
        analysed = all((f[k] / results.SUMMARY).exists() for k in ("theory", "pruning"))
        entry["state"] = "committed" if analysed else "trained"
    else:  # the checkpoint's own step, the pair checked against its seal (a half pair is refused)
        state = read_resume_state(name, data_dir)
        if state is not None:
            entry |= {"state": "training", "steps_done": state["steps_done"], "steps": state["steps"]}
            entry["last_evaluation"] = state["progress"].get("last_evaluation")
    return entry


def training_record(name: str, data_dir=None) -> dict | None:
    """The training record of the committed network ``name`` as far as it has come: its ``record.json`` when
    finished, else ``{"history", "steps_done", "steps", "precision", "unfinished": True}`` read from its committed
    resumable state (the checkpoint's own evaluation history; the folder checked against its seal), ``None``
    when neither is committed."""
    folder = member_folders(name, data_dir)["network"]
    if (folder / "model.pt").exists():
        return committed_checkpoint(name, data_dir)[1]
    state = read_resume_state(name, data_dir)
    if state is None:
        return None
    _, ck = load_trained(state["path"])  # verifies the digest
    return {
        "history": ck["history"],
        "steps_done": state["steps_done"],
        "steps": state["steps"],
        "precision": state["precision"],
        "unfinished": True,
    }


def format_status(status: list[dict]) -> str:
    """The ensemble's members and how far each has come, as text."""
    steps = TRAIN_CONFIGS["paper"].steps
    lines = []
    for e in status:
        what = e["state"]
        if what == "training":
            what += f": {e['steps_done']:,} of {e['steps']:,} steps (resumable)"
        elif what == "committed":
            what += f": {steps:,} steps, with theory and pruning"
        elif what == "trained":
            what += f": {steps:,} steps, theory and pruning to come"
        lines.append(f"seed {e['seed']:>2} ({e['name']}): {what}" if "seed" in e else f"{e['name']}: {what}")
    return "\n".join(lines)
