"""What a stored hidden-Markov-chain result keeps (the ``hmc`` experiment's ``stored`` function in
:data:`attention_paths.runs.registry.EXPERIMENTS`)."""

from __future__ import annotations

import dataclasses

import numpy as np

from attention_paths.tasks.markov.result import MarkovResult

__all__ = ["slim_hmc_result"]


def slim_hmc_result(res: MarkovResult) -> MarkovResult:
    """The hmc result (:class:`~attention_paths.tasks.markov.MarkovResult`) without the raw input sequences of
    the seed sets other than the headline one (the chapter uses only their sweeps; 57 MB per task at the
    paper's 1000 test sequences)."""

    def slim(task):
        return None if task is None else dataclasses.replace(task, x_train=np.empty(0), x_test=np.empty(0))

    sets = [res.sets[0]] + [dataclasses.replace(s, main=slim(s.main), noisy=slim(s.noisy)) for s in res.sets[1:]]
    return dataclasses.replace(res, sets=sets)
