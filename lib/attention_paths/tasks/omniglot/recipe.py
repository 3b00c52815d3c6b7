"""The training recipes of the in-context transformer and the names of the trained networks (spec §B.6).

:class:`TrainConfig` holds the paper's recipe; the registry :data:`NETWORKS` names the networks the book trains
(:class:`Network`: name -> configuration and precision; :func:`register_network` adds one, :func:`network_dir`
is its folder).  This module imports neither torch
nor numpy, so the command line checks ``--network`` before it loads them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from attention_paths.base import config
from attention_paths.base.fields import check_fields

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
    "Network",
    "NETWORKS",
    "network",
    "network_dir",
    "register_network",
]

EPISODES_PER_EPOCH = 527_878  # binom(1028, 2)


@dataclass(frozen=True)
class TrainConfig:
    """Training settings (defaults: the paper's recipe, spec §B.6)."""

    # each field's range, checked at construction with its type (base.fields.check_fields)
    RANGES = {
        **dict.fromkeys(("d_model", "n_layers", "n_heads", "d_qk", "batch", "steps", "eval_every"), ">= 1"),
        **dict.fromkeys(("val_episodes", "test_episodes", "ood_episodes"), ">= 1"),
        "lr": "> 0",
        "weight_decay": ">= 0",
        "seed": ">= 0",
        "drawing_seed": ">= 0",
    }

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

    @property
    def n_paths(self) -> int:
        """The number of attention paths, one head per layer: ``n_heads ** n_layers``."""
        return self.n_heads**self.n_layers

    def __post_init__(self):
        check_fields(self)


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


@dataclass(frozen=True)
class Network:
    """A named network: its training configuration (architecture, recipe, seed) and precision.

    ``precision`` is :func:`~.training.train`'s (``"auto"``: float32 on a CPU, the reference's fp16 mixed
    precision on a GPU; ``"bfloat16"``: bfloat16 mixed precision).  Its committed files live in
    :func:`network_dir` (``data/omniglot-<name>/``).
    """

    name: str
    config: TrainConfig
    precision: str = "auto"

    def __post_init__(self):
        if not isinstance(self.name, str) or not _NAME.fullmatch(self.name):
            raise ValueError(f"a network name is lower-case letters, digits and '-', got {self.name!r}")
        if not isinstance(self.config, TrainConfig):
            raise TypeError(f"network {self.name!r}: config must be a TrainConfig, got {type(self.config).__name__}")
        if self.precision not in PRECISIONS:
            raise ValueError(f"network {self.name!r}: precision must be one of {PRECISIONS}, got {self.precision!r}")


_NAME = re.compile(r"[a-z0-9][a-z0-9-]*")
NETWORKS: dict[str, Network] = {}


def register_network(name: str, cfg: TrainConfig, precision: str = "auto") -> Network:
    """Register a named network (one call: e.g. ``register_network("paper-2x8-seed1",
    replace(network_config("paper-2x8"), seed=1))``); re-registering a name with other settings, or a second
    name for the same configuration and precision, raises ``ValueError``."""
    net = Network(name, cfg, precision)
    if name in NETWORKS:
        if NETWORKS[name] != net:
            raise ValueError(f"network {name!r} is already registered with other settings: {NETWORKS[name]}")
        return net
    for other in NETWORKS.values():
        if (other.config, other.precision) == (cfg, precision):
            raise ValueError(f"network {name!r} would train the same network as {other.name!r}")
    NETWORKS[name] = net
    return net


_PAPER = TRAIN_CONFIGS["paper"]
# the book's networks: the quick one, the paper's recipe with its seed 42 and the ensemble's seeds 1-4
# (issue 23), seed 42 again in bfloat16 (the precision control), and the reference's other architectures
for _name, _cfg, _precision in (
    ("quick", TRAIN_CONFIGS["quick"], "auto"),
    ("paper", _PAPER, "auto"),
    *((f"paper-seed{k}", replace(_PAPER, seed=k), "auto") for k in (1, 2, 3, 4)),
    ("paper-bf16", _PAPER, "bfloat16"),
    *((n, c, "auto") for n, c in ARCHITECTURE_NETWORKS.items()),
):
    register_network(_name, _cfg, _precision)

# kept for callers of the suffix convention; a network's precision is its registry entry's field
BF16_SUFFIX = "-bf16"


def network(name: str) -> Network:
    """The registered network ``name``; an unknown name raises ``ValueError`` listing the registered ones."""
    if not isinstance(name, str):
        raise TypeError(f"a network name is a string such as 'paper' or 'paper-seed1', got {name!r}")
    if name not in NETWORKS:
        paper = [
            f"seed {n.config.seed} is the network named {n.name!r}"
            for n in NETWORKS.values()
            if n.precision == "auto" and replace(n.config, seed=_PAPER.seed) == _PAPER
        ]
        raise ValueError(
            f"unknown network {name!r}; the registered networks are {', '.join(map(repr, NETWORKS))} "
            f"(the paper's recipe: {'; '.join(paper)}); register another with "
            "attention_paths.tasks.omniglot.recipe.register_network"
        )
    return NETWORKS[name]


def network_config(name: str) -> TrainConfig:
    """The training configuration of a registered network (:data:`NETWORKS`).

    ``"quick"`` (4,000 steps) and ``"paper"`` (the paper's recipe, seed 42) are the book's two networks;
    ``"paper-seed<k>"`` (k = 1..4) is the paper's recipe with training seed ``k`` (initial weights,
    label-embedding table and data order), a member of the ensemble of
    :mod:`attention_paths.tasks.omniglot.members`; ``"paper-bf16"`` is ``"paper"`` trained in bfloat16
    mixed precision; ``"paper-2x8"`` (2 layers x 8 heads, G = 64) and ``"paper-3x3"`` (3 layers x 3 heads,
    G = 128) are the reference's other two architectures trained with the same recipe.  The seed is the
    configuration's field, never read from the name.  Committed files live in :func:`network_dir`.
    """
    return network(name).config


def network_name(cfg: TrainConfig, precision: str = "auto") -> str:
    """The name of the registered network a configuration (and precision) trains (inverse of
    :func:`network_config`); a configuration that no registered network has raises ``ValueError``."""
    for net in NETWORKS.values():
        if (net.config, net.precision) == (cfg, precision):
            return net.name
    raise ValueError(f"configuration {cfg} (precision {precision}) is no registered network's")


def network_precision(name: str) -> str:
    """The training precision of a registered network (:func:`~.training.train`'s ``precision``):
    ``"bfloat16"`` for ``"paper-bf16"``, ``"auto"`` (float32 on a CPU) for the others."""
    return network(name).precision


def network_dir(name: str, data_dir=None) -> Path:
    """The folder of a registered network's committed files, ``<data_dir>/omniglot-<name>`` (default: the
    project's ``data/``): ``model.pt`` + ``record.json``, or an unfinished training's ``resume.pt`` +
    ``resume.json``, sealed by ``files.json``.  The one place this folder's name is spelled."""
    network(name)
    return Path(data_dir or config.repo_data_dir()) / f"omniglot-{name}"
