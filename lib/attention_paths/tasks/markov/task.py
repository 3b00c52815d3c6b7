"""One hidden-Markov-chain network (spec §A.1-A.3): seeds, data, heads and path features (:class:`MarkovTask`), the
path names, and the order parameters of single paths and subnetworks."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from attention_paths.tasks.markov.data import BETA, GENERATORS, N_STATES, _check_seed, make_sequences
from attention_paths.tasks.markov.heads import good_head, random_head, uniform_head
from attention_paths.theory.attention import WFormHeads, readout_vector
from attention_paths.theory.checks import check_psd
from attention_paths.theory.paths import path_features, path_inputs
from attention_paths.theory.predictor import predict

__all__ = [
    "MarkovSeeds",
    "MarkovTask",
    "make_markov_task",
    "MAIN_PATHS",
    "MAIN_ORDER",
    "NOISY_PATHS",
    "single_path_U",
    "subnetwork_U",
]


# Path names of the 4-path network, by flat index p = 2 h1 + h2 (spec §A.3), and the display order.
MAIN_PATHS = ("g", "a1", "d", "a2")
MAIN_ORDER = (0, 2, 1, 3)  # (g, d, a1, a2)


NOISY_PATHS = ("g", "d")


@dataclass(frozen=True)
class MarkovSeeds:
    """Seeds of one "seed set": data (train, test) and the two random heads (spec §A.1-A.2).

    ``MarkovSeeds().shifted(k)`` adds ``1000 k`` to every seed (robustness check H9) and keeps the generator;
    ``k = 0`` is the reference's seed values (with this project's generator, OP-E1).  Seeds are
    non-negative integers.
    """

    train: int = 27
    test: int = 59
    random_1: int = 147  # layer-1 random head
    random_2: int = 247  # layer-2 random head
    generator: str = "numpy-pcg64"  # or "torch-reference": the reference's own draws (spec §A.1b)

    def __post_init__(self):
        if self.generator not in GENERATORS:
            raise ValueError(f"generator must be one of {GENERATORS}, got {self.generator!r}")
        for name in ("train", "test", "random_1", "random_2"):
            _check_seed(getattr(self, name), f"MarkovSeeds.{name}")

    def shifted(self, k: int) -> "MarkovSeeds":
        """These seeds plus ``1000 k`` each, with the same generator."""
        _check_seed(k, "shift k")
        return replace(
            self,
            train=self.train + 1000 * k,
            test=self.test + 1000 * k,
            random_1=self.random_1 + 1000 * k,
            random_2=self.random_2 + 1000 * k,
        )

    @classmethod
    def reference(cls) -> "MarkovSeeds":
        """The reference's seed values with the reference's generator: the paper's own data and heads."""
        return cls(generator="torch-reference")


@dataclass
class MarkovTask:
    """Data, heads and path features of one HMC network.

    ``layers`` are the W-form heads per layer; features are ``[P, N0, Pi]`` as in
    :func:`attention_paths.theory.paths.path_features`; ``path_names`` follow the flat path index.
    """

    name: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    layers: list
    readout: np.ndarray
    path_names: tuple
    features_train: np.ndarray = field(repr=False)
    features_test: np.ndarray = field(repr=False)
    xi_train: np.ndarray = field(repr=False)
    xi_test: np.ndarray = field(repr=False)

    @property
    def heads(self) -> tuple[int, ...]:
        return tuple(layer.n_heads for layer in self.layers)

    @property
    def n_paths(self) -> int:
        return int(np.prod(self.heads))


def make_markov_task(
    network: str = "main",
    seeds: MarkovSeeds = MarkovSeeds(),
    P: int = 100,
    P_test: int = 1000,
    sigma_perp: float | None = None,
    beta: float = BETA,
) -> MarkovTask:
    """Build one of the networks of spec §A.3 on its data.

    ``network``:

    * ``"main"``: 4 paths, layer 1 [good, random], layer 2 [uniform, random]; ``sigma_perp = 1``.
    * ``"noisy"``: 2 paths, layer 1 [good, uniform (a random head with eps = 0)], layer 2 [uniform];
      ``sigma_perp = 5`` (the paper's "noisier data").
    * ``"g"``, ``"g+d"``: the GP reference networks (layer 1 [good] or [good, random], layer 2 [uniform])
      on the main data.

    ``sigma_perp`` overrides the network's default noise.
    """
    good, unif = good_head(beta), uniform_head(beta)
    gen = seeds.generator
    if network == "main":
        heads = [
            [good, random_head(seeds.random_1, beta=beta, generator=gen)],
            [unif, random_head(seeds.random_2, beta=beta, generator=gen)],
        ]
        names, s_perp = MAIN_PATHS, 1.0
    elif network == "noisy":
        heads = [[good, random_head(seeds.random_1, eps=0.0, beta=beta, generator=gen)], [unif]]
        names, s_perp = NOISY_PATHS, 5.0
    elif network == "g":
        heads, names, s_perp = [[good], [unif]], ("g",), 1.0
    elif network == "g+d":
        heads, names, s_perp = [[good, random_head(seeds.random_1, beta=beta, generator=gen)], [unif]], ("g", "d"), 1.0
    else:
        raise ValueError(f"network must be 'main', 'noisy', 'g' or 'g+d', got {network!r}")
    s_perp = s_perp if sigma_perp is None else float(sigma_perp)
    x_tr, y_tr, _ = make_sequences(P, seeds.train, sigma_perp=s_perp, generator=gen)
    x_te, y_te, _ = make_sequences(P_test, seeds.test, sigma_perp=s_perp, generator=gen)
    layers = [WFormHeads(np.stack(h)) for h in heads]
    r = readout_vector("last", N_STATES + 1)
    xi_tr = path_inputs(x_tr, layers, r).numpy()
    xi_te = path_inputs(x_te, layers, r).numpy()
    return MarkovTask(
        network, x_tr, y_tr, x_te, y_te, layers, r, names, path_features(xi_tr), path_features(xi_te), xi_tr, xi_te
    )


def single_path_U(n_paths: int, path: int, separate_network: bool = True) -> np.ndarray:
    """Order parameter that keeps one path of a ``n_paths``-path network (spec OP-E2).

    ``separate_network=True`` gives the GP of the single-path network (kernel ``C~^{pi pi}``, variant (a));
    ``False`` is the 0/1 mask on the diagonal of ``U`` (kernel ``C~^{pi pi} / Pi``, variant (b)).
    """
    if not 0 <= path < n_paths:
        raise ValueError(f"path must index one of {n_paths} paths, got {path}")
    if separate_network:
        return subnetwork_U(n_paths, [path])
    U = np.zeros((n_paths, n_paths))
    U[path, path] = 1.0
    return U


def subnetwork_U(n_paths: int, paths) -> np.ndarray:
    """GP order parameter of the sub-network made of ``paths`` only: kernel ``(1/Pi_sub) sum C~^{pi pi}``."""
    paths = sorted(set(int(p) for p in paths))
    if not paths or paths[0] < 0 or paths[-1] >= n_paths:
        raise ValueError(f"paths must be a non-empty subset of range({n_paths}), got {paths}")
    U = np.zeros((n_paths, n_paths))
    U[paths, paths] = n_paths / len(paths)
    return U


def _accuracy_with(task: MarkovTask, U, tau: float) -> float:
    """Test accuracy of the mean predictor with kernel ``K^U``; NaN if ``U`` is not positive semidefinite."""
    try:
        check_psd(U)
    except ValueError:
        return float("nan")
    return predict(U, task.features_train, task.y_train, tau, task.features_test, return_var=False).accuracy(
        task.y_test
    )


def _correct_with(task: MarkovTask, U, tau: float) -> np.ndarray:
    """Per-test-sequence correctness (bool, (P_test,)) of the mean predictor with kernel ``K^U``: the sign of
    its mean equals the label (an exactly zero mean counts as wrong, as in :func:`_accuracy_with`)."""
    check_psd(U)
    mean = predict(U, task.features_train, task.y_train, tau, task.features_test, return_var=False).mean
    return np.sign(mean) == task.y_test
