"""The training recipes of the in-context transformer and the names of the trained networks (spec §B.6).

:class:`TrainConfig` holds the paper's recipe; ``"quick"``, ``"paper"`` and ``"paper-seed<k>"`` name the
networks the book trains (:func:`network_config`, :func:`network_name`).  This module imports neither torch
nor numpy, so the command line checks ``--network`` before it loads them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from attention_paths.base import config

__all__ = [
    "EPISODES_PER_EPOCH",
    "TrainConfig",
    "TRAIN_CONFIGS",
    "PRECISIONS",
    "config_for",
    "network_config",
    "network_name",
    "network_precision",
    "BF16_SUFFIX",
    "ARCHITECTURE_NETWORKS",
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

# The reference's two further architectures of the same in-context transformer (its scripts
# train_2lay_h8_g64_n512.sh and train_3lay_h3_g170_n512.sh): the paper network's recipe with these flags changed
# (--num_layers, --num_sum_heads, --qk_dim_head; the 3 x 3 script's file name says g170, its flag 128).
ARCHITECTURE_NETWORKS = {
    "paper-2x8": replace(TRAIN_CONFIGS["paper"], n_layers=2, n_heads=8, d_qk=64),
    "paper-3x3": replace(TRAIN_CONFIGS["paper"], n_layers=3, n_heads=3, d_qk=128),
}

# training precisions (:func:`attention_paths.tasks.omniglot.training.train`)
PRECISIONS = ("auto", "float32", "bfloat16", "float16")


def config_for(scale: str | None = None, **overrides) -> TrainConfig:
    """The training configuration of a scale or of a network name (:func:`network_config`), with optional
    field overrides."""
    if scale is not None and scale not in TRAIN_CONFIGS:
        return replace(network_config(scale), **overrides)
    return replace(TRAIN_CONFIGS[config.get_scale(scale)], **overrides)


_SEEDED = re.compile(r"paper-seed(\d+)")
# a network trained with bfloat16 mixed precision carries this suffix ("paper-bf16", "paper-seed1-bf16"):
# the same recipe and seed, another precision (the precision is recorded in its record.json, not in TrainConfig)
BF16_SUFFIX = "-bf16"


def network_config(name: str) -> TrainConfig:
    """The training configuration of a trained network's name.

    ``"quick"`` (4,000 steps) and ``"paper"`` (the paper's recipe, seed 42) are the book's two networks;
    ``"paper-seed<k>"`` is the paper's recipe with training seed ``k`` (initial weights, label-embedding
    table and data order), a member of the ensemble of :mod:`attention_paths.tasks.omniglot.ensemble`;
    ``"paper-2x8"`` (2 layers x 8 heads, G = 64) and ``"paper-3x3"`` (3 layers x 3 heads, G = 128) are the
    reference's other two architectures trained with the same recipe (:data:`ARCHITECTURE_NETWORKS`).
    Any of them with the suffix ``"-bf16"`` is the same configuration trained in bfloat16 mixed precision
    (:func:`network_precision`).  Its committed files live in ``data/omniglot-<name>/``.
    """
    if not isinstance(name, str):
        raise TypeError(f"a network name is a string such as 'paper' or 'paper-seed1', got {name!r}")
    if name.endswith(BF16_SUFFIX) and not name[: -len(BF16_SUFFIX)].endswith(BF16_SUFFIX):
        return network_config(name[: -len(BF16_SUFFIX)])
    if name in TRAIN_CONFIGS:
        return TRAIN_CONFIGS[name]
    if name in ARCHITECTURE_NETWORKS:
        return ARCHITECTURE_NETWORKS[name]
    m = _SEEDED.fullmatch(name)
    if m is None:
        raise ValueError(
            f"unknown network {name!r}; networks are 'quick', 'paper', 'paper-seed<k>' (k an integer), "
            f"{', '.join(repr(n) for n in ARCHITECTURE_NETWORKS)} (other architectures), each "
            f"optionally with the suffix {BF16_SUFFIX!r} (trained in bfloat16)"
        )
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
    for name, other in ARCHITECTURE_NETWORKS.items():
        if cfg == other:
            return name
    if replace(cfg, seed=TRAIN_CONFIGS["paper"].seed) == TRAIN_CONFIGS["paper"]:
        return "paper" if cfg.seed == TRAIN_CONFIGS["paper"].seed else f"paper-seed{cfg.seed}"
    raise ValueError(f"configuration {cfg} is neither the quick network's nor the paper's recipe")


def network_precision(name: str) -> str:
    """The training precision a network's name implies (:func:`~.training.train`'s ``precision``):
    ``"bfloat16"`` for a name with the suffix ``"-bf16"``, else ``"auto"`` (float32 on a CPU)."""
    network_config(name)
    return "bfloat16" if name.endswith(BF16_SUFFIX) else "auto"
