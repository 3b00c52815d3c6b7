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
"""

from attention_paths.base.version import __version__
from attention_paths.theory.action import Action, NotPositiveDefiniteError, Packing, closed_form_ua, partial_trace
from attention_paths.theory.architecture import Architecture
from attention_paths.theory.attention import AttentionLayer, QKFormHeads, WFormHeads, readout_vector
from attention_paths.theory.kernels import PathKernel, gp_kernel, path_kernel, renormalized_kernel
from attention_paths.theory.network import AttentionPathNetwork
from attention_paths.theory.paths import (
    n_paths,
    path_features,
    path_index,
    path_inputs,
    path_labels,
    path_list,
    path_vectors,
)
from attention_paths.theory.predictor import (
    Prediction,
    accuracy,
    generalization_error,
    kernel_alignment,
    kernel_target_alignment,
    predict,
)
from attention_paths.theory.scores import head_labels, head_scores, silence_heads
from attention_paths.theory.solver import SolverError, SolveResult, solve, solve_continuation

__all__ = [
    "Action",
    "NotPositiveDefiniteError",
    "Packing",
    "closed_form_ua",
    "partial_trace",
    "Architecture",
    "AttentionLayer",
    "QKFormHeads",
    "WFormHeads",
    "readout_vector",
    "PathKernel",
    "gp_kernel",
    "path_kernel",
    "renormalized_kernel",
    "AttentionPathNetwork",
    "n_paths",
    "path_features",
    "path_index",
    "path_inputs",
    "path_labels",
    "path_list",
    "path_vectors",
    "Prediction",
    "accuracy",
    "generalization_error",
    "kernel_alignment",
    "kernel_target_alignment",
    "predict",
    "head_labels",
    "head_scores",
    "silence_heads",
    "SolveResult",
    "SolverError",
    "solve",
    "solve_continuation",
    "__version__",
]
