"""Episodes of in-context one-shot classification (spec experiments §B.2, §B.4).

An episode is [support, support, query] (2-way 1-shot, one query): two characters, one drawing of each as
support with in-context labels 0 and 1, and a query of one of them.  Out of distribution (MNIST,
FashionMNIST), episode ``i`` is [i-th training 0, i-th training 1, i-th test image].
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attention_paths.tasks.omniglot.data import load_ood, load_split, omniglot_to_float

__all__ = ["Episodes", "QUERY_LABEL", "sample_episodes", "ood_episodes", "fixed_episodes", "evaluation_sets"]

QUERY_LABEL = 2  # the in-context label row of the query


@dataclass
class Episodes:
    """A batch of episodes as normalised images.

    images : [B, 3, 3, 32, 32] float32 -- support, support, query (sequence order)
    labels : [B, 3] int64 in-context labels of the three images (0/1 for supports, 2 for the query)
    y : [B] float32 targets, +1 if the query has in-context label 1, -1 if label 0
    classes : [B, 2] int64 class (character) indices carrying in-context labels 0 and 1
    query_class : [B] int64 class index of the query
    """

    images: np.ndarray
    labels: np.ndarray
    y: np.ndarray
    classes: np.ndarray
    query_class: np.ndarray

    def __len__(self) -> int:
        return len(self.y)

    def subset(self, idx) -> "Episodes":
        """The episodes at positions ``idx`` (in that order)."""
        idx = np.asarray(idx)
        return Episodes(self.images[idx], self.labels[idx], self.y[idx], self.classes[idx], self.query_class[idx])


def _pair_drawings(c0: int, c1: int, seed: int, n_drawings: int) -> tuple[np.ndarray, np.ndarray]:
    """Support and query-candidate drawings of an ordered class pair, fixed by (pair, seed) (spec OP-E11)."""
    rng = np.random.default_rng([seed, c0, c1])
    return rng.choice(n_drawings, 2, replace=False), rng.choice(n_drawings, 2, replace=False)


def sample_episodes(
    images_uint8: np.ndarray, n: int, rng: np.random.Generator, *, drawing_seed: int | None = 0, to_float=None
) -> Episodes:
    """``n`` random 2-way 1-shot episodes from one split (spec §B.2).

    Parameters
    ----------
    images_uint8 : [C, D, 32, 32] preprocessed images of C characters with D drawings each
    n : number of episodes
    rng : generator for the class pairs, label assignment, support order and query choice
    drawing_seed : which drawing of each class is support and which the query candidate is fixed per
        ordered class pair by this seed (the reference's behaviour); ``None`` draws them afresh
    to_float : image conversion (default :func:`.data.omniglot_to_float`)
    """
    to_float = to_float or omniglot_to_float
    C, D = images_uint8.shape[:2]
    if C < 2 or D < 2:
        raise ValueError(f"need at least 2 classes with 2 drawings each, got images of shape {images_uint8.shape}")
    if n < 1:
        raise ValueError(f"need at least one episode, got n={n}")
    pairs = np.empty((n, 2), dtype=np.int64)
    pairs[:, 0] = rng.integers(C, size=n)
    pairs[:, 1] = (pairs[:, 0] + 1 + rng.integers(C - 1, size=n)) % C  # a distinct second class, uniform
    draw = np.empty((n, 2, 2), dtype=np.int64)  # [episode, class a/b, support/query-candidate]
    for i, (a, b) in enumerate(pairs):
        if drawing_seed is None:
            da, db = rng.choice(D, 2, replace=False), rng.choice(D, 2, replace=False)
        else:
            da, db = _pair_drawings(int(a), int(b), drawing_seed, D)
        draw[i, 0], draw[i, 1] = da, db
    label_a = rng.integers(2, size=n)  # in-context label of class a; class b gets the other
    swap = rng.integers(2, size=n).astype(bool)  # support order
    query_is_b = rng.integers(2, size=n).astype(bool)
    sup_cls = np.where(swap[:, None], pairs[:, ::-1], pairs)  # [n, 2] classes in support order
    sup_draw = np.where(swap[:, None], draw[:, ::-1, 0], draw[:, :, 0])
    q_cls = np.where(query_is_b, pairs[:, 1], pairs[:, 0])
    q_draw = np.where(query_is_b, draw[:, 1, 1], draw[:, 0, 1])

    def lab_of(cls):  # in-context label of class ``cls`` (one of the pair) in each episode
        return np.where(cls == pairs[:, 0], label_a, 1 - label_a)

    labels = np.stack([lab_of(sup_cls[:, 0]), lab_of(sup_cls[:, 1]), np.full(n, QUERY_LABEL)], axis=1)
    y = np.where(lab_of(q_cls) == 1, 1.0, -1.0).astype(np.float32)
    imgs = np.stack(
        [
            images_uint8[sup_cls[:, 0], sup_draw[:, 0]],
            images_uint8[sup_cls[:, 1], sup_draw[:, 1]],
            images_uint8[q_cls, q_draw],
        ],
        axis=1,
    )
    classes = np.stack(
        [np.where(label_a == 0, pairs[:, 0], pairs[:, 1]), np.where(label_a == 0, pairs[:, 1], pairs[:, 0])], axis=1
    )
    return Episodes(to_float(imgs), labels.astype(np.int64), y, classes, q_cls)


def ood_episodes(ood: dict, indices=None) -> Episodes:
    """Out-of-distribution episodes (spec §B.4): episode ``i`` = [i-th training 0, i-th training 1, i-th test].

    ``ood`` is the output of :func:`.data.load_ood`; targets are -1 for a class-0 query,
    +1 for class 1; supports in fixed order (class 0 first, in-context labels 0 then 1).
    """
    n = len(ood["test"])
    idx = np.arange(n) if indices is None else np.asarray(indices)
    images = np.stack([ood["train0"][idx], ood["train1"][idx], ood["test"][idx]], axis=1)
    labels = np.tile(np.array([0, 1, QUERY_LABEL]), (len(idx), 1))
    q = ood["test_labels"][idx]
    return Episodes(
        images.astype(np.float32),
        labels,
        np.where(q == 1, 1.0, -1.0).astype(np.float32),
        np.tile(np.array([0, 1]), (len(idx), 1)),
        q.astype(np.int64),
    )


def fixed_episodes(split_images: np.ndarray, n: int, seed: int, drawing_seed: int = 0) -> Episodes:
    """A reproducible set of ``n`` episodes of one split (validation, test)."""
    return sample_episodes(split_images, n, np.random.default_rng(seed), drawing_seed=drawing_seed)


def evaluation_sets(cfg, root=None) -> dict:
    """The fixed evaluation episodes of a training configuration (:class:`~.recipe.TrainConfig`): ``val``
    and ``test`` (Omniglot meta-validation and
    meta-test characters, seeded) and ``MNIST``, ``FashionMNIST`` (all, or a balanced subset)."""
    sets = {
        "val": fixed_episodes(load_split("val", root).images, cfg.val_episodes, 1000 + cfg.seed, cfg.drawing_seed),
        "test": fixed_episodes(load_split("test", root).images, cfg.test_episodes, 2000 + cfg.seed, cfg.drawing_seed),
    }
    for name in ("MNIST", "FashionMNIST"):
        ood = load_ood(name, root)
        n = len(ood["test"])
        idx = None
        if cfg.ood_episodes is not None and cfg.ood_episodes < n:  # a balanced subset: first of each class
            n0 = int((ood["test_labels"] == 0).sum())
            half = cfg.ood_episodes // 2
            idx = np.concatenate([np.arange(half), n0 + np.arange(cfg.ood_episodes - half)])
        sets[name] = ood_episodes(ood, idx)
    return sets
