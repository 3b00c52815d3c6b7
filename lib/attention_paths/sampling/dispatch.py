"""``sample(name, ...)``: posterior samples by the registered sampler of that name, under one warning policy.

Loading this module registers the two built-in samplers, in this order: ``"rao-blackwell"``
(:mod:`.rao_blackwell`) and ``"full"`` (:mod:`.full`).  A third is one module with a :class:`~.interface.Sampler`
subclass and one :func:`~.interface.register_sampler` call (or one entry point, :mod:`.names`).
"""

from __future__ import annotations

import warnings

from attention_paths.sampling import full, rao_blackwell
from attention_paths.sampling.diagnostics import SamplingWarning
from attention_paths.sampling.interface import SAMPLERS, Sampler, get_sampler, register_sampler, unregister_sampler
from attention_paths.sampling.samples import PosteriorSamples, SamplerConfig
from attention_paths.theory.architecture import Architecture

__all__ = ["sample", "SAMPLERS", "Sampler", "get_sampler", "register_sampler", "unregister_sampler", "BUILTIN_SAMPLERS"]

for _builtin in (rao_blackwell.RaoBlackwellSampler(), full.FullWeightSampler()):
    if _builtin.name not in SAMPLERS:  # (a module reloaded in a session keeps the registered ones)
        register_sampler(_builtin)

BUILTIN_SAMPLERS = (rao_blackwell.RaoBlackwellSampler.name, full.FullWeightSampler.name)
"""The names of the built-in samplers, in registration order (``attention_paths.sampling.SAMPLER_KINDS``)."""

_NO_PATH_INPUTS = object()


def sample(
    kind: str,
    features_train,
    y,
    tau: float,
    arch: Architecture,
    features_test,
    *,
    config: SamplerConfig | None = None,
    progress: bool | None = None,
    warn: str | None = "always",
    path_inputs=_NO_PATH_INPUTS,
) -> PosteriorSamples:
    """Posterior samples by the registered sampler named ``kind`` (:data:`SAMPLERS`), on one set of inputs.

    Parameters
    ----------
    kind : a registered sampler's name: ``"rao-blackwell"`` (:func:`.rao_blackwell.sample_rao_blackwell`),
        ``"full"`` (:func:`.full.sample_full`) or one registered with :func:`register_sampler`
    features_train, features_test : [P, N0, Pi], [M, N0, Pi] path features
        (:func:`attention_paths.theory.paths.path_features`)
    y : [P] targets
    tau : likelihood variance, > 0
    arch : heads, widths and value/readout prior variances
    config : the sampler's config (its ``config_type``, e.g. :class:`.full.FullConfig` with the path inputs),
        or a plain :class:`SamplerConfig` lifted into it (:meth:`Sampler.configure`); default: the defaults
    progress : progress bars (``None``: unless quiet)
    warn : the warning policy for an unreliable run (:class:`SamplingWarning`: divergences, R-hat > 1.05),
        the one place it is set.  ``"always"`` (default): every run's warning is shown, even one repeating an
        earlier message and whatever filters the caller set; ``"ignore"`` silences a deliberately short run,
        ``"error"`` raises; ``None`` leaves the caller's warning filters in charge.
    path_inputs : deprecated; pass ``config=get_sampler("full").configure(settings, path_inputs=...)``

    Returns
    -------
    PosteriorSamples with ``kind`` as given

    Examples
    --------
    >>> import numpy as np
    >>> import attention_paths as ap
    >>> from attention_paths import sampling
    >>> X = np.random.default_rng(0).standard_normal((11, 3, 4))  # 8 training and 3 test inputs, 4 paths
    >>> cfg = sampling.SamplerConfig(num_warmup=5, num_samples=4, num_chains=1, seed=0)
    >>> smp = sampling.sample("rao-blackwell", X[:8], np.sign(X[:8, 0, 0]), 0.5, ap.Architecture.uniform((2, 2), 4),
    ...                       X[8:], config=cfg, progress=False, warn="ignore")
    >>> smp.kind, smp.U.shape, smp.mean_samples.shape
    ('rao-blackwell', (1, 4, 4, 4), (1, 4, 3))

    Long: its docstring (parameters and the samplers' contract) is half of it.
    """
    sampler = get_sampler(kind)
    if path_inputs is not _NO_PATH_INPUTS:
        warnings.warn(
            "sampling.sample(..., path_inputs=...) is deprecated: the path inputs are the full-weight sampler's "
            "own input; pass config=sampling.get_sampler('full').configure(settings, path_inputs=...)",
            DeprecationWarning,
            stacklevel=2,
        )
        config = sampler.configure(config, path_inputs=path_inputs)
    else:
        config = sampler.configure(config)
    if warn not in (None, "always", "ignore", "error", "default", "once", "module"):
        raise ValueError(f"warn must be a warnings action (always, ignore, error, ...) or None, got {warn!r}")
    with warnings.catch_warnings():
        if warn is not None:
            warnings.simplefilter(warn, SamplingWarning)
        smp = sampler.sample(features_train, y, tau, arch, features_test, config, progress)
    if not isinstance(smp, PosteriorSamples) or smp.kind != sampler.name:
        raise TypeError(
            f"sampler {sampler.name!r} ({type(sampler).__name__}) broke its contract: it must return "
            f"PosteriorSamples of kind {sampler.name!r}, got {type(smp).__name__} "
            f"{getattr(smp, 'kind', '')!r}".rstrip()
        )
    return smp
