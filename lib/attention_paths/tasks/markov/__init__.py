"""The hidden-Markov-chain sequence classification task of the paper (spec experiments §A).

A sequence is 30 hidden states in {+, -}; class ``y = +1`` repeats the previous state with probability
0.7, class ``y = -1`` with probability 0.3.  Each state is embedded as ``v_state + eta`` in 200
dimensions, a zero beginning-of-sequence (BOS) token is prepended and every token gets a one-hot
position code, so an input is ``x in R^{231 x 31}`` (``N0 = 231``, ``T = 31``).

Noise naming (the spec's "naming trap"): the generator draws three independent noise components,

============================  ==========================  =================================  =========
component                     direction                   reference implementation option    here
============================  ==========================  =================================  =========
paper "parallel" noise        along ``v+ + v-``           "parallel"                         ``sigma_sum``
paper "parallel" noise        along ``v+ - v-``           "perpendicular"                    ``sigma_diff``
paper ``sigma_perp``          198-dim out-of-plane        "out-of-plane"                     ``sigma_perp``
============================  ==========================  =================================  =========

so the paper's ``sigma_perp = 5`` ("noisier data") is ``sigma_perp=5`` here and "perpendicular = 5"
nowhere.

Heads are W-form matrices (T§2.2) with inverse temperature ``beta = 10``: the *good* head attends to the
previous token when it is in the same state and to the (zero) BOS token otherwise; the *uniform* head
attends uniformly; a *random* head has Gaussian entries and gives sharp, task-irrelevant attention.

The task is called ``markov`` (not ``hmc``): the project's samplers are Hamiltonian Monte Carlo.  Its
modules: :mod:`.data` (sequences), :mod:`.heads`, :mod:`.task` (seeds, the network's features, path
order parameters), :mod:`.mechanism` (the g-d mechanism), :mod:`.result` (the result type and its stored
layout), :mod:`.config` (the experiment's sizes per scale), :mod:`.experiment` (run, summary), :mod:`.layout1`
(the deprecated reader of layout-1 folders), :mod:`.claims` and :mod:`.tables`.  The command line's experiment
keeps the name ``hmc``.
"""

from attention_paths.base.deprecation import renamed
from attention_paths.tasks.markov.claims import markov_claims
from attention_paths.tasks.markov.data import (
    BETA,
    GENERATORS,
    N_FEATURES,
    N_STATES,
    embeddings,
    make_sequences,
    sample_states,
)
from attention_paths.tasks.markov.experiment import (
    MARKOV_EXPERIMENT,
    MarkovExperimentConfig,
    ablations,
    gp_gd_minus_g,
    markov_summary,
    paired_difference,
    read_markov_run,
    run_markov,
    sample_markov,
    seed_set_summary,
    theory_sweep,
    with_gp_gd_minus_g,
)
from attention_paths.tasks.markov.heads import good_head, random_head, uniform_head
from attention_paths.tasks.markov.mechanism import (
    cross_weight_ratio,
    difference_order_parameter,
    difference_scan,
    repeat_coordinate,
)
from attention_paths.tasks.markov.result import MarkovResult, MarkovSampledRun, SeedSet, WidthSweep
from attention_paths.tasks.markov.tables import format_sampling, format_seed_sets, format_sweep, sampling_records
from attention_paths.tasks.markov.task import (
    MAIN_ORDER,
    MAIN_PATHS,
    NOISY_PATHS,
    MarkovSeeds,
    MarkovTask,
    make_markov_task,
    single_path_U,
    subnetwork_U,
)

__all__ = [
    "N_FEATURES",
    "BETA",
    "N_STATES",
    "embeddings",
    "sample_states",
    "make_sequences",
    "GENERATORS",
    "MarkovSeeds",
    "MarkovTask",
    "make_markov_task",
    "MAIN_PATHS",
    "MAIN_ORDER",
    "NOISY_PATHS",
    "single_path_U",
    "subnetwork_U",
    "good_head",
    "uniform_head",
    "random_head",
    "repeat_coordinate",
    "difference_order_parameter",
    "cross_weight_ratio",
    "difference_scan",
    "MARKOV_EXPERIMENT",
    "MarkovResult",
    "SeedSet",
    "WidthSweep",
    "MarkovSampledRun",
    "MarkovExperimentConfig",
    "theory_sweep",
    "ablations",
    "paired_difference",
    "gp_gd_minus_g",
    "with_gp_gd_minus_g",
    "seed_set_summary",
    "run_markov",
    "sample_markov",
    "markov_summary",
    "read_markov_run",
    "markov_claims",
    "format_sweep",
    "sampling_records",
    "format_sampling",
    "format_seed_sets",
]

# The task's names before 0.3.0 said "HMC" (hidden Markov chain), which read as the project's Hamiltonian Monte
# Carlo samplers; they remain importable for one release, with a DeprecationWarning.
_DEPRECATED = {
    "HMCResult": "MarkovResult",
    "HMCSeeds": "MarkovSeeds",
    "HMCTask": "MarkovTask",
    "make_hmc_task": "make_markov_task",
    "run_hmc": "run_markov",
    "HMC_EXPERIMENT": "MARKOV_EXPERIMENT",
    "HMCExperimentConfig": "MarkovExperimentConfig",
    "hmc_summary": "markov_summary",
    "read_hmc_run": "read_markov_run",
    "sample_hmc": "sample_markov",
    "hmc_claims": "markov_claims",
    "SampledRun": "MarkovSampledRun",
}


__getattr__ = renamed(
    __name__,
    _DEPRECATED,
    globals().__getitem__,
    "{module}.{old} is deprecated; use markov.{new} (removed after 0.3)",
)
