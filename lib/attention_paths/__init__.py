"""attention_paths: the finite-width theory of attention paths in Bayesian linear-value transformers.

Reproduces and extends Tiberi, Mignacco, Irie & Sompolinsky, *Dissecting the Interplay of Attention
Paths in a Statistical Mechanics Theory of Transformers*, NeurIPS 2024 (arXiv:2405.15926).
Equation references "T§n" point to the project's theory specification, mirrored in the book's
Theory chapter.

Typical use::

    import attention_paths as ap
    feats = ap.path_features(ap.path_inputs(x, layers, r))          # [P, N0, Pi]
    action = ap.Action(ap.PathKernel(feats), y, tau, ap.Architecture.uniform((2, 2), N=50))
    res = ap.solve(action)                                           # res.U is the order parameter
    pred = ap.predict(res.U, feats, y, tau, feats_test)              # mean and variance
"""
from .action import Action, NotPositiveDefiniteError, Packing, closed_form_ua, partial_trace
from .architecture import Architecture
from .attention import AttentionLayer, QKFormHeads, WFormHeads, readout_vector
from .config import data_root, get_scale
from .kernels import PathKernel, gp_kernel, path_kernel, renormalized_kernel
from .network import AttentionPathNetwork
from .paths import n_paths, path_features, path_index, path_inputs, path_labels, path_list, path_vectors
from .predictor import (Prediction, accuracy, generalization_error, kernel_alignment, kernel_target_alignment,
                        predict)
from .scores import head_labels, head_scores, silence_heads
from .solver import SolveResult, SolverError, solve, solve_continuation
from .toy import ToyProblem, make_toy_problem, random_wform_layers

__version__ = "0.1.0"

from . import claims  # noqa: E402
from .experiments import reproducibility_report  # noqa: E402  (needs __version__)

__all__ = [
    "Action", "NotPositiveDefiniteError", "Packing", "closed_form_ua", "partial_trace",
    "Architecture",
    "AttentionLayer", "QKFormHeads", "WFormHeads", "readout_vector",
    "data_root", "get_scale", "reproducibility_report",
    "PathKernel", "gp_kernel", "path_kernel", "renormalized_kernel",
    "AttentionPathNetwork",
    "n_paths", "path_features", "path_index", "path_inputs", "path_labels", "path_list", "path_vectors",
    "Prediction", "accuracy", "generalization_error", "kernel_alignment", "kernel_target_alignment", "predict",
    "head_labels", "head_scores", "silence_heads",
    "SolveResult", "SolverError", "solve", "solve_continuation",
    "ToyProblem", "make_toy_problem", "random_wform_layers",
]
