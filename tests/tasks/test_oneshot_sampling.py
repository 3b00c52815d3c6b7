"""The omniglot-sampling experiment (issue 49 §2): posterior samples at chosen widths, each against a certified
theory solve at its own point; its results folder, claims and refusals."""

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from helpers import rewritten_run, synthetic_oneshot_data
from scipy.stats import spearmanr

import attention_paths as ap
from attention_paths import sampling
from attention_paths.runs import experiments, results
from attention_paths.tasks import oneshot as osh
from attention_paths.tasks.oneshot import sampling_run as osr

BUDGET = {"num_chains": 2, "num_warmup": 20, "num_samples": 20, "chain_method": "sequential"}


@pytest.fixture(scope="module")
def run():
    rng = np.random.default_rng(3)
    G = rng.standard_normal((16, 4))
    data = dataclasses.replace(synthetic_oneshot_data(rng), U_gd=G @ G.T)  # a GD order parameter with a pattern
    return osr.run_oneshot_sampling("quick", widths=(10,), tau=0.5, budget=BUDGET, data=data), data


def test_the_theory_point_is_the_grids_and_the_samples_are_compared_with_it(run):
    res, data = run
    grid = osh.theory_grid(data, (10, 100), (0.5,))
    for j, N in enumerate((10,)):
        np.testing.assert_allclose(res.U_theory[N], grid.U[0, j], atol=1e-6)
        assert res.solver[N]["converged"] and res.solver[N]["grad_max"] <= 1e-8
        run_N = res.sampled[N]
        assert run_N.settings["arch"]["widths"][0] == N and run_N.settings["tau"] == 0.5
        assert run_N.settings["sampler"]["num_samples"] == 20 and run_N.kind == "rao-blackwell"
        # the stored agreement is that of the stored order parameters
        want = sampling.order_parameter_agreement(run_N.U_hat, res.U_theory[N])
        assert {k: res.agreement[N][k] for k in want} == want
        mean = ap.predict(res.U_theory[N], data.features["train"], data.y["train"], 0.5, data.features["test"]).mean
        assert run_N.sets["test"]["theory"] == pytest.approx(100 * np.mean(np.sign(mean) == data.y["test"]))


def test_claims_follow_the_theory_runs_rule_per_width(run):
    res, _ = run
    (i3, i4) = osr.sampling_run_claims(res)
    assert (i3["id"], i4["id"]) == ("I3", "I4")  # one width: the theory run's ids
    r, agree = res.sampled[10], res.agreement[10]
    close = all(abs(r.sets[s]["theory"] - r.sets[s]["sampled"]) <= 2.5 for s in ("test", "MNIST", "FashionMNIST"))
    assert i3["passed"] == (close and r.corr > 0.9)
    rho = float(spearmanr(np.diag(res.U_gd), np.diag(res.U_theory[10])).statistic)
    assert i4["passed"] == (agree["signs_equal"] and agree["max_rel_error"] <= 0.25 and rho > 0.5)
    assert [i3, i4] == osh.claims.sampling_claims(10, r, res.U_theory[10], res.U_gd)
    # two widths: the ids name the width
    two = dataclasses.replace(
        res,
        sampled={10: r, 100: r},
        U_theory={10: res.U_theory[10], 100: 2 * res.U_theory[10]},
        agreement={10: agree, 100: osr._agreement(r.U_hat, 2 * res.U_theory[10])},
    )
    claims = osr.sampling_run_claims(two)
    assert [c["id"] for c in claims] == ["I3 (N=10)", "I4 (N=10)", "I3 (N=100)", "I4 (N=100)"]
    assert claims[3]["passed"] is False  # U* doubled: the sampled U is far from it


def test_a_written_run_reads_back_and_an_edited_agreement_is_refused(run, tmp_path):
    res, _ = run
    folder = tmp_path / "written" / "run"
    results.write(folder, *osr.oneshot_sampling_summary(res))
    back = experiments.load_run(folder, "omniglot-sampling")
    assert back.heads == (4, 4) and sorted(back.U_theory) == [10]
    for N in (10,):
        np.testing.assert_array_equal(back.U_theory[N], res.U_theory[N])
        np.testing.assert_array_equal(back.sampled[N].mean, res.sampled[N].mean)
    assert json.loads((folder / "summary.json").read_text())["claims"] == osr.sampling_run_claims(back)

    def edit(summary):
        summary["agreement"]["10"]["max_rel_error"] = 0.0

    with pytest.raises(ValueError, match=r"agreement\[10\]"):
        experiments.load_run(rewritten_run(tmp_path, folder, edit_summary=edit), "omniglot-sampling")


def test_bad_settings_are_refused_by_name():
    with pytest.raises(ValueError, match="v0_update"):
        osh.posterior.sampler_config("rao-blackwell", {"num_chains": 1, "v0_update": "collapsed"})
    cfg = osh.posterior.sampler_config("full", {"num_chains": 1, "v0_update": "collapsed"})
    assert type(cfg).__name__ == "FullConfig" and cfg.v0_update == "collapsed"
    assert type(osh.posterior.sampler_config("full", {"num_chains": 1})) is sampling.SamplerConfig
    with pytest.raises(ValueError, match=r"OneShotSamplingConfig\.tau must be > 0, got 0\.0"):
        osr.run_oneshot_sampling("quick", tau=0.0)
    with pytest.raises(ValueError, match=r"OneShotSamplingConfig\.widths must be >= 1, got 0"):
        osr.run_oneshot_sampling("quick", widths=(0,))


def test_the_paper_config_is_the_references_launch_point_with_at_least_as_many_transitions():
    cfg = osr.ONESHOT_SAMPLING["paper"]
    assert (cfg.widths, cfg.tau, cfg.kind, cfg.sampler["seed"]) == ((500,), 0.25, "rao-blackwell", 4)
    s = cfg.sampler  # at least the launch's 10 x (20 + 20) transitions, with a warm-up long enough to adapt
    assert s["num_chains"] * (s["num_warmup"] + s["num_samples"]) >= 10 * (20 + 20) and s["num_warmup"] >= 50
    # and the committed run is this config's
    folder = Path(__file__).resolve().parents[2] / "data" / "omniglot-sampling" / "paper-network-N500"
    summary = json.loads((folder / "summary.json").read_text())
    assert {k: summary["config"]["sampler"][k] for k in s} == s
