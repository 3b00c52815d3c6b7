"""What the theory takes from the trained one-shot Omniglot transformer (spec §B.7-B.8): the path features,
targets and network outputs of a balanced training set and of the evaluation sets (:func:`extract`,
:class:`OneShotData`), saved and reloaded, and the gradient-descent order parameter."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from attention_paths.base.io import atomic_savez, load_npz
from attention_paths.base.progress import progress_bar
from attention_paths.tasks.omniglot.data import load_ood, load_split
from attention_paths.tasks.omniglot.episodes import Episodes, fixed_episodes, ood_episodes, sample_episodes
from attention_paths.tasks.omniglot.recipe import TrainConfig
from attention_paths.theory.checks import check_heads
from attention_paths.theory.paths import path_features, path_inputs

__all__ = [
    "SET_TITLES",
    "EVAL_SETS",
    "LEGACY_HEADS",
    "OneShotData",
    "balanced_indices",
    "extract",
    "training_episodes",
    "gd_order_parameter",
    "save_oneshot_data",
    "load_oneshot_data",
]


# The heads per layer of every extraction and committed run written before the extraction recorded its
# network's architecture: all of them come from networks of the paper's 2 layers x 4 heads.  Reloaded data
# without the field gets these; new extractions carry their network's own (OneShotData.heads).
LEGACY_HEADS = (4, 4)
HEADS = LEGACY_HEADS  # the old name of LEGACY_HEADS; the analysis reads OneShotData.heads
EVAL_SETS = ("val", "test", "MNIST", "FashionMNIST")


SET_TITLES = {
    "val": "Omniglot meta-validation",
    "test": "Omniglot meta-test (in distribution)",
    "MNIST": "MNIST 0 vs 1 (out of distribution)",
    "FashionMNIST": "FashionMNIST T-shirt vs trouser (OOD)",
}


@dataclass
class OneShotData:
    """Theory inputs extracted from a trained network.

    features : {set: [n, 192, Pi] path features} for ``"train"`` and the evaluation sets
    y : {set: [n] targets +-1}; every set is balanced and stored as its +1 block, then its -1 block
    network_output : {set: [n] output of the trained network (float64) on the same episodes}
    U_gd : [Pi, Pi] gradient-descent order parameter (:func:`gd_order_parameter`)
    info : sizes, seeds, episode counts and the network's record

    heads : heads per layer of the network the data were extracted from (``Pi = prod(heads)`` paths, flattened
        first layer slowest); every analysis reads the architecture from here.  Data saved before it was
        recorded reload with :data:`LEGACY_HEADS` (the paper's 2 x 4)
    """

    features: dict
    y: dict
    network_output: dict
    U_gd: np.ndarray
    info: dict = field(default_factory=dict)
    heads: tuple = LEGACY_HEADS

    def __post_init__(self):
        self.heads = check_heads(self.heads)
        n_paths = int(np.prod(self.heads))
        bad = {s: np.shape(X) for s, X in self.features.items() if np.ndim(X) != 3 or np.shape(X)[-1] != n_paths}
        if bad or np.shape(self.U_gd) != (n_paths, n_paths):
            raise ValueError(
                f"one-shot data of a network with heads per layer {self.heads} need {n_paths} paths: features of "
                f"shape [n, N0, {n_paths}] and U_gd of shape ({n_paths}, {n_paths}); got features {bad or 'right'} "
                f"and U_gd {np.shape(self.U_gd)}"
            )

    @property
    def n_paths(self) -> int:
        """The number of attention paths, ``prod(heads)``."""
        return int(np.prod(self.heads))

    def network_accuracy(self, name: str) -> float:
        """Accuracy (%) of the trained network on set ``name`` (an output of exactly 0 counts as -1)."""
        return 100.0 * float(np.mean(np.where(self.network_output[name] > 0, 1.0, -1.0) == self.y[name]))


def save_oneshot_data(data: OneShotData, path) -> Path:
    """Write an extraction to one ``.npz`` file, atomically (reload with :func:`load_oneshot_data`)."""
    arrays = {
        "U_gd": data.U_gd,
        "info_json": np.array(json.dumps(data.info, default=str)),
        "heads": np.array(data.heads, dtype=np.int64),
    }
    for field_name in ("features", "y", "network_output"):
        for k, v in getattr(data, field_name).items():
            arrays[f"{field_name}/{k}"] = v
    return atomic_savez(path, **arrays)


def load_oneshot_data(path) -> OneShotData:
    """An extraction written by :func:`save_oneshot_data`; a damaged or foreign file raises ``ValueError``.

    A file written before extractions recorded their network's heads reloads with :data:`LEGACY_HEADS`."""
    arrays = load_npz(path)
    try:
        parts = {
            f: {k.split("/", 1)[1]: v for k, v in arrays.items() if k.startswith(f + "/")}
            for f in ("features", "y", "network_output")
        }
        heads = tuple(int(h) for h in arrays["heads"]) if "heads" in arrays else LEGACY_HEADS
        data = OneShotData(
            parts["features"],
            parts["y"],
            parts["network_output"],
            arrays["U_gd"],
            json.loads(str(arrays["info_json"])),
            heads,
        )
    except (KeyError, json.JSONDecodeError) as err:
        raise ValueError(f"{path} is not a saved one-shot extraction ({err})") from None
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from None
    missing = [s for s in ("train",) + EVAL_SETS if s not in data.features or s not in data.y]
    if missing:
        raise ValueError(f"{path} lacks the set(s) {missing}")
    return data


def balanced_indices(y, n_per_label: int) -> np.ndarray:
    """Positions of the first ``n_per_label`` targets equal to +1, then of the first ``n_per_label`` equal to -1.

    Raises ``ValueError`` when a label has fewer (spec OP-E7: the pool must hold enough of each label).
    """
    y = np.asarray(y)
    pos, neg = np.flatnonzero(y > 0), np.flatnonzero(y < 0)
    if min(len(pos), len(neg)) < n_per_label:
        raise ValueError(
            f"need {n_per_label} episodes per label, the pool has {len(pos)} (+1) and {len(neg)} (-1); "
            "draw a larger pool"
        )
    return np.concatenate([pos[:n_per_label], neg[:n_per_label]])


def gd_order_parameter(net) -> np.ndarray:
    """Gram matrix of the trained path weights ``w^pi = a^T V^(2,h2) V^(1,h1)`` (spec §B.10-3), [Pi, Pi].

    No width normalisation and without the ``1/sqrt(H^L)`` head-sum factor: only its pattern is
    comparable with the theory's ``U`` (spec OP-T7).
    """
    w = net.path_weights() * float(np.sqrt(np.prod([net.n_heads] * net.n_layers)))
    return (w @ w.T).numpy()


@torch.no_grad()
def _features_and_outputs(net, episodes, batch: int = 256) -> tuple[np.ndarray, np.ndarray]:
    layers = net.theory_layers()
    r = np.full(net.positions.shape[0], 1.0 / net.positions.shape[0])
    feats, outs = [], []
    for i in range(0, len(episodes), batch):
        x0 = net.tokens((episodes.images[i : i + batch], episodes.labels[i : i + batch]))  # float64 [B, 48, 192]
        feats.append(path_features(path_inputs(x0.transpose(1, 2), layers, r)))
        outs.append(net(x0).numpy())
    return np.concatenate(feats), np.concatenate(outs)


def extract(net, cfg: dict, root=None, record: dict | None = None, progress: bool = False) -> OneShotData:
    """Path features, targets and network outputs of the training and evaluation sets (spec §B.7-B.8).

    * training: the first ``train_batches`` x 128 training episodes, re-drawn from the training seed (so they
      repeat the network's first training batches, spec §F-16); the first ``P/2`` of each label;
    * ``val`` / ``test``: a pool of ``eval_pool`` seeded episodes of the meta-validation / meta-test
      characters (the training run's own evaluation seeds), the first ``n_eval/2`` of each label;
    * ``MNIST`` / ``FashionMNIST``: class-0 episodes ``0 .. n_eval/2 - 1`` and class-1 episodes
      ``n0 .. n0 + n_eval/2 - 1`` (spec §B.8).

    The network is copied to float64; ``x0`` and the attention are recomputed in float64 (spec §F-20).
    """
    tcfg = _train_config(record)
    if cfg["P"] % 2 or cfg["n_eval"] % 2:
        raise ValueError(f"P and n_eval must be even (balanced sets), got {cfg['P']} and {cfg['n_eval']}")
    net64 = copy.deepcopy(net).double().eval()
    net64.set_pruned(())
    train, n_pool = _training_set(tcfg, cfg, root)
    sets = {"train": train}
    half = cfg["n_eval"] // 2
    for name, split, seed in (("val", "val", 1000 + tcfg.seed), ("test", "test", 2000 + tcfg.seed)):
        eps = fixed_episodes(load_split(split, root).images, cfg["eval_pool"], seed, tcfg.drawing_seed)
        sets[name] = eps.subset(balanced_indices(eps.y, half))
    ood_counts = {}
    for name in ("MNIST", "FashionMNIST"):
        ood = load_ood(name, root)
        n0 = int((ood["test_labels"] == 0).sum())
        ood_counts[name] = {"class0": n0, "class1": int(len(ood["test_labels"]) - n0)}
        # class 1 first: every set is stored as its +1 block, then its -1 block
        sets[name] = ood_episodes(ood, np.concatenate([n0 + np.arange(half), np.arange(half)]))
    features, y, outputs = {}, {}, {}
    for name, eps in progress_bar(list(sets.items()), desc="extract", disable=not progress):
        features[name], outputs[name] = _features_and_outputs(net64, eps)
        y[name] = eps.y.astype(np.float64)
    info = {
        "P": cfg["P"],
        "n_eval": cfg["n_eval"],
        "train_pool": n_pool,
        "eval_pool": cfg["eval_pool"],
        "train_seed": tcfg.seed,
        "drawing_seed": tcfg.drawing_seed,
        "ood_counts": ood_counts,
        "network_sha256": (record or {}).get("sha256"),
        "network_source": (record or {}).get("source"),
    }
    heads = (int(net64.n_heads),) * int(net64.n_layers)
    return OneShotData(features, y, outputs, gd_order_parameter(net64), info, heads)


def _train_config(record: dict | None) -> TrainConfig:
    return TrainConfig(
        **{k: v for k, v in (record or {}).get("config", {}).items() if k in TrainConfig.__dataclass_fields__}
    )


def _training_set(tcfg: TrainConfig, cfg: dict, root) -> tuple[Episodes, int]:
    """The balanced training set of :func:`extract` and the size of the pool it was taken from."""
    rng = np.random.default_rng(tcfg.seed)
    train_images = load_split("train", root).images
    pool = [
        sample_episodes(train_images, tcfg.batch, rng, drawing_seed=tcfg.drawing_seed)
        for _ in range(cfg["train_batches"])
    ]
    ys = np.concatenate([e.y for e in pool])
    return _concat(pool).subset(balanced_indices(ys, cfg["P"] // 2)), int(len(ys))


def training_episodes(record: dict | None, cfg: dict, root=None) -> Episodes:
    """The training episodes of :func:`extract` for a network of training ``record`` at the theory config ``cfg``
    (``P``, ``train_batches``): the first ``P/2`` of each label of the network's first training batches."""
    return _training_set(_train_config(record), cfg, root)[0]


def _concat(parts):
    return Episodes(
        *(np.concatenate([getattr(p, f) for p in parts]) for f in ("images", "labels", "y", "classes", "query_class"))
    )


def _eval_stack(data: OneShotData):
    X = np.concatenate([data.features[s] for s in EVAL_SETS])
    bounds = np.cumsum([0] + [len(data.y[s]) for s in EVAL_SETS])
    return X, {s: slice(bounds[i], bounds[i + 1]) for i, s in enumerate(EVAL_SETS)}
