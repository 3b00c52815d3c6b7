"""Posterior sampling, the ground truth for the theory (spec T§13): the samplers' names (:mod:`.names`), the
sampler contract and registry (:mod:`.interface`), the dispatcher :func:`sample` (:mod:`.dispatch`), two NUTS
samplers (:mod:`.rao_blackwell`, :mod:`.full`, on the shared core :mod:`.nuts`), their results and files
(:mod:`.samples`), diagnostics (:mod:`.diagnostics`) and the agreement with the theory (:mod:`.agreement`).

JAX, numpyro and arviz are optional dependencies (``pip install attention-paths[sampling]``) that take
seconds to start, and JAX reads ``XLA_FLAGS`` (the CPU device count) only when it starts; so the names below
load their module on first use, and importing :mod:`attention_paths.sampling` costs nothing: it loads no JAX,
numpy or torch (the command line reads :data:`SAMPLER_NAMES` for its ``--sampler`` choices).
"""

from __future__ import annotations

import importlib
import os
import sys

from attention_paths.base import config
from attention_paths.sampling.names import BUILTIN_SAMPLER_TARGETS, SAMPLER_NAMES

SAMPLER_KINDS = tuple(BUILTIN_SAMPLER_TARGETS)
"""The names of the two built-in samplers (:func:`sample`), ``("rao-blackwell", "full")``: the Rao-Blackwellised
one and the full-weight one (read without starting JAX).  :data:`SAMPLER_NAMES` names every sampler usable by
name (the built-ins, installed packages' and those registered in this session); :data:`SAMPLERS` holds the
loaded ones."""

_LAZY = {
    "sample": "dispatch",
    "SAMPLERS": "dispatch",
    "get_sampler": "dispatch",
    "register_sampler": "dispatch",
    "unregister_sampler": "dispatch",
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
    "mean_agreement": "agreement",
    "order_parameter_agreement": "agreement",
}

__all__ = ["SAMPLER_KINDS", "SAMPLER_NAMES", *_LAZY]


def __getattr__(name: str):
    # deliberate lazy import of the optional dependencies (JAX, numpyro, arviz) and of numpy: see the docstring
    if name in _LAZY:
        # before JAX starts: one CPU device per core (up to 8), so that chains with chain_method="parallel"
        # run side by side in a chapter or a test as on the command line (XLA_FLAGS, when it sets a count, wins)
        config.expose_cpu_devices(min(os.cpu_count() or 1, 8), jax_started="jax" in sys.modules)
        return getattr(importlib.import_module(f"attention_paths.sampling.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
