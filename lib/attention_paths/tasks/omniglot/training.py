"""Gradient-descent training of the in-context transformer on one-shot Omniglot (spec experiments §B.6).

MSE to +-1 targets, Adam (lr 3e-4, classic L2 weight decay 5e-5), batch 128, seed 42; validation on
meta-validation episodes and out-of-distribution accuracy every ``eval_every`` steps; the best-validation
and the last checkpoint are kept (written atomically); a run resumes from its last checkpoint.  On a GPU
it uses 16-bit mixed precision and ``torch.compile``; on a CPU it uses all cores in float32.

``python -m attention_paths omniglot-train --scale {quick,paper} --out DIR`` runs :func:`train`.
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch

from attention_paths.base import config
from attention_paths.base.io import atomic_write_json
from attention_paths.base.progress import progress_bar
from attention_paths.base.provenance import hardware, provenance
from attention_paths.tasks.omniglot.checkpoints import (
    SEAL,
    _atomic_torch_save,
    _read_checkpoint,
    checkpoint_precision,
    checkpoint_sha256,
    committed_checkpoint,
    disk_full_guard,
    load_trained,
    verify_network_folder,
)
from attention_paths.tasks.omniglot.data import load_split
from attention_paths.tasks.omniglot.episodes import Episodes, evaluation_sets, sample_episodes
from attention_paths.tasks.omniglot.model import InContextTransformer
from attention_paths.tasks.omniglot.recipe import (
    PRECISIONS,
    TrainConfig,
    network_config,
    network_dir,
    network_precision,
)

__all__ = ["train", "evaluate", "format_history", "format_record", "load_network"]


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


def _autocast_dtype(precision: str, dev: torch.device):
    """The autocast dtype of a training precision (``None``: no autocast, plain float32)."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    if precision == "auto":  # the reference's fp16 mixed precision on a GPU, float32 on a CPU
        precision = "float16" if dev.type == "cuda" else "float32"
    if precision == "float16" and dev.type != "cuda":
        raise ValueError("float16 mixed precision needs a CUDA device; use precision='bfloat16' on a CPU")
    return {"float32": None, "bfloat16": torch.bfloat16, "float16": torch.float16}[precision]


def _resume_start(last: Path, resume_from) -> Path | None:
    """The checkpoint a run continues from: its own ``last.pt``, else ``resume_from`` (which must exist)."""
    start = last if last.exists() else (Path(resume_from) if resume_from is not None else None)
    if start is not None and not start.exists():
        raise FileNotFoundError(f"resume_from={start} does not exist")
    return start


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

    Long: the training loop with its resume, evaluation and checkpoint steps in one place, where a reader of the
    spec (§B.4) looks for them; its docstring is a fifth of it.
    """
    _check_count("max_steps", max_steps, "steps")
    _check_count("threads", threads, "CPU threads")
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
    start = _resume_start(last, resume_from)
    if resume and start is not None:
        step, history, best, seconds = _resume(start, cfg, dev, net, opt, rng, scaler, _precision_name(amp_dtype))
    fwd = net.forward if layerwise else net.path_forward
    model = torch.compile(fwd) if dev.type == "cuda" else fwd
    stop = cfg.steps if max_steps is None else min(cfg.steps, step + max_steps)
    bar = progress_bar(range(step, stop), desc="train", total=stop - step, disable=not progress)
    losses = []
    t0 = time.perf_counter()
    for step in bar:
        ep = sample_episodes(train_images, cfg.batch, rng, drawing_seed=cfg.drawing_seed)
        loss = _train_step(net, model, opt, scaler, ep, amp_dtype)
        if not np.isfinite(loss):
            raise FloatingPointError(
                f"training loss is {loss} at step {step + 1}: the run diverged or its weights are "
                f"damaged; nothing after step {history[-1]['step'] if history else 0} was written to {out}"
            )
        losses.append(loss)
        done = step + 1
        if done % cfg.eval_every == 0 or done == stop:
            seconds += time.perf_counter() - t0
            rec = {"step": done, "train_loss": float(np.mean(losses)), "seconds": seconds}
            rec.update({name: evaluate(net, eps) for name, eps in sets.items()})
            history.append(rec)
            losses = []
            state = _training_state(cfg, net, opt, scaler, rng, done, history, seconds)
            best = _save_checkpoints({**state, "precision": _precision_name(amp_dtype)}, rec, best, out)
            if hasattr(bar, "set_postfix"):
                bar.set_postfix(loss=f"{rec['train_loss']:.3f}", val=f"{rec['val']['accuracy']:.1f}%")
            t0 = time.perf_counter()
    summary = _summary(cfg, out, history, best, dev, layerwise, amp_dtype)
    with disk_full_guard(out):
        atomic_write_json(out / "summary.json", summary)
    return summary


def _precision_name(amp_dtype) -> str:
    """The name of the precision a run trains in (``float32``, ``bfloat16``, ``float16``), as recorded."""
    return str(amp_dtype or torch.float32).removeprefix("torch.")


_RESUME_KEYS = ("config", "model", "optimizer", "rng_state", "step", "history", "best", "seconds")


def _check_count(name: str, value, what: str) -> None:
    """``value`` must be ``None`` or a positive whole number (of ``what``)."""
    if value is not None and (isinstance(value, bool) or int(value) != value or value < 1):
        raise ValueError(f"{name} must be a positive number of {what} (or None), got {value!r}")


def _train_step(net: InContextTransformer, model, opt, scaler, ep: Episodes, amp_dtype) -> float:
    """One Adam step on the MSE of ``model`` (the network's chosen forward) on the batch ``ep``, under
    autocast when ``amp_dtype`` is set (loss-scaled for float16); returns the batch's loss."""
    net.train()
    dev = next(net.parameters()).device
    x0 = net.tokens(ep)
    y = torch.as_tensor(ep.y, device=dev)
    with torch.autocast(dev.type, dtype=amp_dtype or torch.float32, enabled=amp_dtype is not None):
        loss = torch.mean((model(x0).float() - y) ** 2)
    opt.zero_grad(set_to_none=True)
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    return float(loss.detach())


def _training_state(cfg: TrainConfig, net, opt, scaler, rng, step: int, history: list, seconds: float) -> dict:
    """What a checkpoint holds to resume the run exactly (:func:`_resume`)."""
    return {
        "config": asdict(cfg),
        "model": net.state_dict(),
        "optimizer": opt.state_dict(),
        "scaler": scaler.state_dict(),
        "rng_state": rng.bit_generator.state,
        "step": step,
        "history": history,
        "seconds": seconds,
    }


def _resume(
    start: Path, cfg: TrainConfig, dev, net, opt, rng, scaler, precision: str
) -> tuple[int, list, dict | None, float]:
    """Load an interrupted run's ``last.pt`` into the network, optimiser, data generator and loss scaler;
    returns ``(step, history, best, seconds)``.  Only the number of steps may differ from ``cfg``; the
    precision (``float32``, ``bfloat16``, ``float16``) is part of the resumable state and may not change."""
    if (start.parent / SEAL).exists():  # a committed resumable state: the pair checked against its seal first
        verify_network_folder(start.parent)
    ck = _read_checkpoint(start, dev, need=_RESUME_KEYS)
    recorded = {k: v for k, v in ck["config"].items() if k != "steps"}
    if recorded != {k: v for k, v in asdict(cfg).items() if k != "steps"}:  # a run can be extended, not changed
        raise ValueError(f"{start} was written with other settings; use another --out or delete it")
    if checkpoint_precision(ck) != precision:
        raise ValueError(
            f"{start} was trained in {checkpoint_precision(ck)} up to step {ck['step']}; resuming it in {precision} "
            f"would record a mixed run as one precision: resume with --precision {checkpoint_precision(ck)}, or "
            "use another --out"
        )
    net.load_state_dict(ck["model"])
    opt.load_state_dict(ck["optimizer"])
    rng.bit_generator.state = ck["rng_state"]
    if "scaler" in ck:
        scaler.load_state_dict(ck["scaler"])
    return ck["step"], ck["history"], ck["best"], ck["seconds"]


def _save_checkpoints(state: dict, rec: dict, best: dict | None, out: Path) -> dict:
    """Write ``last.pt`` (and ``best.pt`` when ``rec`` has the best validation accuracy so far); returns the
    best evaluation record."""
    if best is None or rec["val"]["accuracy"] > best["val"]["accuracy"]:
        best = rec
        # last.pt first: a full disk while writing best.pt then leaves the resumable state of this step
        _atomic_torch_save({**state, "best": best}, out / "last.pt")
        _atomic_torch_save({**state, "best": best}, out / "best.pt")
        return best
    _atomic_torch_save({**state, "best": best}, out / "last.pt")
    return best


def _summary(cfg: TrainConfig, out: Path, history: list, best, dev, layerwise: bool, amp_dtype) -> dict:
    """A run's summary: settings, history, final and best evaluations, throughput, hardware, checksums."""
    last = out / "last.pt"
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
        "precision": _precision_name(amp_dtype),
        "episodes_per_second": (final["step"] * cfg.batch / final["seconds"]) if final and final["seconds"] else None,
        "checkpoint_sha256": {p.name: checkpoint_sha256(p) for p in (last, out / "best.pt") if p.exists()},
        "provenance": provenance(),
    }
    return summary


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
            "source": f"committed checkpoint data/{path.parent.name}/model.pt",
            "sha256": record["exported"]["sha256"],
        }
    committed = network_dir(name, data_dir)
    if not train_if_missing:
        raise FileNotFoundError(f"no committed checkpoint under {committed}")
    run_dir = config.data_root() / "attention-paths-cache" / f"omniglot-train-{name}"
    summary = train(cfg, run_dir, progress=progress, precision=network_precision(name))
    net, _ = load_trained(run_dir / "last.pt")
    return net, {
        **summary,
        "source": f"trained in this build ({run_dir})",
        "sha256": checkpoint_sha256(run_dir / "last.pt"),
    }
