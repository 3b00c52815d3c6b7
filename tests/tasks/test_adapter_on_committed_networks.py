"""Issue 51 "done when": the public adapter (``attention_paths.from_torch``) applied to every committed network
reproduces its committed theory run: the order parameter U* at the panel point (N = 10, tau = 0.5) to 1e-10
relative, the head scores and their order, and the gradient-descent order parameter to rounding (1e-12).  The adapter is
given only the network and the training episodes of the run (re-drawn from the run's own record); the solve is
a cold one from the GP point, the committed U* came from the grid's continuation."""

from pathlib import Path

import numpy as np
import pytest

import attention_paths as ap
from attention_paths.runs import experiments
from attention_paths.tasks.omniglot.training import load_network
from attention_paths.tasks.oneshot.data import training_episodes
from attention_paths.tasks.pruning.scores import score_order

DATA = Path(__file__).resolve().parents[2] / "data"
RUNS = sorted(p.name for p in (DATA / "omniglot-theory").glob("*-network") if (p / "summary.json").exists())


def test_every_committed_network_is_tested():
    assert len(RUNS) == 9 and "paper-sizes-paper-2x8-network" in RUNS


@pytest.mark.slow
@pytest.mark.parametrize("run", RUNS)
def test_the_adapter_reproduces_the_committed_order_parameter(run):
    res = experiments.load_run(DATA / "omniglot-theory" / run, "omniglot-theory", required=True)
    cfg = res.config
    net, _ = load_network(cfg["network"])
    episodes = training_episodes(res.network_record, cfg)
    X = ap.from_torch(net, episodes)  # the public route: a torch model and its inputs
    assert X.shape == (cfg["P"], 192, int(np.prod(res.heads))) and X.heads == tuple(res.heads)
    view = ap.adapt(net)
    np.testing.assert_allclose(view.gd_order_parameter(), res.panel.U_gd, rtol=1e-12, atol=1e-15)
    y = episodes.y.astype(float)
    arch = ap.Architecture.uniform(X.heads, cfg["panel_N"])
    U = ap.solve(ap.Action(ap.PathKernel(X), y, cfg["panel_tau"], arch), n_restarts=0).U
    U_star = res.panel.U
    assert np.abs(U - U_star).max() <= 1e-10 * np.abs(U_star).max()
    scores = ap.head_scores(U, X.heads)
    for got, committed in zip(scores, res.panel.head_scores, strict=True):
        np.testing.assert_allclose(got, committed, rtol=1e-9, atol=1e-12)
    assert score_order(scores) == score_order(res.panel.head_scores)
