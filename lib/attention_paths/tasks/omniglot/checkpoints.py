"""Checkpoint files of the in-context transformer: written atomically with a digest of their weights, read back
verified, exported without optimiser state, and the committed networks ``data/omniglot-<name>/`` looked up."""

from __future__ import annotations

import hashlib
import json
import warnings
from pathlib import Path

import torch

from attention_paths.base import config
from attention_paths.base.io import atomic_write, atomic_write_json
from attention_paths.base.provenance import hardware
from attention_paths.tasks.omniglot.model import InContextTransformer
from attention_paths.tasks.omniglot.recipe import BF16_SUFFIX, TrainConfig, network_config, network_precision

__all__ = ["load_trained", "checkpoint_sha256", "export_checkpoint", "committed_checkpoint", "resume_state"]


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
    """Write a checkpoint atomically, with the digest of its weights inside (checked by :func:`_read_checkpoint`)."""
    obj = {**obj, "digest": _state_digest(obj)}
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
    ``dest_dir`` (e.g. ``data/omniglot-quick``), recording the exported file's SHA-256 in ``record.json``."""
    run_dir, dest_dir = Path(run_dir), Path(dest_dir)
    ck = _read_checkpoint(run_dir / "last.pt", "cpu")
    summary = json.loads((run_dir / "summary.json").read_text())
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
    return record


def committed_checkpoint(name: str, data_dir=None) -> tuple[Path, dict] | None:
    """``(model.pt path, record)`` of the committed checkpoint ``data/omniglot-<name>``, or ``None`` when there
    is none; a file whose SHA-256 differs from its record raises ``ValueError``."""
    folder = Path(data_dir or config.repo_data_dir()) / f"omniglot-{name}"
    if not (folder / "model.pt").exists():
        return None
    record = json.loads((folder / "record.json").read_text())
    if checkpoint_sha256(folder / "model.pt") != record["exported"]["sha256"]:
        raise ValueError(f"{folder / 'model.pt'} does not match the SHA-256 in its record.json")
    try:
        recorded = TrainConfig(**record["config"])
    except (KeyError, TypeError, ValueError) as err:
        raise ValueError(f"{folder / 'record.json'} holds no valid training configuration ({err})") from None
    if recorded != network_config(name):
        raise ValueError(
            f"{folder} is named network {name!r}, but its record.json was trained with another configuration "
            f"({recorded}); put each network in its own folder data/omniglot-<name>"
        )
    bf16 = network_precision(name) == "bfloat16"
    if bf16 != (record.get("precision") == "bfloat16"):
        raise ValueError(
            f"{folder} is named network {name!r}, but its record.json says it was trained in "
            f"{record.get('precision', 'float32')}; the name of a network trained in bfloat16, and only of one, ends "
            f"in {BF16_SUFFIX!r}"
        )
    return folder / "model.pt", record


def resume_state(name: str, data_dir=None) -> Path | None:
    """The committed resumable state ``data/omniglot-<name>/resume.pt`` of a network whose training did not
    finish within one session (a ``last.pt`` with optimiser state), or ``None``."""
    network_config(name)
    path = Path(data_dir or config.repo_data_dir()) / f"omniglot-{name}" / "resume.pt"
    return path if path.exists() else None
