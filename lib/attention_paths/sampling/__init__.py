"""Posterior sampling, the ground truth for the theory (spec T§13): the sampler contract and registry
(:mod:`.interface`), the dispatcher :func:`sample` (:mod:`.dispatch`), two NUTS samplers (:mod:`.rao_blackwell`,
:mod:`.full`, on the shared core :mod:`.nuts`), their results and files (:mod:`.samples`), diagnostics
(:mod:`.diagnostics`) and the agreement with the theory (:mod:`.agreement`).

JAX, numpyro and arviz are optional dependencies (``pip install attention-paths[sampling]``) that take
seconds to start, and JAX reads ``XLA_FLAGS`` (the CPU device count) only when it starts; so the names below
load their module on first use, and importing :mod:`attention_paths.sampling` costs nothing.
"""

from __future__ import annotations

import importlib
import os
import sys

from attention_paths.base import config
from attention_paths.sampling.agreement import mean_agreement, order_parameter_agreement

SAMPLER_KINDS = ("rao-blackwell", "full")
"""The names of the two built-in samplers (:func:`sample`): the Rao-Blackwellised one and the full-weight one
(spelt out here so that reading them starts no JAX; :data:`SAMPLERS` holds every registered sampler)."""

_LAZY = {
    "sample": "dispatch",
    "SAMPLERS": "dispatch",
    "get_sampler": "dispatch",
    "register_sampler": "dispatch",
    "Sampler": "interface",
    "sample_full": "full",
    "FullConfig": "full",
    "sample_rao_blackwell": "rao_blackwell",
    "RaoBlackwellConfig": "rao_blackwell",
    "DEFAULT_TREE_DEPTH": "nuts",
    "SamplerConfig": "samples",
    "PosteriorSamples": "samples",
    "load_samples": "samples",
    "SamplesFileError": "samples",
    "LegacySamplesWarning": "samples",
    "SAMPLES_FORMAT": "samples",
    "SamplingWarning": "diagnostics",
    "ess_bulk": "diagnostics",
    "rhat": "diagnostics",
    "chain_diagnostics": "diagnostics",
}

__all__ = ["SAMPLER_KINDS", "mean_agreement", "order_parameter_agreement", *_LAZY]


def __getattr__(name: str):
    # deliberate lazy import of the optional dependencies (JAX, numpyro, arviz): see the module docstring
    if name in _LAZY:
        # before JAX starts: one CPU device per core (up to 8), so that chains with chain_method="parallel"
        # run side by side in a chapter or a test as on the command line (XLA_FLAGS, when it sets a count, wins)
        config.expose_cpu_devices(min(os.cpu_count() or 1, 8), jax_started="jax" in sys.modules)
        return getattr(importlib.import_module(f"attention_paths.sampling.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
