"""attention_paths: the finite-width theory of attention paths in Bayesian linear-value transformers.

Reproduces and extends Tiberi, Mignacco, Irie & Sompolinsky, *Dissecting the Interplay of Attention
Paths in a Statistical Mechanics Theory of Transformers*, NeurIPS 2024 (arXiv:2405.15926).
Equation references "T§n" point to the project's theory specification, mirrored in the book's
Theory chapter.

This namespace is the theory's public API (:mod:`attention_paths.theory`).  The layers above it are
subpackages: :mod:`~attention_paths.sampling` (posterior samplers), :mod:`~attention_paths.tasks` (each
chapter's computation), :mod:`~attention_paths.runs` (results folders, the pipeline, claims) and
:mod:`~attention_paths.plotting`; :mod:`~attention_paths.base` (configuration, files, provenance) is below
them all.

Typical use::

    import attention_paths as ap
    feats = ap.path_features(ap.path_inputs(x, layers, r))          # [P, N0, Pi]
    action = ap.Action(ap.PathKernel(feats), y, tau, ap.Architecture.uniform((2, 2), N=50))
    res = ap.solve(action)                                           # res.U is the order parameter
    pred = ap.predict(res.U, feats, y, tau, feats_test)              # mean and variance

The names load their theory module (and torch, numpy, scipy) on first use: ``python -m attention_paths``
imports this package before it reads its arguments, and answers ``--help`` or a bad argument without them.
"""

from __future__ import annotations

import importlib

from attention_paths.base.version import __version__

# the theory's public names, each with the module of attention_paths.theory that defines it
_THEORY = {
    "Action": "action",
    "AdapterError": "adapter",
    "TheoryView": "adapter",
    "adapt": "adapter",
    "from_torch": "adapter",
    "NotPositiveDefiniteError": "action",
    "Packing": "action",
    "closed_form_ua": "action",
    "partial_trace": "action",
    "Architecture": "architecture",
    "AttentionLayer": "attention",
    "QKFormHeads": "attention",
    "WFormHeads": "attention",
    "readout_vector": "attention",
    "PathKernel": "kernels",
    "gp_kernel": "kernels",
    "path_kernel": "kernels",
    "renormalized_kernel": "kernels",
    "AttentionPathNetwork": "network",
    "n_paths": "paths",
    "features_to_path_inputs": "paths",
    "path_features": "paths",
    "path_index": "paths",
    "path_inputs": "paths",
    "path_labels": "paths",
    "path_list": "paths",
    "path_vectors": "paths",
    "Prediction": "predictor",
    "accuracy": "predictor",
    "generalization_error": "predictor",
    "kernel_alignment": "predictor",
    "kernel_target_alignment": "predictor",
    "predict": "predictor",
    "head_labels": "scores",
    "head_scores": "scores",
    "silence_heads": "scores",
    "SolverError": "solver",
    "SolveResult": "solver",
    "solve": "solver",
    "solve_continuation": "solver",
}

__all__ = [*_THEORY, "__version__"]


def __getattr__(name: str):
    # deliberate lazy import (PEP 562) of the theory and its dependencies: see the module docstring
    if name in _THEORY:
        value = getattr(importlib.import_module(f"attention_paths.theory.{_THEORY[name]}"), name)
        globals()[name] = value  # later look-ups skip this function
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted({*globals(), *_THEORY})
