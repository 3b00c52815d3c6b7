"""The hidden-Markov-chain sequence classification task of the paper (spec experiments §A).

A sequence is 30 hidden states in {+, -}; class ``y = +1`` repeats the previous state with probability
0.7, class ``y = -1`` with probability 0.3.  Each state is embedded as ``v_state + eta`` in 200
dimensions, a zero beginning-of-sequence (BOS) token is prepended and every token gets a one-hot
position code, so an input is ``x in R^{231 x 31}`` (``N0 = 231``, ``T = 31``).

Noise naming (the spec's "naming trap"): the generator draws three independent noise components,

============================  ==========================  =================================  =========
component                     direction                   reference implementation option    here
============================  ==========================  =================================  =========
paper "parallel" noise        along ``v+ + v-``           "parallel"                         ``sigma_sum``
paper "parallel" noise        along ``v+ - v-``           "perpendicular"                    ``sigma_diff``
paper ``sigma_perp``          198-dim out-of-plane        "out-of-plane"                     ``sigma_perp``
============================  ==========================  =================================  =========

so the paper's ``sigma_perp = 5`` ("noisier data") is ``sigma_perp=5`` here and "perpendicular = 5"
nowhere.

Heads are W-form matrices (T§2.2) with inverse temperature ``beta = 10``: the *good* head attends to the
previous token when it is in the same state and to the (zero) BOS token otherwise; the *uniform* head
attends uniformly; a *random* head has Gaussian entries and gives sharp, task-irrelevant attention.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field, replace

import numpy as np
import torch

from attention_paths import sampling
from attention_paths.base.config import get_scale
from attention_paths.theory.action import Action
from attention_paths.theory.architecture import Architecture
from attention_paths.theory.attention import WFormHeads, readout_vector
from attention_paths.theory.checks import check_psd
from attention_paths.theory.kernels import PathKernel, gp_kernel, path_kernel, renormalized_kernel
from attention_paths.theory.paths import path_features, path_inputs
from attention_paths.theory.predictor import class_block_contrast, kernel_alignment, predict
from attention_paths.theory.scores import head_scores
from attention_paths.theory.solver import solve_continuation

__all__ = [
    "N_FEATURES",
    "N_STATES",
    "embeddings",
    "sample_states",
    "make_sequences",
    "good_head",
    "uniform_head",
    "random_head",
    "GENERATORS",
    "HMCSeeds",
    "HMCTask",
    "make_hmc_task",
    "MAIN_PATHS",
    "MAIN_ORDER",
    "NOISY_PATHS",
    "single_path_U",
    "subnetwork_U",
    "repeat_coordinate",
    "difference_order_parameter",
    "cross_weight_ratio",
    "difference_scan",
    "HMC_EXPERIMENT",
    "theory_sweep",
    "ablations",
    "seed_set_summary",
    "run_hmc",
    "sample_hmc",
    "hmc_summary",
    "hmc_claims",
    "format_sweep",
    "sampling_records",
    "format_sampling",
    "format_seed_sets",
    "seed_set_label",
]

N_FEATURES = 200  # feature width N_f
N_STATES = 30  # state tokens per sequence (T = 31 with the BOS token)
BETA = 10.0  # inverse softmax temperature of every head

# Path names of the 4-path network, by flat index p = 2 h1 + h2 (spec §A.3), and the display order.
MAIN_PATHS = ("g", "a1", "d", "a2")
MAIN_ORDER = (0, 2, 1, 3)  # (g, d, a1, a2)
NOISY_PATHS = ("g", "d")


def embeddings(nf: int = N_FEATURES) -> tuple[np.ndarray, np.ndarray]:
    """State embeddings ``v+ = sqrt2 (1..1, 0..0)`` and ``v- = sqrt2 (0..0, 1..1)``; ``|v|^2 = nf``."""
    if nf < 2 or nf % 2:
        raise ValueError(f"the feature width must be a positive even number, got {nf}")
    v_plus = np.zeros(nf)
    v_plus[: nf // 2] = np.sqrt(2.0)
    return v_plus, v_plus[::-1].copy()


def sample_states(n: int, p_stay: float, rng: np.random.Generator, n_states: int = N_STATES) -> np.ndarray:
    """Hidden-state chains ``[n, n_states]`` with entries +1/-1.

    Per sequence, one uniform draw ``u`` sets the first state (+ if ``u >= 0.5``), then one draw per
    transition keeps the state when ``u < p_stay`` (the reference's draw order).
    """
    if not 0.0 <= p_stay <= 1.0:
        raise ValueError(f"p_stay must be a probability, got {p_stay}")
    u = rng.random((n, n_states))
    flips = np.where(u[:, 1:] < p_stay, 1.0, -1.0)
    first = np.where(u[:, :1] >= 0.5, 1.0, -1.0)
    return np.concatenate([first, first * np.cumprod(flips, axis=1)], axis=1)


def make_sequences(
    P: int,
    seed: int,
    *,
    p_stay=(0.7, 0.3),
    sigma_sum: float = 1.0,
    sigma_diff: float = 1.0,
    sigma_perp: float = 1.0,
    nf: int = N_FEATURES,
    generator: str = "numpy-pcg64",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A labelled data set of ``P`` sequences, the first half of class +1, the second of class -1.

    Parameters
    ----------
    P : number of sequences (even)
    seed : seeds the one generator used for the chains (class +1 first) and then the noise
    p_stay : stay probabilities of class +1 and class -1
    sigma_sum, sigma_diff : in-plane noise strengths along ``v+ + v-`` and ``v+ - v-`` (the paper's
        parallel noise, 1 in every experiment)
    sigma_perp : out-of-plane noise strength (the paper's ``sigma_perp``; 1 or 5)
    generator : ``"numpy-pcg64"`` (this project's: one numpy generator for the chains, then the noise) or
        ``"torch-reference"`` (the reference's, bit for bit, spec §A.1b: torch's CPU generator in float64,
        one ``torch.rand(1)`` per first state and per transition, then one ``torch.randn`` for the noise)

    Returns
    -------
    x : [P, nf + 31, 31] tokens as columns (BOS first), y : [P] labels +-1, states : [P, 30]
    """
    if P < 2 or P % 2:
        raise ValueError(f"P must be a positive even number (half per class), got {P}")
    _check_seed(seed, "seed")
    if min(sigma_sum, sigma_diff, sigma_perp) < 0:
        raise ValueError("noise strengths must be non-negative")
    if generator not in GENERATORS:
        raise ValueError(f"generator must be one of {GENERATORS}, got {generator!r}")
    half = P // 2
    if generator == "torch-reference":  # spec §A.1b: torch's CPU generator, float64, seeded once per data set
        gen = torch.Generator().manual_seed(int(seed))
        states = np.concatenate([_torch_states(half, p_stay[0], gen), _torch_states(half, p_stay[1], gen)])
        zeta = torch.randn((P, nf, N_STATES), dtype=torch.float64, generator=gen).numpy()
    else:
        rng = np.random.default_rng(seed)
        states = np.concatenate([sample_states(half, p_stay[0], rng), sample_states(half, p_stay[1], rng)])
        zeta = rng.standard_normal((P, nf, N_STATES))
    y = np.concatenate([np.ones(half), -np.ones(half)])
    v_plus, v_minus = embeddings(nf)
    feats = np.where(states[:, None, :] > 0, v_plus[None, :, None], v_minus[None, :, None])  # [P, nf, 30]
    z_sum, z_diff, z_out = _noise_components(zeta, nf)
    eta = sigma_sum * z_sum + sigma_diff * z_diff + sigma_perp * z_out
    T = N_STATES + 1
    x = np.zeros((P, nf + T, T))
    x[:, :nf, 1:] = feats + eta  # the BOS column's features stay zero and noise-free
    x[:, nf:, :] = np.eye(T)[None]
    return x, y, states


GENERATORS = ("numpy-pcg64", "torch-reference")


def _noise_components(zeta, nf: int):
    """``zeta`` [P, nf, 30] split along ``e_sum``, ``e_diff`` and the out-of-plane rest (spec §A.1)."""
    v_plus, v_minus = embeddings(nf)
    e_sum = (v_plus + v_minus) / np.linalg.norm(v_plus + v_minus)
    e_diff = (v_plus - v_minus) / np.linalg.norm(v_plus - v_minus)
    z_sum = e_sum[None, :, None] * np.einsum("i,pit->pt", e_sum, zeta)[:, None, :]
    z_diff = e_diff[None, :, None] * np.einsum("i,pit->pt", e_diff, zeta)[:, None, :]
    return z_sum, z_diff, zeta - z_sum - z_diff


def _torch_states(n: int, p_stay: float, gen, n_states: int = N_STATES) -> np.ndarray:
    """The reference's chains: per example one ``torch.rand(1)`` for the first state, then one per transition."""
    states = np.empty((n, n_states))
    for i in range(n):
        s = 1.0 if float(torch.rand(1, dtype=torch.float64, generator=gen)) >= 0.5 else -1.0
        states[i, 0] = s
        for t in range(1, n_states):
            if not float(torch.rand(1, dtype=torch.float64, generator=gen)) < p_stay:
                s = -s
            states[i, t] = s
    return states


def _blocks(feature, position, cross_fp=None, cross_pf=None, nf: int = N_FEATURES) -> np.ndarray:
    T = position.shape[0]
    W = np.zeros((nf + T, nf + T))
    W[:nf, :nf] = feature
    W[nf:, nf:] = position
    if cross_fp is not None:
        W[:nf, nf:] = cross_fp
        W[nf:, :nf] = cross_pf
    return W


def good_head(beta: float = BETA, nf: int = N_FEATURES) -> np.ndarray:
    """The "same state as the previous token" head, ``[N0, N0]`` (spec §A.2, head 1).

    Feature block ``q q^T`` with ``q = (v+ - v-)/nf``; position block 1 on ``(key t-1, query t)`` for
    ``t >= 2`` and 1.5 on (key BOS, query ``t >= 1``).
    """
    v_plus, v_minus = embeddings(nf)
    q = (v_plus - v_minus) / nf
    T = N_STATES + 1
    pos = np.zeros((T, T))
    pos[np.arange(1, T - 1), np.arange(2, T)] = 1.0
    pos[0, 1:] = 1.5
    return beta * _blocks(np.outer(q, q), pos, nf=nf)


def uniform_head(beta: float = BETA, nf: int = N_FEATURES) -> np.ndarray:
    """Position block of ones: every score equals ``beta``, so attention is exactly uniform."""
    T = N_STATES + 1
    return beta * _blocks(np.zeros((nf, nf)), np.ones((T, T)), nf=nf)


def random_head(
    seed: int, eps: float = 1.0, beta: float = BETA, nf: int = N_FEATURES, generator: str = "numpy-pcg64"
) -> np.ndarray:
    """A random head: Gaussian blocks of strength ``eps`` (feature ``/nf``, position ``1``, cross ``/sqrt nf``).

    Draw order as in the reference: feature block, position block, then a full ``N0 x N0`` Gaussian of
    which only the cross blocks are kept.  ``eps = 0`` gives the zero matrix, i.e. uniform attention (and,
    as in the reference, draws nothing).  ``generator="torch-reference"`` draws each block with
    ``torch.randn_like`` (float64) after ``torch.manual_seed(seed)`` (spec §A.1b).
    """
    if generator not in GENERATORS:
        raise ValueError(f"generator must be one of {GENERATORS}, got {generator!r}")
    _check_seed(seed, "seed")
    T = N_STATES + 1
    n0 = nf + T
    if eps == 0:
        return beta * _blocks(np.zeros((nf, nf)), np.zeros((T, T)), np.zeros((nf, T)), np.zeros((T, nf)), nf=nf)
    if generator == "torch-reference":
        gen = torch.Generator().manual_seed(int(seed))
        draw = lambda shape: torch.randn(shape, dtype=torch.float64, generator=gen).numpy()  # noqa: E731
    else:
        rng = np.random.default_rng(seed)
        draw = rng.standard_normal
    feature = eps * draw((nf, nf)) / nf
    position = eps * draw((T, T))
    full = eps * draw((n0, n0)) / np.sqrt(nf)
    return beta * _blocks(feature, position, full[:nf, nf:], full[nf:, :nf], nf=nf)


def _check_seed(seed, name: str) -> None:
    """A seed is a non-negative integer (a float such as 1.5 would be truncated silently by the generators)."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {seed!r}")


@dataclass(frozen=True)
class HMCSeeds:
    """Seeds of one "seed set": data (train, test) and the two random heads (spec §A.1-A.2).

    ``HMCSeeds().shifted(k)`` adds ``1000 k`` to every seed (robustness check H9) and keeps the generator;
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
            _check_seed(getattr(self, name), f"HMCSeeds.{name}")

    def shifted(self, k: int) -> "HMCSeeds":
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
    def reference(cls) -> "HMCSeeds":
        """The reference's seed values with the reference's generator: the paper's own data and heads."""
        return cls(generator="torch-reference")


@dataclass
class HMCTask:
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


def make_hmc_task(
    network: str = "main",
    seeds: HMCSeeds = HMCSeeds(),
    P: int = 100,
    P_test: int = 1000,
    sigma_perp: float | None = None,
    beta: float = BETA,
) -> HMCTask:
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
    return HMCTask(
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


# ------------------------------------------------------------------------------------------ the g-d mechanism
def repeat_coordinate(xi, nf: int = N_FEATURES) -> np.ndarray:
    """Component of each path input along ``e_sum = (v+ + v-)/|v+ + v-|`` (the "how many state tokens" axis).

    For the good path it is ``10/31`` times the number of tokens followed by a repeat (plus in-plane
    noise): the label-carrying coordinate.  ``xi`` is [P, Pi, N0]; returns [P, Pi].
    """
    xi = np.asarray(xi, dtype=np.float64)
    v_plus, v_minus = embeddings(nf)
    e_sum = (v_plus + v_minus) / np.linalg.norm(v_plus + v_minus)
    return xi[..., :nf] @ e_sum


def difference_order_parameter(n_paths: int, g: int, d: int, c: float) -> np.ndarray:
    """Rank-one ``U`` whose kernel is that of the single feature ``xi^g - c xi^d``:
    ``U = u u^T``, ``u = e_g - c e_d``."""
    if g == d or not (0 <= g < n_paths and 0 <= d < n_paths):
        raise ValueError(f"g and d must be two different paths of {n_paths}, got {g} and {d}")
    u = np.zeros(n_paths)
    u[g], u[d] = 1.0, -float(c)
    return np.outer(u, u)


def cross_weight_ratio(U, g: int, d: int) -> float:
    """``c* = -U_gd / U_gg``: under a Gaussian prior with covariance ``U`` the d-weights follow ``-c* w_g``."""
    U = np.asarray(U, dtype=np.float64)
    return float(-U[g, d] / U[g, g])


def difference_scan(task: HMCTask, cs, tau: float, g: int = 0, d: int | None = None) -> np.ndarray:
    """Test accuracy of kernel regression on the single feature ``xi^g - c xi^d`` for every ``c`` in ``cs``."""
    d = task.path_names.index("d") if d is None else d
    return np.array([_accuracy_with(task, difference_order_parameter(task.n_paths, g, d, c), tau) for c in cs])


# ------------------------------------------------------------------------------------------ the chapter
_HMC_QUICK = dict(
    widths=(10, 30, 50, 100, 300, 500, 1000),
    tau=0.01,
    P=100,
    P_test=1000,
    seed_sets=5,
    heat_widths=(10, 100, 1000),
    kernel_subset=(tuple(range(0, 25)), tuple(range(75, 100))),
    n_align=30,
    sampling={"main": {"rb": (10,), "full": ()}, "noisy": {"rb": (10,), "full": ()}},
    sampler=dict(num_chains=2, num_warmup=300, num_samples=300, seed=1),
)
HMC_EXPERIMENT = {
    # The theory runs at the paper's sizes at both scales; only the sampling budget differs.
    "quick": _HMC_QUICK,
    "paper": dict(
        _HMC_QUICK,
        # the Rao-Blackwellised sampler is ~10x faster per effective sample here (P = 100); the
        # full-weight one cross-checks it at N = 10
        sampling={"main": {"rb": (10, 30, 100), "full": (10,)}, "noisy": {"rb": (10, 30, 100), "full": (10,)}},
        sampler=dict(num_chains=4, num_warmup=500, num_samples=500, seed=1, chain_method="parallel"),
    ),
}


def theory_sweep(task: HMCTask, widths, tau: float, progress: bool = False) -> dict:
    """Order parameter and test accuracy of ``task`` at every width (solved from the widest down).

    Returns a dict with ``widths`` (ascending), the :class:`~attention_paths.theory.solver.SolveResult` list,
    ``U`` [n_widths, Pi, Pi], ``accuracy`` [n_widths], the GP accuracy and the theory :class:`Prediction`
    objects.
    """
    widths = sorted(widths)
    kernel = PathKernel(task.features_train)
    actions = [Action(kernel, task.y_train, tau, Architecture.uniform(task.heads, N)) for N in reversed(widths)]
    results = solve_continuation(actions, progress=progress, desc=f"{task.name} widths")[::-1]
    preds = [predict(r.U, task.features_train, task.y_train, tau, task.features_test) for r in results]
    gp = predict(np.eye(task.n_paths), task.features_train, task.y_train, tau, task.features_test)
    return {
        "widths": np.array(widths),
        "results": results,
        "U": np.array([r.U for r in results]),
        "predictions": preds,
        "accuracy": np.array([p.accuracy(task.y_test) for p in preds]),
        "gp": gp,
        "gp_accuracy": gp.accuracy(task.y_test),
    }


def _accuracy_with(task: HMCTask, U, tau: float) -> float:
    """Test accuracy of the mean predictor with kernel ``K^U``; NaN if ``U`` is not positive semidefinite."""
    try:
        check_psd(U)
    except ValueError:
        return float("nan")
    return predict(U, task.features_train, task.y_train, tau, task.features_test, return_var=False).accuracy(
        task.y_test
    )


def ablations(U) -> dict:
    """The two diagnostic variants of a 2x2 (g, d) order parameter (spec §A.6 item 5).

    ``diagonal_only``: off-diagonal entries set to zero; ``equalised_diagonal``: both diagonal entries set
    to ``U_gg`` with the off-diagonal kept.
    """
    U = np.asarray(U, dtype=np.float64)
    if U.shape != (2, 2):
        raise ValueError(f"ablations are defined for the 2-path network, got U of shape {U.shape}")
    return {
        "diagonal_only": np.diag(np.diag(U)),
        "equalised_diagonal": np.array([[U[0, 0], U[0, 1]], [U[0, 1], U[0, 0]]]),
    }


def seed_set_summary(k, widths, tau: float, P: int = 100, P_test: int = 1000, seeds: HMCSeeds | None = None) -> dict:
    """Theory, GP lines, "each path alone" and the 2-path network for one seed set (robustness, H9).

    ``k``: the numpy seed set :meth:`HMCSeeds.shifted` ``(k)``, or ``"ref"`` with ``seeds`` =
    :meth:`HMCSeeds.reference` (the reference's own data and heads).
    """
    seeds = seeds or HMCSeeds().shifted(k)
    main = make_hmc_task("main", seeds, P, P_test)
    sw = theory_sweep(main, widths, tau)
    noisy = make_hmc_task("noisy", seeds, P, P_test)
    nsw = theory_sweep(noisy, widths, tau)
    out = {
        "k": k,
        "seeds": seeds,
        "main": main,
        "sweep": sw,
        "noisy": noisy,
        "noisy_sweep": nsw,
        "gp_all": sw["gp_accuracy"],
        "gp_g": _accuracy_with(main, subnetwork_U(4, [0]), tau),
        "gp_gd": _accuracy_with(main, subnetwork_U(4, [0, 2]), tau),
        "alone_network": np.array([_accuracy_with(main, single_path_U(4, p), tau) for p in range(4)]),
        "alone_mask": np.array([_accuracy_with(main, single_path_U(4, p, False), tau) for p in range(4)]),
        "head_scores": [s.tolist() for s in head_scores(sw["U"][0], main.heads)],
    }
    abl = [ablations(U) for U in nsw["U"]]
    out["noisy_diagonal_only"] = np.array([_accuracy_with(noisy, a["diagonal_only"], tau) for a in abl])
    out["noisy_equalised_diagonal"] = np.array([_accuracy_with(noisy, a["equalised_diagonal"], tau) for a in abl])
    return out


def run_hmc(scale: str | None = None, progress: bool = False, sample: bool = True) -> dict:
    """Everything the hidden-Markov-chain chapter shows (spec §A.6, claims §A.7).

    Theory at the paper's sizes on the reference's data (``sets[0]``, the headline; spec §A.1b) and on
    ``seed_sets`` independent numpy seed sets, kernels and label
    alignment at ``N = 10``, and posterior sampling of both networks at the widths of the scale's config
    (Rao-Blackwellised and full-weight NUTS).  ``sample=False`` skips the sampling.
    """
    scale = get_scale(scale)
    cfg = HMC_EXPERIMENT[scale]
    tau, widths = cfg["tau"], cfg["widths"]
    t0 = time.perf_counter()
    # the headline: the reference's own data and heads (spec §A.1b); then independent numpy seed sets
    sets = (
        [seed_set_summary("ref", widths, tau, cfg["P"], cfg["P_test"], HMCSeeds.reference())]
        if cfg.get("reference_set", True)
        else []
    )
    sets += [seed_set_summary(k, widths, tau, cfg["P"], cfg["P_test"]) for k in range(cfg["seed_sets"])]
    theory_seconds = time.perf_counter() - t0
    head = sets[0]
    main, sw = head["main"], head["sweep"]
    i10 = list(sw["widths"]).index(10)
    U10 = sw["U"][i10]
    sub = np.concatenate([np.array(s) for s in cfg["kernel_subset"]])
    Xs = main.features_train[sub]
    Pi = main.n_paths
    kernels = {f"C_{main.path_names[p]}": Pi * path_kernel(Xs, p) for p in range(Pi)}  # without the 1/Pi
    kernels["GP"] = gp_kernel(Xs)
    kernels["renormalised"] = renormalized_kernel(U10, Xs)
    K_gp, K_rn = gp_kernel(main.features_train), renormalized_kernel(U10, main.features_train)
    contrast = {
        "GP": class_block_contrast(K_gp, main.y_train),
        "renormalised": class_block_contrast(K_rn, main.y_train),
    }
    res = {
        "scale": scale,
        "config": cfg,
        "sets": sets,
        "theory_seconds": theory_seconds,
        "block_contrast": contrast,
        "kernels": kernels,
        "kernel_subset": sub,
        "alignment": {
            "GP": kernel_alignment(K_gp, main.y_train, cfg["n_align"]),
            "renormalised": kernel_alignment(K_rn, main.y_train, cfg["n_align"]),
        },
        "samples": {"main": {}, "noisy": {}},
    }
    if sample:
        res["samples"] = sample_hmc(head, cfg, progress)
    return res


def sample_hmc(head: dict, cfg: dict, progress: bool = False) -> dict:
    """Posterior samples of the 4-path and 2-path networks at the widths listed in ``cfg['sampling']``.

    Returns ``{network: {N: {"rb": PosteriorSamples, "full": PosteriorSamples}}}``.
    """
    sconf = sampling.SamplerConfig(**cfg["sampler"])
    out = {}
    for net in ("main", "noisy"):
        task = head[net]
        plan = cfg["sampling"][net]
        out[net] = {}
        for N in sorted(set(plan["rb"]) | set(plan["full"])):
            arch = Architecture.uniform(task.heads, N)
            entry = {}
            with warnings.catch_warnings():
                warnings.simplefilter("always", sampling.SamplingWarning)
                if N in plan["rb"]:
                    entry["rb"] = sampling.sample_rao_blackwell(
                        task.features_train,
                        task.y_train,
                        cfg["tau"],
                        arch,
                        task.features_test,
                        config=sconf,
                        progress=progress,
                    )
                if N in plan["full"]:
                    entry["full"] = sampling.sample_full(
                        task.xi_train, task.y_train, cfg["tau"], arch, task.xi_test, config=sconf, progress=progress
                    )
            out[net][N] = entry
    return out


def hmc_summary(res: dict) -> tuple[dict, dict]:
    """``(summary, arrays)`` of a :func:`run_hmc` result: the JSON record and the arrays of its results folder."""

    def sweep_rows(sw):
        return [
            {
                "N": int(N),
                "accuracy_percent": float(a),
                "grad_max": float(r.grad_max),
                "hessian_min_eig": float(r.hessian_min_eig),
                "iterations": int(r.n_iter),
                "U": r.U.tolist(),
            }
            for N, a, r in zip(sw["widths"], sw["accuracy"], sw["results"])
        ]

    sets = []
    for s in res["sets"]:
        sets.append(
            {
                "seed_set": s["k"],
                "label": seed_set_label(s),
                "seeds": vars(s["seeds"]),
                "generator": s["seeds"].generator,
                "gp_all_percent": s["gp_all"],
                "gp_path_g_percent": s["gp_g"],
                "gp_paths_gd_percent": s["gp_gd"],
                "path_alone_network_percent": dict(zip(MAIN_PATHS, s["alone_network"].tolist())),
                "path_alone_mask_percent": dict(zip(MAIN_PATHS, s["alone_mask"].tolist())),
                "head_scores": s["head_scores"],
                "main": sweep_rows(s["sweep"]),
                "noisy": sweep_rows(s["noisy_sweep"]),
                "noisy_gp_percent": s["noisy_sweep"]["gp_accuracy"],
                "noisy_diagonal_only_percent": s["noisy_diagonal_only"].tolist(),
                "noisy_equalised_diagonal_percent": s["noisy_equalised_diagonal"].tolist(),
            }
        )
    sampled = {}
    arrays = {
        "alignment_GP": res["alignment"]["GP"],
        "alignment_renormalised": res["alignment"]["renormalised"],
        "kernel_subset": res["kernel_subset"],
    }
    arrays.update({f"kernel_{k}": v for k, v in res["kernels"].items()})
    for net, per_N in res["samples"].items():
        task = res["sets"][0][net]
        for N, entry in per_N.items():
            for kind, smp in entry.items():
                key = f"{net}_N{N}_{kind}"
                arrays[f"sample_{key}_mean"] = smp.predictive_mean
                arrays[f"sample_{key}_var"] = smp.predictive_var
                arrays[f"sample_{key}_mcse"] = smp.mc_standard_error()
                arrays[f"sample_{key}_U_hat"] = smp.U_hat
                sampled[key] = {
                    "network": net,
                    "N": int(N),
                    "kind": smp.kind,
                    "accuracy_percent": smp.accuracy(task.y_test),
                    "accuracy_mcse_percent": smp.accuracy_mcse(task.y_test),
                    "U_hat": smp.U_hat.tolist(),
                    "U_hat_mcse": smp.U_mcse().tolist(),
                    "wall_seconds": smp.wall_seconds,
                    "settings": smp.settings,
                    "diagnostics": smp.diagnostics,
                }
    for k, s in enumerate(res["sets"]):
        arrays[f"set{k}_U_main"] = s["sweep"]["U"]
        arrays[f"set{k}_U_noisy"] = s["noisy_sweep"]["U"]
    arrays["widths"] = res["sets"][0]["sweep"]["widths"]
    summary = {
        "experiment": "hmc",
        "scale": res["scale"],
        "config": res["config"],
        "path_names": {"main": list(MAIN_PATHS), "noisy": list(NOISY_PATHS)},
        "seed_sets": sets,
        "sampled": sampled,
        "theory_seconds": res["theory_seconds"],
        "claims": hmc_claims(res),
    }
    return summary, arrays


# ------------------------------------------------------------------------------------------ claims
def _monotone_decreasing(a, slack: float) -> bool:
    a = np.asarray(a)
    return bool(np.all(np.diff(a) <= slack))


def hmc_claims(res: dict) -> list[dict]:
    """Check the claims of spec §A.7 on the numbers of :func:`run_hmc`; one record per claim.

    Each record has ``id``, ``claim``, ``passed`` (bool) and ``detail`` (the numbers behind it).  The
    thresholds turn the spec's words into numbers: "wide margin" = 5 accuracy points, "near chance" =
    below 60%, "close to" = within 2 points, "monotonically" = no rise larger than 0.5 points (a finite
    test set of 1000 sequences), "small" off-diagonal = below 10% of the largest entry; ``U`` "close to the
    identity" at ``N = 1000`` = its deviation ``max|U - I|`` is below 5% of that at ``N = 10`` (it falls
    monotonically) and its off-diagonal entries are below 0.05.
    """
    claims = []

    def add(cid, text, passed, detail):
        claims.append({"id": cid, "claim": text, "passed": bool(passed), "detail": detail})

    def h1(s):
        a, gp = s["sweep"]["accuracy"], s["gp_all"]
        return (
            a[0] >= gp + 5 and _monotone_decreasing(a, 0.5) and abs(a[-1] - gp) <= 2.0,
            f"theory {a[0]:.1f}% at N={s['sweep']['widths'][0]} -> {a[-1]:.1f}% at "
            f"N={s['sweep']['widths'][-1]}, GP {gp:.1f}%",
        )

    def h2(s):
        a, b = s["alone_network"], s["alone_mask"]
        ok = a[0] >= 88 and np.all(a[1:] < 60) and b[0] > np.max(b[1:]) + 20
        return ok, f"network variant g, a1, d, a2 = {np.round(a, 1).tolist()}%; mask variant {np.round(b, 1).tolist()}%"

    def h3(s):
        return s["gp_all"] < s["gp_g"] - 3, f"all-paths GP {s['gp_all']:.1f}% vs path-g GP {s['gp_g']:.1f}%"

    def h5(s):
        U = s["sweep"]["U"]
        U10, Ubig = U[0], U[-1]
        g, a1, d, a2 = 0, 1, 2, 3
        off = np.abs(U10 - np.diag(np.diag(U10)))
        off[g, d] = off[d, g] = 0.0
        dev = np.abs(U - np.eye(4)).max(axis=(1, 2))
        off_big = np.abs(Ubig - np.diag(np.diag(Ubig))).max()
        ok = (
            U10[g, g] > 2
            and U10[d, d] > 2
            and U10[g, d] < -1
            and U10[a1, a1] < 1
            and U10[a2, a2] < 1
            and off.max() < 0.1 * np.abs(U10).max()
            and _monotone_decreasing(dev, 0.0)
            and dev[-1] < 0.05 * dev[0]
            and off_big < 0.05
        )
        return ok, (
            f"U(N=10): gg {U10[g, g]:.2f}, dd {U10[d, d]:.2f}, gd {U10[g, d]:.2f}, a1a1 {U10[a1, a1]:.2f}, "
            f"a2a2 {U10[a2, a2]:.2f}, other |off-diag| <= {off.max():.2f}; max|U - I| falls from "
            f"{dev[0]:.2f} to {dev[-1]:.3f} at N={s['sweep']['widths'][-1]} (off-diagonal <= {off_big:.3f})"
        )

    def h8(s):
        a, gp, U10 = s["noisy_sweep"]["accuracy"], s["noisy_sweep"]["gp_accuracy"], s["noisy_sweep"]["U"][0]
        return a[0] >= gp + 5 and _monotone_decreasing(a, 0.5) and U10[
            0, 1
        ] < 0, f"theory {a[0]:.1f}% at N=10 vs GP {gp:.1f}%; U_gd(N=10) = {U10[0, 1]:.2f}"

    def h8b(s):
        gain = s["noisy_sweep"]["accuracy"][0] - s["noisy_sweep"]["gp_accuracy"]
        kept = s["noisy_diagonal_only"][0] - s["noisy_sweep"]["gp_accuracy"]
        return kept < 0.5 * gain, f"gain over GP at N=10: full U {gain:.1f} points, diagonal only {kept:.1f} points"

    def h10(s):
        (good1, rand1), (unif2, rand2) = s["head_scores"]
        return (
            rand2 < rand1 < good1 < unif2,
            f"scores: (2)random {rand2:.2f} < (1)random {rand1:.2f} < (1)good {good1:.2f} < (2)uniform {unif2:.2f}",
        )

    s0 = res["sets"][0]
    for cid, text, fn in [
        ("H1", "finite-width theory well above the all-paths GP at N=10, decreasing towards it as N grows", h1),
        ("H2", "path g alone about 94% in the GP limit, the other paths alone near chance", h2),
        ("H3", "the task-irrelevant paths hurt the GP (all paths < path g alone)", h3),
        ("H5", "U at N=10 up-weights g and d with a negative g-d entry and suppresses a1, a2; U -> I as N grows", h5),
        ("H8", "noisier data, 2 paths: theory well above the g+d GP at N=10, decreasing towards it; U_gd < 0", h8),
        ("H8b", "noisier data: without the off-diagonal of U most of the gain disappears", h8b),
        ("H10", "head scores order (2)random < (1)random < (1)good < (2)uniform", h10),
    ]:
        ok, detail = fn(s0)
        add(cid, text, ok, detail)
    a10, gd = s0["sweep"]["accuracy"][0], s0["gp_gd"]
    add(
        "H4",
        "at N=10 the theory reaches (or exceeds) the paths-g+d GP line",
        a10 >= gd - 1.0,
        f"theory {a10:.1f}% vs g+d GP {gd:.1f}%",
    )
    al = res["alignment"]
    top_rn, top_gp = float(np.max(al["renormalised"][:5])), float(np.max(al["GP"][:5]))
    add(
        "H7",
        "the renormalised kernel aligns better with the labels (top-5 eigenvector overlap)",
        top_rn > 1.5 * top_gp,
        f"max overlap among the first 5 eigenvectors: renormalised {top_rn:.3f}, GP {top_gp:.3f}",
    )
    bc = res["block_contrast"]
    add(
        "H7b",
        "the renormalised kernel shows the two-class block structure more clearly than the GP kernel",
        bc["renormalised"] > 2 * bc["GP"] and bc["renormalised"] > 0.1,
        f"block contrast (within- minus between-class mean, in off-diagonal standard deviations): "
        f"renormalised {bc['renormalised']:.3f}, GP {bc['GP']:.3f}",
    )
    fails = {
        cid: [seed_set_label(s) for s in res["sets"] if not fn(s)[0]]
        for cid, fn in [("H1", h1), ("H2", h2), ("H3", h3), ("H5", h5), ("H8", h8), ("H8b", h8b), ("H10", h10)]
    }
    bad = {c: ks for c, ks in fails.items() if ks}
    add(
        "H9",
        f"H1-H3, H5, H8, H8b and H10 hold for all {len(res['sets'])} seed sets",
        not bad,
        "all hold" if not bad else f"failing (claim: seed sets) {bad}",
    )
    for net, label in (("main", "4-path"), ("noisy", "2-path")):
        entry = res["samples"].get(net, {}).get(10)
        if not entry:
            continue
        task = s0[net]
        sw = s0["sweep"] if net == "main" else s0["noisy_sweep"]
        th_pred, Ustar = sw["predictions"][0], sw["U"][0]
        for kind, smp in entry.items():
            ok, detail = _agreement(smp, th_pred, Ustar, task.y_test)
            add(
                "H6" if net == "main" else "H6b",
                f"{label} network, N=10: theory and {smp.kind} posterior samples agree",
                ok,
                detail,
            )
    return claims


def _agreement(smp, th_pred, Ustar, y_test) -> tuple[bool, str]:
    """Theory vs samples at one width: accuracy, correlation of means, sign pattern and size of U."""
    m = sampling.mean_agreement(smp.predictive_mean, th_pred.mean, y_test)
    u = sampling.order_parameter_agreement(smp.U_hat, Ustar)
    acc_s, acc_t, corr, signs, rel = m["sampled"], m["theory"], m["corr"], u["signs_equal"], u["max_rel_error"]
    ok = abs(acc_s - acc_t) <= 2.0 and corr > 0.95 and signs and rel <= 0.15
    return ok, (
        f"accuracy theory {acc_t:.1f}% vs sampled {acc_s:.1f}%; corr(means) {corr:.3f}; "
        f"sign pattern {'equal' if signs else 'differs'}; largest entries within {100 * rel:.0f}%"
    )


# ------------------------------------------------------------------------------------------ tables
def format_sweep(sw: dict) -> str:
    """Text table of a :func:`theory_sweep`: accuracy and solver convergence at every width."""
    rows = [f"{'N':>5} {'accuracy %':>10} {'max|dS/dU|/N':>13} {'Hessian min eig':>16} {'iterations':>10}"]
    for N, a, r in zip(sw["widths"], sw["accuracy"], sw["results"]):
        rows.append(f"{N:5d} {a:10.1f} {r.grad_max:13.1e} {r.hessian_min_eig:16.2e} {r.n_iter:10d}")
    return "\n".join(rows)


def sampling_records(res: dict, paper: dict | None = None) -> list[dict]:
    """One record per sampling run of this build (``res``) and of a committed run (``paper``).

    Keys: source, network, N, sampler, chains, warmup, samples, accuracy, accuracy_mcse (Monte Carlo standard
    error over chains, points), divergences, rhat_U, ess_U, steps (mean leapfrog steps per draw),
    max_tree_depth (the NUTS cap: at most ``2**depth - 1`` steps), seconds and ``U_hat``.
    """
    out = []
    for net, per_N in res["samples"].items():
        for N, entry in per_N.items():
            for smp in entry.values():
                sc, d = smp.settings["sampler"], smp.diagnostics
                out.append(
                    dict(
                        source="this build",
                        network=net,
                        N=int(N),
                        sampler=smp.kind,
                        chains=sc["num_chains"],
                        warmup=sc["num_warmup"],
                        samples=sc["num_samples"],
                        accuracy=smp.accuracy(res["sets"][0][net].y_test),
                        accuracy_mcse=smp.accuracy_mcse(res["sets"][0][net].y_test),
                        divergences=d["divergences"],
                        rhat_U=d["rhat_U_max"],
                        ess_U=d["ess_bulk_U_min"],
                        steps=d["mean_tree_steps"],
                        max_tree_depth=sc.get("max_tree_depth"),
                        seconds=smp.wall_seconds,
                        U_hat=smp.U_hat,
                    )
                )
    for e in (paper or {}).get("sampled", {}).values():
        sc, d = e["settings"]["sampler"], e["diagnostics"]
        out.append(
            dict(
                source="committed",
                network=e["network"],
                N=int(e["N"]),
                sampler=e["kind"],
                chains=sc["num_chains"],
                warmup=sc["num_warmup"],
                samples=sc["num_samples"],
                accuracy=e["accuracy_percent"],
                accuracy_mcse=e.get("accuracy_mcse_percent", float("nan")),
                divergences=d["divergences"],
                rhat_U=d["rhat_U_max"],
                ess_U=d["ess_bulk_U_min"],
                steps=d["mean_tree_steps"],
                max_tree_depth=sc.get("max_tree_depth"),
                seconds=e["wall_seconds"],
                U_hat=np.asarray(e["arrays"]["U_hat"]),
            )
        )
    return out


def format_sampling(records: list[dict], res: dict) -> str:
    """Text table of :func:`sampling_records` with the theory's accuracy and ``max|U_hat - U*| / max|U*|``.

    ``steps``: mean leapfrog steps per draw, with ``*`` when every tree reached the depth cap
    (``2**max_tree_depth - 1`` steps)."""
    rows = [
        f"{'source':>10} {'net':>5} {'N':>4} {'sampler':>13} {'budget':>11} {'acc.%':>5} {'MC se':>5} {'theory':>6} "
        f"{'dU rel':>6} {'div':>3} {'R-hat':>5} {'ESS':>5} {'steps':>6} {'sec':>5}"
    ]
    s0 = res["sets"][0]
    for r in records:
        sw = s0["sweep"] if r["network"] == "main" else s0["noisy_sweep"]
        i = list(sw["widths"]).index(r["N"])
        Ust = sw["U"][i]
        rel = np.abs(r["U_hat"] - Ust).max() / np.abs(Ust).max()
        budget = f"{r['chains']}x{r['warmup']}+{r['samples']}"
        cap = 2 ** r["max_tree_depth"] - 1 if r.get("max_tree_depth") else None
        steps = f"{r['steps']:.0f}" + ("*" if cap is not None and r["steps"] >= cap - 0.5 else " ")
        rows.append(
            f"{r['source']:>10} {r['network']:>5} {r['N']:4d} {r['sampler']:>13} {budget:>11} "
            f"{r['accuracy']:5.1f} {r['accuracy_mcse']:5.2f} {sw['accuracy'][i]:6.1f} {rel:6.3f} {r['divergences']:3d} "
            f"{r['rhat_U']:5.3f} {r['ess_U']:5.0f} {steps:>6} {r['seconds']:5.0f}"
        )
    return "\n".join(rows)


def seed_set_label(s: dict) -> str:
    """``"reference"`` for the reference's data, ``"numpy k"`` for numpy seed set ``k``."""
    return "reference" if s["seeds"].generator == "torch-reference" else f"numpy {s['k']}"


def format_seed_sets(res: dict) -> str:
    """Text table of the headline numbers of every seed set (accuracies in %, ``U`` at ``N = 10``)."""
    head = ("set", "GP all", "GP g", "GP g+d", "N=10", "N=1000", "U_gg", "U_dd", "U_gd", "noisy10", "noisyGP")
    rows = [("{:>9}" + " {:>6}" * 8 + " {:>7}" * 2).format(*head)]
    for s in res["sets"]:
        U, nsw = s["sweep"]["U"][0], s["noisy_sweep"]
        acc = (s["gp_all"], s["gp_g"], s["gp_gd"], s["sweep"]["accuracy"][0], s["sweep"]["accuracy"][-1])
        rows.append(
            f"{seed_set_label(s):>9}"
            + "".join(f" {v:6.1f}" for v in acc)
            + "".join(f" {v:6.2f}" for v in (U[0, 0], U[2, 2], U[0, 2]))
            + f" {nsw['accuracy'][0]:7.1f} {nsw['gp_accuracy']:7.1f}"
        )
    return "\n".join(rows)
