"""Gradient-descent training of the in-context transformer on one-shot Omniglot (spec experiments §B.6).

MSE to +-1 targets, Adam (lr 3e-4, classic L2 weight decay 5e-5), batch 128, seed 42; validation on
meta-validation episodes and out-of-distribution accuracy every ``eval_every`` steps; the best-validation
and the last checkpoint are kept (written atomically); a run resumes from its last checkpoint.  On a GPU
it uses 16-bit mixed precision and ``torch.compile``; on a CPU it uses all cores in float32.

``python -m attention_paths omniglot-train --scale {quick,paper} --out DIR`` runs :func:`train`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
import warnings
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import torch

from attention_paths.base import config
from attention_paths.base.io import atomic_write, atomic_write_json
from attention_paths.base.progress import progress_bar
from attention_paths.base.provenance import hardware, provenance
from attention_paths.tasks.omniglot.data import load_split
from attention_paths.tasks.omniglot.episodes import Episodes, evaluation_sets, sample_episodes
from attention_paths.tasks.omniglot.model import InContextTransformer

__all__ = [
    "TrainConfig",
    "TRAIN_CONFIGS",
    "train",
    "evaluate",
    "load_trained",
    "checkpoint_sha256",
    "config_for",
    "network_config",
    "network_name",
    "format_history",
    "format_record",
    "export_checkpoint",
    "committed_checkpoint",
    "resume_state",
    "load_network",
    "PRECISIONS",
]

EPISODES_PER_EPOCH = 527_878  # binom(1028, 2)


@dataclass(frozen=True)
class TrainConfig:
    """Training settings (defaults: the paper's recipe, spec §B.6)."""

    d_model: int = 512
    n_layers: int = 2
    n_heads: int = 4
    d_qk: int = 128
    batch: int = 128
    steps: int = 10 * (EPISODES_PER_EPOCH // 128)  # 10 epochs = 41,240 steps
    lr: float = 3e-4
    weight_decay: float = 5e-5
    seed: int = 42
    eval_every: int = 1000
    val_episodes: int = 100 * 128
    test_episodes: int = 2048
    ood_episodes: int | None = None  # None: all MNIST / FashionMNIST episodes
    drawing_seed: int = 0

    def __post_init__(self):
        if min(self.d_model, self.n_layers, self.n_heads, self.d_qk, self.batch, self.steps, self.eval_every) < 1:
            raise ValueError(f"all sizes must be positive: {self}")
        if self.lr <= 0 or self.weight_decay < 0:
            raise ValueError(f"need lr > 0 and weight_decay >= 0: {self}")


TRAIN_CONFIGS = {
    "paper": TrainConfig(),
    # the full architecture, trained briefly on a CPU (lower accuracy than the paper's recipe; say so)
    "quick": TrainConfig(steps=4000, eval_every=250, val_episodes=2048, test_episodes=2048, ood_episodes=1000),
}


def _device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


@torch.no_grad()
def evaluate(net: InContextTransformer, episodes: Episodes, batch: int = 256, *, layerwise: bool = False) -> dict:
    """Accuracy (%; an output of exactly 0 counts as -1) and MSE of ``net`` on ``episodes``.

    The outputs come from the path-factorised forward (:meth:`InContextTransformer.path_forward`, the same
    function as the layer-wise one to float rounding, several times faster); ``layerwise=True`` uses the
    layer-wise :meth:`~InContextTransformer.forward` instead.
    """
    net.eval()
    fwd = net.forward if layerwise else net.path_forward
    dev = next(net.parameters()).device
    outs = []
    for i in range(0, len(episodes), batch):
        sl = slice(i, i + batch)
        x0 = net.tokens((episodes.images[sl], episodes.labels[sl])).to(dev)
        outs.append(fwd(x0).float().cpu())
    f = torch.cat(outs).numpy()
    y = episodes.y
    return {
        "accuracy": 100.0 * float(np.mean(np.where(f > 0, 1.0, -1.0) == y)),
        "mse": float(np.mean((f - y) ** 2)),
        "n": int(len(y)),
    }


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


PRECISIONS = ("auto", "float32", "bfloat16", "float16")


def _autocast_dtype(precision: str, dev: torch.device):
    """The autocast dtype of a training precision (``None``: no autocast, plain float32)."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    if precision == "auto":  # the reference's fp16 mixed precision on a GPU, float32 on a CPU
        precision = "float16" if dev.type == "cuda" else "float32"
    if precision == "float16" and dev.type != "cuda":
        raise ValueError("float16 mixed precision needs a CUDA device; use precision='bfloat16' on a CPU")
    return {"float32": None, "bfloat16": torch.bfloat16, "float16": torch.float16}[precision]


def train(
    cfg: TrainConfig,
    out,
    *,
    root=None,
    progress: bool = True,
    resume: bool = True,
    max_steps: int | None = None,
    precision: str = "auto",
    layerwise: bool = False,
    threads: int | None = None,
    resume_from=None,
) -> dict:
    """Train (or resume) and evaluate; writes ``out/last.pt``, ``out/best.pt`` and ``out/summary.json``.

    The steps use the path-factorised forward (:meth:`InContextTransformer.path_forward`; the same function,
    parameters and gradients as the layer-wise forward, about 8x faster on a CPU); ``layerwise=True`` trains
    through the layer-wise reference instead.  ``precision``: ``auto`` (16-bit mixed precision with loss
    scaling on a GPU, as the reference; float32 on a CPU), ``float32``, ``bfloat16`` (autocast, CPU or GPU)
    or ``float16`` (GPU).  ``max_steps`` stops this call early (the run can be resumed later); the summary
    then says so.  ``threads``: CPU threads of torch (default: every core; one leaves a core free for other
    work and is then the faster per core, as two runs sharing two cores slow each other down).
    ``resume_from``: a ``last.pt`` of an interrupted run of the same settings (e.g. a committed
    ``data/omniglot-<name>/resume.pt``) to continue from when ``out`` holds none yet.
    Returns the summary: settings, per-evaluation history (step, train loss, validation/test/OOD
    accuracies, elapsed time), the final and best-validation accuracies, throughput and hardware.
    """
    if max_steps is not None and (isinstance(max_steps, bool) or int(max_steps) != max_steps or max_steps < 1):
        raise ValueError(f"max_steps must be a positive number of steps (or None), got {max_steps!r}")
    if threads is not None and (isinstance(threads, bool) or int(threads) != threads or threads < 1):
        raise ValueError(f"threads must be a positive number of CPU threads (or None), got {threads!r}")
    out = Path(out)
    dev = _device()
    torch.manual_seed(cfg.seed)
    if dev.type == "cpu":
        torch.set_num_threads(threads or os.cpu_count() or 1)
    train_images = load_split("train", root).images
    sets = evaluation_sets(cfg, root)
    net = InContextTransformer(cfg.d_model, cfg.n_layers, cfg.n_heads, cfg.d_qk, cfg.seed).to(dev)
    opt = torch.optim.Adam(net.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    rng = np.random.default_rng(cfg.seed)
    amp_dtype = _autocast_dtype(precision, dev)
    scaler = torch.amp.GradScaler("cuda", enabled=amp_dtype == torch.float16)  # loss scaling for fp16 only
    step, history, best, seconds = 0, [], None, 0.0
    last = out / "last.pt"
    start = last if last.exists() else (Path(resume_from) if resume_from is not None else None)
    if start is not None and not start.exists():
        raise FileNotFoundError(f"resume_from={start} does not exist")
    if resume and start is not None:
        ck = _read_checkpoint(
            start, dev, need=("config", "model", "optimizer", "rng_state", "step", "history", "best", "seconds")
        )
        same = {k: v for k, v in ck["config"].items() if k != "steps"} == {
            k: v for k, v in asdict(cfg).items() if k != "steps"
        }
        if not same:  # only the number of steps may change: a run can be extended
            raise ValueError(f"{start} was written with other settings; use another --out or delete it")
        ck["config"] = asdict(cfg)
        net.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optimizer"])
        rng.bit_generator.state = ck["rng_state"]
        if "scaler" in ck:
            scaler.load_state_dict(ck["scaler"])
        step, history, best, seconds = ck["step"], ck["history"], ck["best"], ck["seconds"]
    fwd = net.forward if layerwise else net.path_forward
    model = torch.compile(fwd) if dev.type == "cuda" else fwd
    stop = cfg.steps if max_steps is None else min(cfg.steps, step + max_steps)
    bar = progress_bar(range(step, stop), desc="train", total=stop - step, disable=not progress)
    losses = []
    t0 = time.perf_counter()
    for step in bar:
        net.train()
        ep = sample_episodes(train_images, cfg.batch, rng, drawing_seed=cfg.drawing_seed)
        x0 = net.tokens(ep)
        y = torch.as_tensor(ep.y, device=dev)
        with torch.autocast(dev.type, dtype=amp_dtype or torch.float32, enabled=amp_dtype is not None):
            loss = torch.mean((model(x0).float() - y) ** 2)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        if not torch.isfinite(loss.detach()):
            raise FloatingPointError(
                f"training loss is {float(loss.detach())} at step {step + 1}: the run diverged or its weights are "
                f"damaged; nothing after step {history[-1]['step'] if history else 0} was written to {out}"
            )
        losses.append(float(loss.detach()))
        done = step + 1
        if done % cfg.eval_every == 0 or done == stop:
            seconds += time.perf_counter() - t0
            rec = {"step": done, "train_loss": float(np.mean(losses)), "seconds": seconds}
            for name, eps in sets.items():
                rec[name] = evaluate(net, eps)
            history.append(rec)
            losses = []
            state = {
                "config": asdict(cfg),
                "model": net.state_dict(),
                "optimizer": opt.state_dict(),
                "scaler": scaler.state_dict(),
                "rng_state": rng.bit_generator.state,
                "step": done,
                "history": history,
                "seconds": seconds,
            }
            if best is None or rec["val"]["accuracy"] > best["val"]["accuracy"]:
                best = rec
                _atomic_torch_save({**state, "best": best}, out / "best.pt")
            _atomic_torch_save({**state, "best": best}, last)
            if hasattr(bar, "set_postfix"):
                bar.set_postfix(loss=f"{rec['train_loss']:.3f}", val=f"{rec['val']['accuracy']:.1f}%")
            t0 = time.perf_counter()
    final = history[-1] if history else None
    summary = {
        "experiment": "omniglot-train",
        "config": asdict(cfg),
        "steps_done": final["step"] if final else 0,
        "finished": bool(final and final["step"] >= cfg.steps),
        "history": history,
        "final": final,
        "best_validation": best,
        "device": str(dev),
        "device_name": torch.cuda.get_device_name(0) if dev.type == "cuda" else os.uname().machine,
        "threads": torch.get_num_threads(),
        "hardware": hardware(),
        "forward": "layer-wise" if layerwise else "path-factorised",
        "precision": str(amp_dtype or torch.float32).removeprefix("torch."),
        "episodes_per_second": (final["step"] * cfg.batch / final["seconds"]) if final and final["seconds"] else None,
        "checkpoint_sha256": {p.name: checkpoint_sha256(p) for p in (last, out / "best.pt") if p.exists()},
        "provenance": provenance(),
    }
    atomic_write_json(out / "summary.json", summary)
    return summary


def config_for(scale: str | None = None, **overrides) -> TrainConfig:
    """The training configuration of a scale or of a network name (:func:`network_config`), with optional
    field overrides."""
    if scale is not None and scale not in TRAIN_CONFIGS:
        return replace(network_config(scale), **overrides)
    return replace(TRAIN_CONFIGS[config.get_scale(scale)], **overrides)


_SEEDED = re.compile(r"paper-seed(\d+)")


def network_config(name: str) -> TrainConfig:
    """The training configuration of a trained network's name.

    ``"quick"`` (4,000 steps) and ``"paper"`` (the paper's recipe, seed 42) are the book's two networks;
    ``"paper-seed<k>"`` is the paper's recipe with training seed ``k`` (initial weights, label-embedding
    table and data order), a member of the ensemble of :mod:`attention_paths.tasks.omniglot.ensemble`.
    Its committed files live in ``data/omniglot-<name>/``.
    """
    if not isinstance(name, str):
        raise TypeError(f"a network name is a string such as 'paper' or 'paper-seed1', got {name!r}")
    if name in TRAIN_CONFIGS:
        return TRAIN_CONFIGS[name]
    m = _SEEDED.fullmatch(name)
    if m is None:
        raise ValueError(f"unknown network {name!r}; networks are 'quick', 'paper' and 'paper-seed<k>' (k an integer)")
    seed = int(m.group(1))
    if seed == TRAIN_CONFIGS["paper"].seed or m.group(1) != str(seed):
        raise ValueError(
            f"network {name!r}: seed {TRAIN_CONFIGS['paper'].seed} is the network named 'paper', and a seed "
            "is written without leading zeros"
        )
    return replace(TRAIN_CONFIGS["paper"], seed=seed)


def network_name(cfg: TrainConfig) -> str:
    """The name of the network a configuration trains (inverse of :func:`network_config`); a configuration
    that is neither the quick one nor the paper's recipe with some seed raises ``ValueError``."""
    if cfg == TRAIN_CONFIGS["quick"]:
        return "quick"
    if replace(cfg, seed=TRAIN_CONFIGS["paper"].seed) == TRAIN_CONFIGS["paper"]:
        return "paper" if cfg.seed == TRAIN_CONFIGS["paper"].seed else f"paper-seed{cfg.seed}"
    raise ValueError(f"configuration {cfg} is neither the quick network's nor the paper's recipe")


def format_record(record: dict) -> str:
    """Where a trained network came from, its training length, settings, hardware and checksum (text)."""
    cfg = record["config"]
    last = record["history"][-1]
    return "\n".join(
        [
            record.get("source", ""),
            f"steps {record['steps_done']} of the paper recipe's {TrainConfig().steps} "
            f"({'finished' if record['finished'] else 'stopped early'}); batch {cfg['batch']}, "
            f"d_model {cfg['d_model']}, seed {cfg['seed']}",
            f"trained on {record['device']} ({record.get('hardware', {}).get('cpu', record['device_name'])}, "
            f"{record['threads']} threads) in {last['seconds'] / 60:.0f} min, {record['episodes_per_second']:.0f} "
            f"episodes/s, {record.get('forward', 'layer-wise')} forward, {record.get('precision', 'float32')}",
            f"code {str(record['provenance']['git_commit'])[:10]}, SHA-256 {record.get('sha256', '?')[:16]}...",
        ]
    )


def format_history(summary: dict) -> str:
    """Text table of a training summary's evaluation history."""
    rows = [f"{'step':>6} {'loss':>6} {'val %':>6} {'test %':>6} {'MNIST %':>7} {'Fashion %':>9} {'min':>6}"]
    for r in summary["history"]:
        rows.append(
            f"{r['step']:6d} {r['train_loss']:6.3f} {r['val']['accuracy']:6.1f} {r['test']['accuracy']:6.1f} "
            f"{r['MNIST']['accuracy']:7.1f} {r['FashionMNIST']['accuracy']:9.1f} {r['seconds'] / 60:6.1f}"
        )
    return "\n".join(rows)


# ------------------------------------------------------------------------------------------ committed runs
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
    return folder / "model.pt", record


def resume_state(name: str, data_dir=None) -> Path | None:
    """The committed resumable state ``data/omniglot-<name>/resume.pt`` of a network whose training did not
    finish within one session (a ``last.pt`` with optimiser state), or ``None``."""
    network_config(name)
    path = Path(data_dir or config.repo_data_dir()) / f"omniglot-{name}" / "resume.pt"
    return path if path.exists() else None


def load_network(network: str | None = None, *, train_if_missing: bool = True, progress: bool = False, data_dir=None):
    """The trained network of a name (:func:`network_config`; default: the scale's own, ``$REPRO_SCALE``): the
    committed ``data/omniglot-<name>/model.pt`` when present, else a run trained (and cached, resumable)
    under ``$ATTENTION_PATHS_DATA/attention-paths-cache``.

    Returns ``(net, record)``; ``record["source"]`` says which was used.  ``data_dir`` replaces the project's
    ``data/`` folder (for tests).  A committed file whose SHA-256 differs from its record raises ``ValueError``.
    """
    name = network if network is not None else config.get_scale(None)
    cfg = network_config(name)
    committed = committed_checkpoint(name, data_dir)
    if committed is not None:
        path, record = committed
        net, ck = load_trained(path)
        if ck["config"] != record["config"]:
            raise ValueError(f"{path} was trained with other settings than its record.json says")
        return net, {
            **record,
            "source": f"committed checkpoint data/omniglot-{name}/model.pt",
            "sha256": record["exported"]["sha256"],
        }
    committed = Path(data_dir or config.repo_data_dir()) / f"omniglot-{name}"
    if not train_if_missing:
        raise FileNotFoundError(f"no committed checkpoint under {committed}")
    run_dir = config.data_root() / "attention-paths-cache" / f"omniglot-train-{name}"
    summary = train(cfg, run_dir, progress=progress)
    net, _ = load_trained(run_dir / "last.pt")
    return net, {
        **summary,
        "source": f"trained in this build ({run_dir})",
        "sha256": checkpoint_sha256(run_dir / "last.pt"),
    }
