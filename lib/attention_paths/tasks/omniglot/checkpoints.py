"""Checkpoint files of the in-context transformer: written atomically with a digest of their weights, read back
verified, exported without optimiser state, and the committed networks ``data/omniglot-<name>/`` looked up.

A committed network folder (:func:`~.recipe.network_dir`) holds ``model.pt`` + ``record.json`` (a finished
network) or ``resume.pt`` + ``resume.json`` (an unfinished training, one unit), and :data:`SEAL`
(``files.json``): the SHA-256 of every one of those files, checked by every reader of the folder
(:func:`verify_network_folder`), so that an edited record or a half resume pair is refused by name.
"""

from __future__ import annotations

import contextlib
import copy
import errno
import hashlib
import json
import math
import warnings
from dataclasses import asdict
from pathlib import Path

import torch

from attention_paths.base.io import atomic_write, atomic_write_json
from attention_paths.base.provenance import hardware
from attention_paths.tasks.omniglot.model import InContextTransformer
from attention_paths.tasks.omniglot.recipe import TrainConfig, network_config, network_dir, network_precision

__all__ = [
    "load_trained",
    "checkpoint_sha256",
    "export_checkpoint",
    "committed_checkpoint",
    "resume_state",
    "read_resume_state",
    "read_json",
    "SEAL",
    "SEALED_FILES",
    "seal_network_folder",
    "check_network_record",
    "verify_network_folder",
    "DiskFullError",
    "checkpoint_precision",
    "disk_full_guard",
]

SEAL = "files.json"  # the digest record of a committed network folder
SEALED_FILES = ("model.pt", "record.json", "resume.pt", "resume.json")
SEAL_FORMAT = 1


class DiskFullError(OSError):
    """No space was left on the disk while writing a training's files; the message names the folder."""


# torch's own words for a short write (its zip writer does not raise OSError), and the C library's
_FULL_DISK_MESSAGES = ("unexpected pos", "file write failed", "No space left on device")


@contextlib.contextmanager
def disk_full_guard(folder):
    """Turn a full disk while writing into ``folder`` (``OSError`` ENOSPC, or torch's ``RuntimeError`` of a
    short write) into :class:`DiskFullError` naming the folder; the atomic writers leave no partial file."""
    try:
        yield
    except DiskFullError:
        raise
    except (OSError, RuntimeError) as err:
        full = getattr(err, "errno", None) == errno.ENOSPC or any(m in str(err) for m in _FULL_DISK_MESSAGES)
        if not full:
            raise
        raise DiskFullError(
            errno.ENOSPC,
            f"no space left on the disk of {folder} while writing the training's files ({err}); nothing "
            "partial was left there: free some space and run the same command again (it resumes from the "
            "last checkpoint written)",
        ) from None


def read_json(path, what: str = "file") -> dict:
    """A JSON object from ``path``; unreadable, damaged or non-object content raises ``ValueError`` naming
    the file (a missing one ``FileNotFoundError``)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise FileNotFoundError(f"{what} {path} does not exist") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ValueError(f"{what} {path} is damaged (not valid JSON: {err})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{what} {path} is damaged (a JSON {type(data).__name__}, not an object)")
    return data


def _field(data: dict, path: Path, *keys):
    """``data[k0][k1]...``; a missing or mistyped field raises ``ValueError`` naming the file and field."""
    v = data
    for k in keys:
        if not isinstance(v, dict) or k not in v:
            raise ValueError(f"{path} is damaged or incomplete: it has no field {'.'.join(map(str, keys))}")
        v = v[k]
    return v


def check_network_record(record: dict, path) -> None:
    """Refuse a network record whose accuracies contradict themselves (issue 52), naming ``path`` and the field:
    every accuracy of ``accuracies``, ``accuracies_training`` and the training ``history`` finite and in
    [0, 100] %, of a positive whole number of episodes, a whole number of them correct, and a stored standard
    error the binomial one of that accuracy and count, ``sqrt(p (1 - p) / n)``."""
    entries = [(f"{group}.{s}", e) for group in ("accuracies", "accuracies_training") for s, e in
               (record.get(group) or {}).items() if isinstance(e, dict)]  # fmt: skip
    for i, h in enumerate(record.get("history") or []):
        entries += [(f"history[{i}].{s}", e) for s, e in h.items() if isinstance(e, dict) and "accuracy" in e]
    for name, e in entries:
        acc, n = e.get("accuracy"), e.get("episodes", e.get("n"))
        if not isinstance(acc, (int, float)) or isinstance(acc, bool) or not math.isfinite(acc) or not 0 <= acc <= 100:
            raise ValueError(f"{path}: {name}.accuracy = {acc!r} is not an accuracy in [0, 100] %")
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise ValueError(f"{path}: {name} has {n!r} episodes, not a positive whole number")
        if abs(acc * n / 100 - round(acc * n / 100)) > 1e-6:
            raise ValueError(f"{path}: {name}.accuracy = {acc!r} is not a whole number of {n} episodes correct")
        if "se" in e and not math.isclose(e["se"], 100 * math.sqrt(acc / 100 * (1 - acc / 100) / n), rel_tol=1e-9):
            raise ValueError(f"{path}: {name}.se = {e['se']!r} is not the binomial standard error of {acc} % of {n}")


def seal_network_folder(folder, reason: str | None = None) -> dict:
    """Write ``folder/files.json``: the SHA-256 of each of :data:`SEALED_FILES` present (``reason``: why the
    folder was sealed again, e.g. a migration, kept with the digests).  A record whose numbers contradict
    themselves is refused first (:func:`check_network_record`): a seal never blesses bad numbers.  Returns the
    seal."""
    folder = Path(folder)
    if (folder / "record.json").exists():
        check_network_record(read_json(folder / "record.json", "network record"), folder / "record.json")
    seal = {
        "format": SEAL_FORMAT,
        "files_sha256": {f: checkpoint_sha256(folder / f) for f in SEALED_FILES if (folder / f).exists()},
    }
    if reason:
        seal["reason"] = reason
    atomic_write_json(folder / SEAL, seal)
    return seal


def verify_network_folder(folder) -> dict:
    """Check a committed network folder against its seal (:data:`SEAL`): every sealed file present with its
    SHA-256, and no file of :data:`SEALED_FILES` unsealed.  Returns the seal; any problem raises
    ``ValueError`` (``FileNotFoundError`` for a sealed file that is gone) naming the file."""
    folder = Path(folder)
    if not (folder / SEAL).exists():
        raise ValueError(
            f"{folder} has no {SEAL} (the SHA-256 of its files), so damage to them cannot be detected; "
            "restore it, or seal the folder again with seal_network_folder if you trust its files"
        )
    seal = read_json(folder / SEAL, "network seal")
    fmt = seal.get("format")
    if not isinstance(fmt, int) or fmt > SEAL_FORMAT:
        raise ValueError(f"{folder / SEAL} has format {fmt!r}; this code reads format {SEAL_FORMAT}")
    sealed = _field(seal, folder / SEAL, "files_sha256")
    for f in SEALED_FILES:
        path = folder / f
        if f not in sealed:
            if path.exists():
                raise ValueError(f"{path} is not covered by {folder / SEAL}: it was added after the folder was sealed")
            continue
        if not path.exists():
            raise FileNotFoundError(f"{path} is missing: {folder / SEAL} says the folder holds it")
        if checkpoint_sha256(path) != sealed[f]:
            raise ValueError(f"{path} is damaged or was edited: its SHA-256 differs from the one in {folder / SEAL}")
    return seal


def _state_digest(ck: dict) -> str:
    """SHA-256 of a checkpoint's model weights (and optimiser state, when present), in key order."""
    h = hashlib.sha256()

    def add(obj, prefix=""):
        if isinstance(obj, torch.Tensor):
            h.update(prefix.encode())
            h.update(obj.detach().cpu().contiguous().numpy().tobytes())
        elif isinstance(obj, dict):
            for k in sorted(obj, key=str):
                add(obj[k], f"{prefix}/{k}")
        elif isinstance(obj, (list, tuple)):
            for i, v in enumerate(obj):
                add(v, f"{prefix}/{i}")
        elif isinstance(obj, (int, float, str, bool)) or obj is None:
            h.update(f"{prefix}={obj!r}".encode())

    add(ck.get("model", {}), "model")
    if "optimizer" in ck:
        add(ck["optimizer"], "optimizer")
    return h.hexdigest()


def _atomic_torch_save(obj, path: Path):
    """Write a checkpoint atomically, with the digest of its weights inside (checked by :func:`_read_checkpoint`);
    a full disk raises :class:`DiskFullError` naming the folder, with no partial file left."""
    obj = {**obj, "digest": _state_digest(obj)}
    with disk_full_guard(Path(path).parent):
        atomic_write(Path(path), lambda fh: torch.save(obj, fh))


def _read_checkpoint(path: Path, device, need=("config", "model"), verify: bool = True) -> dict:
    """A checkpoint written by this module, verified: readable, with the keys ``need``, and matching the digest
    of its weights it carries.  Anything else raises ``ValueError`` naming the file.  A checkpoint without a
    digest (written before digests existed) is refused unless ``verify=False``, which loads it with a
    warning."""
    try:
        ck = torch.load(path, map_location=device, weights_only=False)
    except FileNotFoundError:
        raise
    except Exception as err:
        raise ValueError(
            f"checkpoint {path} is corrupted or not a training checkpoint ({err!r}); delete it to "
            "start again, or restore it"
        ) from None
    if not isinstance(ck, dict):
        raise ValueError(f"checkpoint {path} is not a training checkpoint (a {type(ck).__name__}, not a dict)")
    missing = [k for k in need if k not in ck]
    if missing:
        raise ValueError(f"checkpoint {path} is incomplete: it lacks {missing}")
    if "digest" not in ck:
        if verify:
            raise ValueError(
                f"checkpoint {path} carries no digest of its weights, so damage to it cannot be detected; "
                "re-export it, or load it with verify=False if you trust the file"
            )
        warnings.warn(f"loading {path} without verifying its weights (it carries no digest)", stacklevel=3)
    elif _state_digest(ck) != ck["digest"]:
        raise ValueError(f"checkpoint {path} is damaged: its weights do not match the digest it was written with")
    return ck


def checkpoint_sha256(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def load_trained(path, device: str | torch.device = "cpu", *, verify: bool = True) -> tuple[InContextTransformer, dict]:
    """Network and record of a checkpoint written by :func:`train` (``last.pt``, ``best.pt``) or exported;
    its weights are checked against the digest it carries (``verify=False``: also accept one without a
    digest, with a warning)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"checkpoint {path} does not exist")
    ck = _read_checkpoint(path, device, verify=verify)
    try:
        cfg = TrainConfig(**ck["config"])
        net = InContextTransformer(cfg.d_model, cfg.n_layers, cfg.n_heads, cfg.d_qk, cfg.seed)
        net.load_state_dict(ck["model"])
    except FileNotFoundError:
        raise
    except Exception as err:
        raise ValueError(f"checkpoint {path} is corrupted or not a training checkpoint ({err!r})") from None
    net.to(device).eval()
    return net, {k: v for k, v in ck.items() if k not in ("model", "optimizer")}


def export_checkpoint(run_dir, dest_dir) -> dict:
    """Copy a finished run's **last** checkpoint without optimizer state (``model.pt``) and its summary into
    ``dest_dir`` (e.g. ``data/omniglot-quick``), recording the exported file's SHA-256 in ``record.json``,
    and seal the folder (:func:`seal_network_folder`)."""
    run_dir, dest_dir = Path(run_dir), Path(dest_dir)
    ck = _read_checkpoint(run_dir / "last.pt", "cpu")
    summary = read_json(run_dir / "summary.json", "training summary")
    _atomic_torch_save(
        {k: v for k, v in ck.items() if k not in ("optimizer", "rng_state", "scaler", "digest")}, dest_dir / "model.pt"
    )
    record = dict(summary)
    if "hardware" not in record:  # runs from before the field: the export runs where the run was trained
        record["hardware"] = dict(hardware(), note="recorded when the checkpoint was exported")
    final = (summary.get("history") or [{}])[-1]
    record["accuracies"] = {
        s: {"accuracy": final[s]["accuracy"], "episodes": final[s]["n"]}
        for s in ("val", "test", "MNIST", "FashionMNIST")
        if s in final
    }
    record["exported"] = {
        "file": "model.pt",
        "sha256": checkpoint_sha256(dest_dir / "model.pt"),
        "from": "last checkpoint (spec OP-E5: the last checkpoint feeds everything downstream)",
    }
    atomic_write_json(dest_dir / "record.json", record)
    seal_network_folder(dest_dir)
    return record


def committed_checkpoint(name: str, data_dir=None) -> tuple[Path, dict] | None:
    """``(model.pt path, record)`` of the committed network ``name`` (:func:`~.recipe.network_dir`), or
    ``None`` when there is none (no ``model.pt`` and no ``record.json``).  The folder is checked against its
    seal (:func:`verify_network_folder`), the model file against the SHA-256 in its record, and the record's
    configuration and precision against the registry's; any disagreement raises ``ValueError`` naming the
    file.  Inside :func:`verified_once`, a folder verified before whose files have kept their size,
    modification time and inode since is not hashed again."""
    folder = network_dir(name, data_dir)
    model, rec_path = folder / "model.pt", folder / "record.json"
    if not model.exists() and not rec_path.exists():
        return None
    if not (model.exists() and rec_path.exists()):
        half = [p.name for p in (model, rec_path) if not p.exists()]
        raise ValueError(f"{folder} holds network {name!r} only in part: {' and '.join(half)} missing")
    if _VERIFIED is None:
        return model, _verified_record(name, folder, model, rec_path)
    key, state = (str(folder.resolve()), name), _folder_state(folder)
    hit = _VERIFIED.get(key)
    if hit is not None and hit[0] == state:
        return model, copy.deepcopy(hit[1])
    record = _verified_record(name, folder, model, rec_path)
    _VERIFIED[key] = (state, copy.deepcopy(record))
    return model, record


# committed network folders verified inside verified_once(): {(folder, name): (the files' state, record)}
_VERIFIED: dict | None = None


@contextlib.contextmanager
def verified_once():
    """Within this context a committed network folder is hashed once (:func:`committed_checkpoint`): what
    :func:`~attention_paths.runs.experiments.require_network` verified before a run is handed to the run's own
    ``load_network``, unless a file of the folder changed in between.  Outside it every call verifies anew (a
    file's modification time has the clock's coarse resolution, too coarse to see every edit)."""
    global _VERIFIED
    outer = _VERIFIED is not None
    if not outer:
        _VERIFIED = {}
    try:
        yield
    finally:
        if not outer:
            _VERIFIED = None


def _folder_state(folder: Path) -> tuple:
    """Name, size, modification time and inode of every file in ``folder``: what a rewrite changes."""
    stats = [(p.name, p.stat()) for p in folder.iterdir() if p.is_file()]
    return tuple(sorted((n, st.st_size, st.st_mtime_ns, st.st_ino) for n, st in stats))


def _verified_record(name: str, folder: Path, model: Path, rec_path: Path) -> dict:
    """The record of the committed network ``name`` once its folder, model file, configuration and precision
    are checked (:func:`committed_checkpoint`)."""
    seal = verify_network_folder(folder)  # model.pt hashed once: its digest is the seal's, just checked
    record = read_json(rec_path, "network record")
    check_network_record(record, rec_path)
    if seal["files_sha256"]["model.pt"] != _field(record, rec_path, "exported", "sha256"):
        raise ValueError(f"{model} does not match the SHA-256 in its record.json")
    try:
        recorded = TrainConfig(**_field(record, rec_path, "config"))
    except (TypeError, ValueError) as err:
        raise ValueError(f"{rec_path} holds no valid training configuration ({err})") from None
    if recorded != network_config(name):
        raise ValueError(
            f"{folder} is named network {name!r}, but its record.json was trained with another configuration "
            f"({recorded}); put each network in its own folder data/omniglot-<name>"
        )
    bf16 = network_precision(name) == "bfloat16"
    if bf16 != (record.get("precision") == "bfloat16"):
        raise ValueError(
            f"{folder} is named network {name!r}, but its record.json says it was trained in "
            f"{record.get('precision', 'float32')}; the registry says {network_precision(name)} "
            "(a network trained in bfloat16 is registered with precision 'bfloat16')"
        )
    return record


# a checkpoint written before its precision was recorded: the code of then trained in float32 on a CPU
LEGACY_PRECISION = "float32"


def checkpoint_precision(ck: dict) -> str:
    """The precision a training checkpoint was written in (``float32``, ``bfloat16`` or ``float16``); one from
    before the field was recorded is float32 (:data:`LEGACY_PRECISION`)."""
    return ck.get("precision", LEGACY_PRECISION)


def read_resume_state(name: str, data_dir=None) -> dict | None:
    """The committed resumable state of network ``name`` (``resume.pt`` + ``resume.json``, one unit), or
    ``None`` when there is none: ``{"path", "steps_done", "steps", "precision", "progress"}``, where
    ``steps_done`` is the checkpoint's own step and ``progress`` the ``resume.json``.  A half pair, a pair
    that differs from its seal, a ``resume.json`` whose steps or precision disagree with ``resume.pt``, or a
    checkpoint of another network raises ``ValueError`` naming the file."""
    folder = network_dir(name, data_dir)
    pt, js = folder / "resume.pt", folder / "resume.json"
    if not pt.exists() and not js.exists():
        return None
    if not (pt.exists() and js.exists()):
        have, lack = (pt, js) if pt.exists() else (js, pt)
        raise ValueError(f"{have} has no {lack.name} beside it: a resumable state is the pair; restore {lack}")
    verify_network_folder(folder)
    progress = read_json(js, "resume record")
    ck = _read_checkpoint(pt, "cpu", need=("config", "model", "optimizer", "step"))
    cfg = network_config(name)
    if {k: v for k, v in ck["config"].items() if k != "steps"} != {
        k: v for k, v in asdict(cfg).items() if k != "steps"
    }:
        raise ValueError(f"{pt} is not a training of network {name!r} (its configuration differs)")
    for key, value in (("steps_done", ck["step"]), ("precision", checkpoint_precision(ck)), ("network", name)):
        if progress.get(key, value) != value:
            raise ValueError(f"{js} says {key} = {progress.get(key)!r}, but {pt} has {value!r}")
    return {
        "path": pt,
        "steps_done": int(ck["step"]),
        "steps": cfg.steps,
        "precision": checkpoint_precision(ck),
        "progress": progress,
    }


def resume_state(name: str, data_dir=None) -> Path | None:
    """The committed resumable state ``data/omniglot-<name>/resume.pt`` of a network whose training did not
    finish within one session (a ``last.pt`` with optimiser state), checked as :func:`read_resume_state`
    does, or ``None``."""
    state = read_resume_state(name, data_dir)
    return None if state is None else state["path"]
