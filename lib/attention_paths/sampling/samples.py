"""Posterior samples of one sampling run (arrays, summaries, Monte Carlo errors, files) and the sampler
settings."""

from __future__ import annotations

import hashlib
import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from attention_paths.base.fields import check_fields
from attention_paths.base.io import atomic_write
from attention_paths.sampling.diagnostics import ess_bulk
from attention_paths.sampling.names import SAMPLER_NAMES
from attention_paths.theory.predictor import accuracy

__all__ = [
    "SamplerConfig",
    "PosteriorSamples",
    "load_samples",
    "SamplesFileError",
    "LegacySamplesWarning",
    "SAMPLES_FORMAT",
]

SAMPLES_FORMAT = 2
"""The samples-file format this code writes: format 1 (before issue 37) had no digest; it still loads, with a
:class:`LegacySamplesWarning`.  Any other version is refused."""


SAMPLERS: dict = {}
"""The registered samplers by name (:func:`attention_paths.sampling.interface.register_sampler` fills it; the
table lives here because :func:`load_samples` checks a file's kind against it)."""


class SamplesFileError(ValueError):
    """A samples file that is damaged, of an unknown format, or whose content breaks its own settings."""


class LegacySamplesWarning(UserWarning):
    """A samples file of format 1, which has no digest: it loads, checked for content but not for damage."""


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

    # each field's range, checked at construction with its type (base.fields.check_fields); num_samples >= 2:
    # variances and Monte Carlo errors need two draws per chain
    RANGES = {
        "num_warmup": ">= 0",
        "num_samples": ">= 2",
        "num_chains": ">= 1",
        "seed": ">= 0",
        "target_accept": "(0, 1)",
        "max_tree_depth": ">= 1",
    }

    def __post_init__(self):
        check_fields(self)
        if self.chain_method not in ("sequential", "vectorized", "parallel"):
            raise ValueError(f"chain_method must be sequential, vectorized or parallel, got {self.chain_method!r}")


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
        """Write all arrays and settings to one ``.npz`` file, atomically, with the format version
        (:data:`SAMPLES_FORMAT`) and the SHA-256 digest of its content, which :func:`load_samples` checks."""
        meta = {
            "kind": self.kind,
            "settings": self.settings,
            "diagnostics": self.diagnostics,
            "wall_seconds": self.wall_seconds,
            "format": SAMPLES_FORMAT,
        }
        arrays = {"U": self.U, "mean_samples": self.mean_samples, "var_samples": self.var_samples}
        arrays.update({f"extra_{k}": v for k, v in self.extra.items()})
        arrays = {k: np.asarray(v) for k, v in arrays.items()}
        meta["sha256"] = content_digest(json.loads(json.dumps(meta)), arrays)
        arrays["meta_json"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
        return atomic_write(Path(path), lambda fh: np.savez_compressed(fh, **arrays))


def content_digest(meta: dict, arrays: dict) -> str:
    """SHA-256 of a samples file's content: its metadata (less the digest itself, as canonical JSON) and every
    array's name, dtype, shape and bytes, in name order."""
    h = hashlib.sha256(json.dumps({k: v for k, v in meta.items() if k != "sha256"}, sort_keys=True).encode())
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"\0{name}\0{a.dtype.str}\0{a.shape}\0".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def _read(path: Path) -> tuple[dict, dict]:
    try:
        with open(path, "rb") as fh, np.load(fh, allow_pickle=False) as f:  # our handle: closed on a bad file
            arrays = {k: f[k] for k in f.files}
        meta = json.loads(bytes(arrays.pop("meta_json")).decode())
    except FileNotFoundError:
        raise FileNotFoundError(f"sampling result {path} does not exist") from None
    except Exception as err:  # zip, CRC, JSON or key errors all mean a damaged file
        raise SamplesFileError(f"sampling result {path} is corrupted or not a sampling result ({err!r})") from None
    if not isinstance(meta, dict):
        raise SamplesFileError(f"sampling result {path} is corrupted: its metadata is not a JSON object")
    return meta, arrays


def _check_format(path: Path, meta: dict, arrays: dict, legacy: bool) -> None:
    version = meta.get("format", 1)
    if version == 1 and "sha256" not in meta:
        if not legacy:
            raise SamplesFileError(
                f"sampling result {path} is in the old format 1, which has no digest: an edit of its numbers cannot "
                "be told from a good file, so it is not read by default. If you made it and trust it, load it with "
                "load_samples(path, legacy=True) (its content is checked) and save it again to add a digest"
            )
        warnings.warn(
            f"sampling result {path} is in the old format 1, which has no digest: its content is checked but "
            "damage cannot be detected; save it again (PosteriorSamples.save) to add one",
            LegacySamplesWarning,
            stacklevel=3,
        )
        return
    if version != SAMPLES_FORMAT:
        raise SamplesFileError(
            f"sampling result {path} has format {version!r}, which this code does not know (it reads formats 1 "
            f"and {SAMPLES_FORMAT}): written by another version of attention-paths, or damaged"
        )
    if "sha256" not in meta:
        raise SamplesFileError(f"sampling result {path} (format {version}) lacks its digest: damaged or edited")
    if content_digest(meta, arrays) != meta["sha256"]:
        raise SamplesFileError(
            f"sampling result {path} does not match its digest: the file was damaged or edited after it was written"
        )


def _known_kinds() -> set:
    """The declared samplers' names (known without loading one: :data:`.names.SAMPLER_NAMES`) and those
    registered in this session."""
    return set(SAMPLER_NAMES) | set(SAMPLERS)


def _check_content(path: Path, meta: dict, arrays: dict) -> None:
    """The kind is a known sampler, the arrays have the shapes the recorded settings imply, and are finite."""
    kind = meta["kind"]
    if kind not in _known_kinds():
        raise SamplesFileError(
            f"sampling result {path} is of kind {kind!r}, which is no known sampler {sorted(_known_kinds())} "
            "(a sampler of your own: register it with sampling.register_sampler before loading its files)"
        )
    U, mean, var = arrays["U"], arrays["mean_samples"], arrays["var_samples"]
    s = meta["settings"] if isinstance(meta["settings"], dict) else {}
    smp = s.get("sampler", {}) if isinstance(s.get("sampler"), dict) else {}
    draws = (smp.get("num_chains"), smp.get("num_samples"))
    heads = s.get("arch", {}).get("heads") if isinstance(s.get("arch"), dict) else None
    Pi = int(np.prod(heads)) if heads else (U.shape[-1] if U.ndim == 4 else None)
    M = s.get("M", mean.shape[-1] if mean.ndim == 3 else None)
    want = {"U": (*draws, Pi, Pi), "mean_samples": (*draws, M), "var_samples": (*draws, M)}
    for name, a in (("U", U), ("mean_samples", mean), ("var_samples", var)):
        expected = tuple(a.shape[i] if n is None and i < a.ndim else n for i, n in enumerate(want[name]))
        if a.shape != expected:
            shown = "[" + ", ".join("?" if n is None else str(n) for n in want[name]) + "]"
            raise SamplesFileError(
                f"sampling result {path}: {name} has shape {list(a.shape)}, but its settings (chains, draws per "
                f"chain, paths, test points) say {shown}: cut or damaged"
            )
        if not np.issubdtype(a.dtype, np.floating) or not np.isfinite(a).all():
            bad = int(np.size(a) - np.isfinite(a).sum()) if np.issubdtype(a.dtype, np.floating) else "all"
            raise SamplesFileError(f"sampling result {path}: {name} has {bad} non-finite (NaN or infinite) entries")
    if (var < 0).any():
        raise SamplesFileError(f"sampling result {path}: var_samples has {int((var < 0).sum())} negative variances")
    _check_order_parameters(path, U)


def _check_order_parameters(path: Path, U: np.ndarray) -> None:
    """Each draw's ``U = W_1 W_1^T / N_1`` is a Gram matrix: symmetric and positive semi-definite (to rounding)."""
    if U.ndim < 2 or U.shape[-1] != U.shape[-2] or not U.size:
        return
    scale = max(float(np.abs(U).max()), 1e-300)
    asym = float(np.abs(U - np.swapaxes(U, -1, -2)).max())
    if asym > 1e-9 * scale:
        raise SamplesFileError(f"sampling result {path}: U is not symmetric (largest |U - U^T| {asym:.3g})")
    low = float(np.linalg.eigvalsh(U.reshape(-1, *U.shape[-2:])).min())
    if low < -1e-8 * scale:
        raise SamplesFileError(
            f"sampling result {path}: U has a draw with eigenvalue {low:.3g} < 0, so it is no W W^T / N (each "
            "draw's order parameter is positive semi-definite)"
        )


def load_samples(path, *, legacy: bool = False) -> PosteriorSamples:
    """Reload a run written by :meth:`PosteriorSamples.save` (e.g. one made on a GPU box), checked: its format
    version and digest, a known sampler kind, array shapes that agree with the recorded chains, draws, paths
    and test points, and finite values.  A damaged or inconsistent file is a :class:`SamplesFileError` naming
    the file and the problem, as is a draw's order parameter that is not symmetric positive semi-definite.  A
    format-1 file (no digest) is refused unless ``legacy=True``, with which it loads, content checked, with a
    :class:`LegacySamplesWarning` (issue 52: a file whose numbers can be edited unseen is never read as good
    by default)."""
    path = Path(path)
    meta, arrays = _read(path)
    missing = [k for k in ("kind", "settings", "diagnostics", "wall_seconds") if k not in meta] + [
        k for k in ("U", "mean_samples", "var_samples") if k not in arrays
    ]
    if missing:
        raise SamplesFileError(
            f"sampling result {path} is incomplete: it lacks {missing} (not written by "
            "PosteriorSamples.save, or damaged)"
        )
    _check_format(path, meta, arrays, legacy)
    _check_content(path, meta, arrays)
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
