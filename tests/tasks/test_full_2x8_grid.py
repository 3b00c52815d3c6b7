"""The 2 x 8 network's theory on the paper's full 10 x 10 grid (issue 48 §2), computed with the quasi-Newton solver
(the network's committed theory run), against the restricted 4 x 6 grid and its tau = 0.01 supplement that the
solver before it computed (kept in data/superseded): every point they share has the same order parameter (to the
solvers' precision, and across CPUs) and the same accuracies."""

from pathlib import Path

import numpy as np
import pytest

from attention_paths.runs import experiments
from attention_paths.runs.results import verify_files

DATA = Path(__file__).resolve().parents[2] / "data"
FULL = DATA / "omniglot-theory" / "paper-sizes-paper-2x8-network"
SUPERSEDED = DATA / "superseded"


@pytest.fixture(scope="module")
def runs():
    full = experiments.load_run(FULL, "omniglot-theory")
    parts = [
        experiments.load_run(SUPERSEDED / f"omniglot-theory-paper-2x8-{name}", "omniglot-theory")
        for name in ("restricted-grid", "low-tau")
    ]
    return full, parts


def test_the_full_grid_is_the_papers_and_its_record_names_a_clean_commit(runs):
    full, _ = runs
    assert [int(n) for n in full.widths] == [10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000]
    assert [float(t) for t in full.taus] == [0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5]
    assert np.asarray(full.U).shape == (10, 10, 64, 64)
    record = verify_files(FULL)
    assert record["code"]["git_dirty"] is False and len(record["code"]["git_commit"]) == 40
    assert record["wall_seconds"] > 0 and record["peak_rss_kb"] > 0
    assert full.solver["max_grad"] <= 1e-8


@pytest.mark.parametrize("part", [0, 1])
def test_every_shared_point_agrees_with_the_restricted_grids(runs, part):
    full, parts = runs
    other = parts[part]
    fw, ft = [float(n) for n in full.widths], [round(float(t), 6) for t in full.taus]
    for i, t in enumerate(other.taus):
        for j, N in enumerate(other.widths):
            a, b = ft.index(round(float(t), 6)), fw.index(float(N))
            U_full, U_other = np.asarray(full.U)[a, b], np.asarray(other.U)[i, j]
            # two solvers, two CPUs (the restricted grids ran on others): agreement to their precision
            assert np.abs(U_full - U_other).max() <= 1e-9 * np.abs(U_other).max(), (t, N)
            for s in other.grid_accuracy:
                assert np.asarray(full.grid_accuracy[s])[a, b] == np.asarray(other.grid_accuracy[s])[i, j], (s, t, N)
