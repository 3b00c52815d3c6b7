"""Theory-guided pruning of the trained transformer's attention heads (spec experiments §C, theory T§14).

The head score of the theory (T§14.1) sums ``|U_{pi pi'}|`` over the order-parameter entries whose paths use
the head.  Network-side pruning removes heads from the **trained** network, without retraining: the pruned
heads' outputs are zeroed and each layer's head sum is rescaled from ``1/sqrt(H)`` to ``1/sqrt(H - n)``.

Because the value path is linear, the network's output is a sum over attention paths,
``f(x) = sum_pi c_pi F_pi(x)`` with per-path outputs ``F_pi(x) = a^T V^(2,h2) V^(1,h1) W_in xi^pi(x)`` and
coefficients ``c_pi = prod_l m_(l, h_l) / sqrt(n_l)`` (``m`` = 1 for a kept head, ``n_l`` = heads kept in
layer ``l``).  :func:`~.network.path_outputs` computes ``F`` once per episode set; every pruned network is then one
matrix-vector product (:func:`~.network.pruned_outputs`), identical to running the pruned network
(checked against :meth:`InContextTransformer.set_pruned` in the tests and in the chapter).

``python -m attention_paths pruning --scale {quick,paper} --out DIR`` writes ``summary.json``
(:func:`~.experiment.run_pruning`).

Its modules: :mod:`.result` (the result type, heads and sets), :mod:`.network` (per-path outputs and
pruned networks), :mod:`.scores` (rankings and their statistics), :mod:`.experiment` (sizes, run, summary,
reader), :mod:`.claims`, :mod:`.tables` and :mod:`.cumulative` (heads removed one after another in a fixed order:
the curves of the theory-score, value-norm, reference and random orders, from a result's stored outputs).
"""

from attention_paths.tasks.pruning.claims import (
    IMPROVEMENT_SE,
    PRUNING_CLAIMS,
    c2_margin,
    claims_of,
    pruning_claims,
    theory_side_spearman,
)
from attention_paths.tasks.pruning.cumulative import (
    CumulativePruning,
    PruningCurve,
    cumulative_claims,
    cumulative_pruning,
)
from attention_paths.tasks.pruning.experiment import (
    PRUNING_EXPERIMENT,
    PruningExperimentConfig,
    live_theory,
    pruning_summary,
    read_pruning_run,
    run_pruning,
)
from attention_paths.tasks.pruning.heads import (
    REFERENCE_CUMULATIVE_ORDER,
    all_heads,
    heads_of_names,
    keeps_every_layer,
    reference_combinations,
)
from attention_paths.tasks.pruning.network import (
    correct,
    drop_with_error,
    path_coefficients,
    path_outputs,
    pruned_outputs,
    pruned_parameter_fraction,
    pruned_parameters,
)
from attention_paths.tasks.pruning.result import (
    ALL_HEADS,
    EVAL_SETS,
    HEADS,
    REFERENCE_COMBINATIONS,
    PrunedNetwork,
    PruningResult,
    RankCorrelation,
    head_name,
    parse_head_name,
    parse_heads,
)
from attention_paths.tasks.pruning.scores import (
    combinations_from_scores,
    magnitude_scores,
    score_order,
    score_stability,
    spearman_with_ci,
    theory_side_drops,
)
from attention_paths.tasks.pruning.tables import format_statistics, format_table

__all__ = [
    "HEADS",
    "ALL_HEADS",
    "EVAL_SETS",
    "REFERENCE_COMBINATIONS",
    "REFERENCE_CUMULATIVE_ORDER",
    "all_heads",
    "heads_of_names",
    "keeps_every_layer",
    "reference_combinations",
    "PruningExperimentConfig",
    "PRUNING_EXPERIMENT",
    "CumulativePruning",
    "PruningCurve",
    "cumulative_claims",
    "cumulative_pruning",
    "live_theory",
    "PrunedNetwork",
    "RankCorrelation",
    "PruningResult",
    "path_outputs",
    "path_coefficients",
    "pruned_outputs",
    "correct",
    "drop_with_error",
    "pruned_parameters",
    "pruned_parameter_fraction",
    "score_order",
    "combinations_from_scores",
    "magnitude_scores",
    "theory_side_drops",
    "spearman_with_ci",
    "score_stability",
    "run_pruning",
    "PRUNING_CLAIMS",
    "pruning_claims",
    "IMPROVEMENT_SE",
    "claims_of",
    "c2_margin",
    "theory_side_spearman",
    "pruning_summary",
    "read_pruning_run",
    "format_table",
    "format_statistics",
    "parse_heads",
    "parse_head_name",
    "head_name",
]
