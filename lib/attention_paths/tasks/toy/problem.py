"""The toy problem: i.i.d. Gaussian token matrices with random W-form heads, labelled by the signs of one
prior draw of the same architecture at large width (a "teacher"), so that the task is realisable and
path-structured."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from attention_paths.theory.attention import WFormHeads, readout_vector
from attention_paths.theory.network import AttentionPathNetwork
from attention_paths.theory.paths import path_features, path_inputs

__all__ = ["random_wform_layers", "ToyProblem", "make_toy_problem"]


def random_wform_layers(n0: int, heads, beta: float = 1.0, rng: np.random.Generator | None = None):
    """One :class:`WFormHeads` per layer with i.i.d. ``N(0, beta^2 / N0)`` entries (sharp, input-dependent
    attention)."""
    rng = np.random.default_rng(0) if rng is None else rng
    return [WFormHeads(beta * rng.standard_normal((H, n0, n0)) / np.sqrt(n0)) for H in heads]


@dataclass
class ToyProblem:
    """Training and test inputs, labels, heads and their path features."""

    x_train: np.ndarray  # [P, N0, T]
    y_train: np.ndarray  # [P]
    x_test: np.ndarray  # [M, N0, T]
    y_test: np.ndarray  # [M]
    layers: list
    readout: np.ndarray  # [T]
    features_train: np.ndarray  # [P, N0, Pi]
    features_test: np.ndarray  # [M, N0, Pi]

    @property
    def heads(self) -> tuple[int, ...]:
        return tuple(layer.n_heads for layer in self.layers)

    def subset(self, P: int) -> "ToyProblem":
        """The same problem with only the first ``P`` training examples (the test set is unchanged)."""
        if not 1 <= P <= len(self.y_train):
            raise ValueError(f"P must be between 1 and {len(self.y_train)}, got {P}")
        return ToyProblem(
            self.x_train[:P],
            self.y_train[:P],
            self.x_test,
            self.y_test,
            self.layers,
            self.readout,
            self.features_train[:P],
            self.features_test,
        )

    def path_inputs(self, which: str = "train") -> np.ndarray:
        """Path-processed inputs ``xi`` [P or M, Pi, N0] of the training or test set (for the samplers)."""
        x = {"train": self.x_train, "test": self.x_test}[which]
        return path_inputs(x, self.layers, self.readout).numpy()


def make_toy_problem(
    P: int = 40,
    M: int = 200,
    n0: int = 16,
    T: int = 6,
    heads=(2, 2),
    beta: float = 2.0,
    readout: str = "mean",
    teacher_width: int = 256,
    teacher_path: int | None = None,
    seed: int = 0,
) -> ToyProblem:
    """Build a seeded toy problem (spec T§16.3 configuration by default).

    The labels are ``sign f_teacher(x)`` for one prior draw of the network with all widths equal to
    ``teacher_width`` or, if ``teacher_path`` is given, ``sign(g . xi^pi(x))`` for a random Gaussian
    ``g`` and that single path ``pi`` (a task that only one path can solve).  Train and test inputs
    are independent ``N(0, 1)`` token matrices.
    """
    if P < 1 or M < 1:
        raise ValueError(f"P and M must be positive, got P={P}, M={M}")
    rng = np.random.default_rng(seed)
    layers = random_wform_layers(n0, heads, beta, rng)
    r = readout_vector(readout, T)
    x = rng.standard_normal((P + M, n0, T))
    xi = path_inputs(x, layers, r)
    if teacher_path is None:
        teacher = AttentionPathNetwork(layers, r, (teacher_width,) * (len(heads) + 1))
        teacher.sample_prior(torch.Generator().manual_seed(seed + 1))
        with torch.no_grad():
            f = teacher(x).numpy()
    else:
        if not 0 <= teacher_path < xi.shape[1]:
            raise ValueError(f"teacher_path must index one of the {xi.shape[1]} paths, got {teacher_path}")
        f = xi[:, teacher_path, :].numpy() @ rng.standard_normal(n0)
    y = np.where(f > 0, 1.0, -1.0)
    feats = path_features(xi)
    return ToyProblem(x[:P], y[:P], x[P:], y[P:], layers, r, feats[:P], feats[P:])
