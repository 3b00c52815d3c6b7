"""The theory as a tool on a reader's own network (issue 51): the inputs it reads (:mod:`.inputs`), the ``analyse``
and ``prune`` experiments (:mod:`.analyse`, :mod:`.prune`) and the example network and task of the chapter "Your
own network" (:mod:`.example`)."""

from attention_paths.tasks.yours.analyse import (
    ANALYSE,
    AnalyseConfig,
    AnalyseResult,
    analyse_summary,
    read_analyse_run,
    run_analyse,
)
from attention_paths.tasks.yours.example import MultiheadStack, example_data, example_model, marked_tokens, train_stack
from attention_paths.tasks.yours.inputs import UserData, load_data, load_model
from attention_paths.tasks.yours.prune import PRUNE, PruneConfig, PruneResult, prune_summary, read_prune_run, run_prune

__all__ = [
    "ANALYSE",
    "AnalyseConfig",
    "AnalyseResult",
    "analyse_summary",
    "read_analyse_run",
    "run_analyse",
    "MultiheadStack",
    "example_data",
    "example_model",
    "marked_tokens",
    "train_stack",
    "UserData",
    "load_data",
    "load_model",
    "PRUNE",
    "PruneConfig",
    "PruneResult",
    "prune_summary",
    "read_prune_run",
    "run_prune",
]
