"""A third-party-style network and task for "Your own network" (issue 51 §3): a stack of
``torch.nn.MultiheadAttention`` layers written with torch only (not the book's classes), the "marked tokens"
task it learns, and its gradient-descent training.

The task: a sequence of ``T`` Gaussian tokens of ``n0`` features, ``n_marked`` of them marked (their feature 0
set to ``marker``); the label is the sign of the sum of feature 1 over the marked tokens.  Attention that finds
the marked tokens (queries and keys reading the raw tokens) separates the classes; uniform attention averages
the marked tokens with the noise of the others.

>>> x, y = marked_tokens(4, seed=0)
>>> x.shape, sorted(set(y.tolist()))
((4, 6, 8), [-1.0, 1.0])
"""

from __future__ import annotations

import copy
import functools

import numpy as np
import torch
from torch import nn

__all__ = ["MultiheadStack", "marked_tokens", "train_stack", "example_model", "example_data"]


class MultiheadStack(nn.Module):
    """``n_layers`` layers of ``nn.MultiheadAttention``: queries and keys read the raw tokens ``x``, values the
    layer before (the first layer reads ``embed(x)``); no bias, residual, normalisation or MLP; mean over tokens,
    then a linear readout.  Input ``x`` [B, T, n0] -> output [B]."""

    def __init__(self, n0: int = 8, n_heads: int = 4, n_layers: int = 2, seed: int = 0):
        super().__init__()
        torch.manual_seed(seed)
        self.embed = nn.Linear(n0, n0, bias=False)
        self.attn = nn.ModuleList(
            nn.MultiheadAttention(n0, n_heads, bias=False, batch_first=True) for _ in range(n_layers)
        )
        self.readout = nn.Linear(n0, 1, bias=False)

    def forward(self, x):
        z = self.embed(x)
        for layer in self.attn:
            z = layer(x, x, z, need_weights=False)[0]
        return self.readout(z.mean(dim=1)).squeeze(-1)


def marked_tokens(n: int, T: int = 6, n0: int = 8, n_marked: int = 2, marker: float = 3.0, seed: int = 0):
    """``(x [n, T, n0] float32, y [n] +-1 float64)`` of the marked-tokens task, balanced in expectation."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, T, n0))
    marked = np.argsort(rng.random((n, T)), axis=1)[:, :n_marked]
    x[:, :, 0] = 0.0
    np.put_along_axis(x[:, :, 0], marked, marker, axis=1)
    signal = np.take_along_axis(x[:, :, 1], marked, axis=1).sum(1)
    return x.astype(np.float32), np.where(signal > 0, 1.0, -1.0)


def train_stack(
    model: nn.Module, x, y, steps: int = 600, batch: int = 256, lr: float = 0.01, seed: int = 0
) -> list[float]:
    """Adam on the squared error to the +-1 targets, minibatches of ``batch`` drawn with ``seed``; returns the
    loss of every step."""
    gen = torch.Generator().manual_seed(seed)
    x, y = torch.as_tensor(x, dtype=torch.float32), torch.as_tensor(y, dtype=torch.float32)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        idx = torch.randint(0, len(x), (batch,), generator=gen)
        opt.zero_grad()
        loss = ((model(x[idx]) - y[idx]) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    return losses


def example_data(n_train: int = 2000, n_test: int = 1000, seed: int = 0) -> dict:
    """The task's training and test sets, ``{"x_train", "y_train", "x_test", "y_test"}`` (the ``--data`` layout)."""
    x, y = marked_tokens(n_train + n_test, seed=seed)
    return {"x_train": x[:n_train], "y_train": y[:n_train], "x_test": x[n_train:], "y_test": y[n_train:]}


def example_model(steps: int = 600, seed: int = 0) -> MultiheadStack:
    """The stack trained on :func:`example_data`'s training set (the ``--model`` entry point
    ``attention_paths.tasks.yours.example:example_model``; seconds on a CPU, once per process: a copy of the
    first training is returned)."""
    return copy.deepcopy(_trained(int(steps), int(seed)))


@functools.lru_cache(maxsize=4)
def _trained(steps: int, seed: int) -> MultiheadStack:
    model = MultiheadStack(seed=seed)
    d = example_data(seed=seed)
    train_stack(model, d["x_train"], d["y_train"], steps=steps, seed=seed)
    return model.eval()
