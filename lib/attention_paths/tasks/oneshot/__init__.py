"""The finite-width theory on top of the trained one-shot Omniglot transformer (spec experiments §B.7-B.11).

The gradient-descent-trained network (:mod:`attention_paths.tasks.omniglot.training`) fixes the attention: its trained
query/key weights and the token inputs ``x0`` go to the theory unchanged, and the value weights become
Bayesian.  With ``L = 2`` layers of ``H = 4`` heads there are 16 attention paths and ``U`` is 16 x 16; the
analysis reads the architecture from the extracted data (``OneShotData.heads``), so any other works the same.

Pipeline (:func:`run_oneshot`):

1. :func:`extract` -- path features of a balanced training set (the first training draws of the network,
   re-created from the training seed), of a validation set (meta-validation characters; used to select the
   temperature, spec OP-E6), of the in-distribution test set (meta-test characters) and of the two
   out-of-distribution sets (MNIST 0/1 and FashionMNIST T-shirt/trouser); the trained network's own
   accuracy on the very same episodes; the gradient-descent "order parameter" (:func:`gd_order_parameter`).
2. :func:`theory_grid` -- the order parameter on the widths x temperatures grid (continuation from the
   widest network down, at every temperature) and the accuracy of the mean predictor on every set; the GP
   limit over its temperature grid.
3. :func:`select_temperatures` -- per width, the temperature with the best accuracy on the validation set
   (our protocol) or on the test set itself (the paper's protocol).
4. The ``N = 10``, ``tau = 0.5`` panel: ``U*``, head scores and the label alignment of the kernels.
5. Posterior sampling at ``N = 10`` (:func:`sample_oneshot`): full-weight NUTS at the paper scale (the
   paper's protocol), Rao-Blackwellised NUTS at the quick scale (``--sampler`` chooses).

``python -m attention_paths omniglot-theory --scale {quick,paper} --out DIR`` writes ``summary.json`` and
``arrays.npz``; :func:`attention_paths.runs.experiments.load_run` reads them back (e.g. a paper-size run made
elsewhere).

Modules: :mod:`.data` (extraction), :mod:`.grid` (the theory over the grid), :mod:`.posterior` (sampling),
:mod:`.experiment` (sizes, run, results folder), :mod:`.result` (the result type),
:mod:`.claims` and :mod:`.tables`; :mod:`.sampling_run` is the ``omniglot-sampling`` experiment (posterior
samples at chosen widths, each against the theory at its point).
"""

from attention_paths.tasks.oneshot.claims import oneshot_claims
from attention_paths.tasks.oneshot.data import (
    EVAL_SETS,
    LEGACY_HEADS,
    SET_TITLES,
    OneShotData,
    balanced_indices,
    extract,
    gd_order_parameter,
    load_oneshot_data,
    save_oneshot_data,
)
from attention_paths.tasks.oneshot.experiment import (
    ONESHOT_EXPERIMENT,
    OneShotExperimentConfig,
    oneshot_summary,
    read_oneshot_run,
    restricted_grid,
    run_oneshot,
)
from attention_paths.tasks.oneshot.grid import (
    Grid,
    edge_scan,
    gp_line,
    merge_grids,
    paired_comparison,
    panel,
    select_temperatures,
    theory_grid,
)
from attention_paths.tasks.oneshot.posterior import sample_oneshot, sampled_run, with_budget
from attention_paths.tasks.oneshot.result import (
    OneShotPanel,
    OneShotResult,
    PairedPredictions,
    SampledRun,
    TemperatureChoice,
)
from attention_paths.tasks.oneshot.tables import format_selection

__all__ = [
    "SET_TITLES",
    "EVAL_SETS",
    "LEGACY_HEADS",
    "OneShotData",
    "balanced_indices",
    "extract",
    "gd_order_parameter",
    "save_oneshot_data",
    "load_oneshot_data",
    "OneShotExperimentConfig",
    "ONESHOT_EXPERIMENT",
    "run_oneshot",
    "restricted_grid",
    "OneShotResult",
    "TemperatureChoice",
    "OneShotPanel",
    "PairedPredictions",
    "SampledRun",
    "oneshot_summary",
    "read_oneshot_run",
    "Grid",
    "theory_grid",
    "gp_line",
    "select_temperatures",
    "panel",
    "edge_scan",
    "paired_comparison",
    "merge_grids",
    "sample_oneshot",
    "sampled_run",
    "with_budget",
    "oneshot_claims",
    "format_selection",
]
