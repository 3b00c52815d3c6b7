"""Posterior samples of one sampling run (arrays, summaries, Monte Carlo errors, files) and the sampler
settings."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from attention_paths.base.io import atomic_write
from attention_paths.sampling.diagnostics import ess_bulk
from attention_paths.theory.predictor import accuracy

__all__ = ["SamplerConfig", "PosteriorSamples", "load_samples"]


@dataclass(frozen=True)
class SamplerConfig:
    """NUTS settings.

    Attributes
    ----------
    num_warmup, num_samples : warm-up (adaptation) steps and kept samples per chain
    num_chains : independent chains (R-hat needs two or more; with one it is reported as NaN, "not computed")
    seed : PRNG seed (runs with equal settings are bit-for-bit reproducible on one machine)
    chain_method : ``'sequential'`` (robust on CPU), ``'vectorized'`` (one device, batched) or ``'parallel'``
    target_accept : dual-averaging target acceptance probability
    max_tree_depth : NUTS tree-depth cap; ``None`` (default): 5 for the Rao-Blackwellised sampler, whose
        low-dimensional, well-conditioned posterior needs no longer trajectories (measured: the same ESS per
        draw as with 10, at 31 instead of 55 leapfrog steps per draw; ``benchmarks/README.md``), and 10 for
        the full-weight sampler
    """

    num_warmup: int = 500
    num_samples: int = 500
    num_chains: int = 4
    seed: int = 0
    chain_method: str = "sequential"
    target_accept: float = 0.8
    max_tree_depth: int | None = None

    def __post_init__(self):
        if self.num_samples < 2 or self.num_chains < 1 or self.num_warmup < 0:
            raise ValueError(
                f"need num_samples >= 2 (variances and Monte Carlo errors need two draws per chain), num_chains >= 1 "
                f"and num_warmup >= 0; got {self}"
            )
        if self.chain_method not in ("sequential", "vectorized", "parallel"):
            raise ValueError(f"chain_method must be sequential, vectorized or parallel, got {self.chain_method!r}")
        if self.max_tree_depth is not None and self.max_tree_depth < 1:
            raise ValueError(f"max_tree_depth must be a positive integer or None, got {self.max_tree_depth}")
        if not 0 < self.target_accept < 1:
            raise ValueError(f"target_accept must be in (0, 1), got {self.target_accept}")


@dataclass
class PosteriorSamples:
    """Posterior summaries of one sampling run.

    Attributes
    ----------
    kind : ``'full'`` or ``'rao-blackwell'``
    settings : sampler and problem settings (JSON-serialisable)
    U : [chains, draws, Pi, Pi] order parameter ``U(Theta_s) = W_1 W_1^T / N_1`` of every sample
    mean_samples : [chains, draws, M] per-sample test output (full: ``f(x*; Theta_s)``; RB: conditional mean)
    var_samples : [chains, draws, M] per-sample conditional variance (RB only; zeros for full)
    diagnostics : divergences, acceptance, R-hat and bulk ESS of the ``U`` entries and of test outputs
    wall_seconds : sampling time (compilation included)
    """

    kind: str
    settings: dict
    U: np.ndarray
    mean_samples: np.ndarray
    var_samples: np.ndarray
    diagnostics: dict
    wall_seconds: float
    extra: dict = field(default_factory=dict)

    @property
    def U_hat(self) -> np.ndarray:
        """Sampled order parameter: posterior mean of ``U(Theta)`` (T§13.2)."""
        return self.U.mean(axis=(0, 1))

    @property
    def predictive_mean(self) -> np.ndarray:
        """Posterior mean of the network output at the test inputs, [M]."""
        return self.mean_samples.mean(axis=(0, 1))

    @property
    def predictive_var(self) -> np.ndarray:
        """Posterior variance of the output (law of total variance for the RB sampler), [M]."""
        m = self.mean_samples.reshape(-1, self.mean_samples.shape[-1])
        return self.var_samples.reshape(m.shape).mean(0) + m.var(0, ddof=1)

    def accuracy(self, y) -> float:
        return accuracy(self.predictive_mean, y)

    def accuracy_mcse(self, y) -> float:
        """Monte Carlo standard error of :meth:`accuracy` (percentage points), from the spread of the chains'
        own accuracies (batch means over chains): ``std_c(acc_c) / sqrt(C)``; NaN with a single chain."""
        C = self.mean_samples.shape[0]
        if C < 2:
            return float("nan")
        per_chain = [accuracy(self.mean_samples[c].mean(axis=0), y) for c in range(C)]
        return float(np.std(per_chain, ddof=1) / np.sqrt(C))

    def U_mcse(self) -> np.ndarray:
        """Monte Carlo standard error of :attr:`U_hat`, from the bulk ESS of each entry, [Pi, Pi]."""
        U = self.U
        ess = ess_bulk(U)
        return U.reshape(-1, *U.shape[2:]).std(0, ddof=1) / np.sqrt(np.maximum(ess, 1.0))

    def mc_standard_error(self) -> np.ndarray:
        """Monte Carlo standard error of the predictive mean, from the bulk ESS of each test output, [M]."""
        m = self.mean_samples
        ess = ess_bulk(m)
        return m.reshape(-1, m.shape[-1]).std(0, ddof=1) / np.sqrt(np.maximum(ess, 1.0))

    def save(self, path) -> Path:
        """Write all arrays and settings to one ``.npz`` file, atomically."""
        meta = {
            "kind": self.kind,
            "settings": self.settings,
            "diagnostics": self.diagnostics,
            "wall_seconds": self.wall_seconds,
            "format": 1,
        }
        arrays = {
            "U": self.U,
            "mean_samples": self.mean_samples,
            "var_samples": self.var_samples,
            "meta_json": np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8),
        }
        arrays.update({f"extra_{k}": np.asarray(v) for k, v in self.extra.items()})
        return atomic_write(Path(path), lambda fh: np.savez_compressed(fh, **arrays))


def load_samples(path) -> PosteriorSamples:
    """Reload a run written by :meth:`PosteriorSamples.save` (e.g. one made on a GPU box)."""
    path = Path(path)
    try:
        with open(path, "rb") as fh, np.load(fh, allow_pickle=False) as f:  # our handle: closed on a bad file
            meta = json.loads(bytes(f["meta_json"]).decode())
            arrays = {k: f[k] for k in f.files}
    except FileNotFoundError:
        raise FileNotFoundError(f"sampling result {path} does not exist") from None
    except Exception as err:  # zip, JSON or key errors all mean a damaged file
        raise ValueError(f"sampling result {path} is corrupted or not a sampling result ({err!r})") from None
    missing = [k for k in ("kind", "settings", "diagnostics", "wall_seconds") if k not in meta] + [
        k for k in ("U", "mean_samples", "var_samples") if k not in arrays
    ]
    if missing:
        raise ValueError(
            f"sampling result {path} is incomplete: it lacks {missing} (not written by "
            "PosteriorSamples.save, or damaged)"
        )
    extra = {k[len("extra_") :]: v for k, v in arrays.items() if k.startswith("extra_")}
    return PosteriorSamples(
        kind=meta["kind"],
        settings=meta["settings"],
        U=arrays["U"],
        mean_samples=arrays["mean_samples"],
        var_samples=arrays["var_samples"],
        diagnostics=meta["diagnostics"],
        wall_seconds=meta["wall_seconds"],
        extra=extra,
    )
