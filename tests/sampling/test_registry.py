"""The sampler contract and registry (issue 35 §6): built-in samplers declared by name, a third sampler
registered in one call and dispatched to by ``sampling.sample``, sampler-specific inputs in the sampler's own
config, the warning policy in the dispatcher, and the toy check reading the samplers' declared widths."""

import dataclasses
import doctest
import warnings

import numpy as np
import pytest

import attention_paths as ap

sp = pytest.importorskip("attention_paths.sampling")
from attention_paths.sampling import dispatch, interface  # noqa: E402
from attention_paths.tasks import toy  # noqa: E402

TAU = 0.3
PROB = toy.make_toy_problem(P=12, M=9, seed=2)
ARCH = ap.Architecture.uniform((2, 2), 5)
ARGS = (PROB.features_train, PROB.y_train, TAU, ARCH, PROB.features_test)


@dataclasses.dataclass(frozen=True)
class GPLimitConfig(sp.SamplerConfig):
    """The toy sampler's own setting: ``gain``, the posterior of ``U`` is the point ``gain * I``."""

    gain: float = 1.0


class GPLimitSampler(sp.Sampler):
    """Exact sampling where it is exact: with ``U`` fixed at ``gain * I`` (the GP limit, rescaled), the posterior
    of the output at the test inputs is Gaussian with the GP predictor's mean and variance, so every draw's
    conditional mean and variance are those of ``ap.predict``."""

    name = "gp-limit"
    config_type = GPLimitConfig
    every_width = True

    def sample(self, features_train, y, tau, arch, features_test, config, progress=None):
        C, D, Pi = config.num_chains, config.num_samples, arch.n_paths
        U = np.broadcast_to(config.gain * np.eye(Pi), (C, D, Pi, Pi)).copy()
        pred = ap.predict(config.gain * np.eye(Pi), features_train, y, tau, features_test)
        mean = np.broadcast_to(pred.mean, (C, D, len(pred.mean))).copy()
        var = np.broadcast_to(pred.var, mean.shape).copy()
        settings = {"sampler": sp.nuts.recorded_settings(config), "tau": tau, "M": len(pred.mean)}
        settings["arch"] = {"heads": arch.heads, "widths": arch.widths, "sigma2": arch.sigma2}
        return sp.PosteriorSamples(self.name, settings, U, mean, var, {"gain": config.gain}, 0.0)


@dataclasses.dataclass(frozen=True)
class EchoConfig(sp.SamplerConfig):
    path_inputs: tuple | None = dataclasses.field(default=None, compare=False)
    message: str = ""


class EchoSampler(sp.Sampler):
    """A fake that returns known draws (``U[c, d] = (c * D + d) I``), echoes its path inputs in ``extra`` and
    raises a SamplingWarning when its config carries a message."""

    name = "echo"
    config_type = EchoConfig
    every_width = False

    def sample(self, features_train, y, tau, arch, features_test, config, progress=None):
        C, D, Pi, M = config.num_chains, config.num_samples, arch.n_paths, len(features_test)
        k = np.arange(C * D, dtype=float).reshape(C, D, 1, 1)
        if config.message:
            warnings.warn(config.message, sp.SamplingWarning, stacklevel=2)
        extra = {} if config.path_inputs is None else {"xi_train": config.path_inputs[0]}
        settings = {"sampler": sp.nuts.recorded_settings(config), "M": M}
        return sp.PosteriorSamples(
            "echo", settings, k * np.eye(Pi), np.zeros((C, D, M)), np.zeros((C, D, M)), {}, 0.0, extra
        )


@pytest.fixture
def registered():
    """The two test samplers, registered for one test and removed after it."""
    added = [sp.register_sampler(GPLimitSampler()), sp.register_sampler(EchoSampler())]
    yield added
    for s in added:
        sp.unregister_sampler(s.name)


def test_the_built_in_samplers_declare_their_contract():
    assert tuple(sp.SAMPLERS)[:2] == sp.SAMPLER_KINDS == dispatch.BUILTIN_SAMPLERS == ("rao-blackwell", "full")
    rb, full = sp.get_sampler("rao-blackwell"), sp.get_sampler("full")
    assert isinstance(rb, sp.Sampler) and isinstance(full, sp.Sampler)
    assert (rb.config_type, full.config_type) == (sp.RaoBlackwellConfig, sp.FullConfig)
    assert (rb.every_width, full.every_width) == (True, False)  # the toy check runs "full" at its full_widths only
    assert sp.SAMPLERS is interface.SAMPLERS
    with pytest.raises(ValueError, match=r"sampler kind must be one of \('rao-blackwell', 'full'.*got 'gibbs'"):
        sp.get_sampler("gibbs")


def test_sampler_specific_inputs_travel_in_the_samplers_own_config():
    shared = sp.SamplerConfig(num_warmup=7, num_samples=3, num_chains=1, seed=4)
    xi = (PROB.path_inputs("train"), PROB.path_inputs("test"))
    full_cfg = sp.get_sampler("full").configure(shared, path_inputs=xi)
    rb_cfg = sp.get_sampler("rao-blackwell").configure(shared, path_inputs=xi)  # not its input: left out
    assert type(full_cfg) is sp.FullConfig and full_cfg.path_inputs is xi
    assert type(rb_cfg) is sp.RaoBlackwellConfig and rb_cfg.max_gram_bytes == 2 * 1024**3
    for cfg in (full_cfg, rb_cfg):  # the shared settings, and only they, are recorded with the samples
        assert sp.nuts.recorded_settings(cfg) == dataclasses.asdict(shared)
    assert sp.get_sampler("full").configure(full_cfg) is full_cfg
    with pytest.raises(TypeError, match=r"sampler 'rao-blackwell' takes a RaoBlackwellConfig .* got a FullConfig"):
        sp.get_sampler("rao-blackwell").configure(full_cfg)
    with pytest.raises(ValueError, match=r"FullConfig.path_inputs must be the pair \(xi_train, xi_test\)"):
        sp.FullConfig(path_inputs=xi[0])


def test_a_third_sampler_is_one_class_and_one_registration(registered, tmp_path):
    cfg = sp.SamplerConfig(num_samples=3, num_chains=2)
    smp = sp.sample("gp-limit", *ARGS, config=sp.get_sampler("gp-limit").configure(cfg, gain=2.0))
    gp = ap.predict(2.0 * np.eye(4), PROB.features_train, PROB.y_train, TAU, PROB.features_test)
    assert smp.kind == "gp-limit" and smp.U.shape == (2, 3, 4, 4) and smp.diagnostics == {"gain": 2.0}
    np.testing.assert_array_equal(smp.U_hat, 2.0 * np.eye(4))
    np.testing.assert_array_equal(smp.mean_samples[1, 2], gp.mean)  # exact: every draw has the GP's mean
    np.testing.assert_allclose(smp.predictive_mean, gp.mean, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(smp.predictive_var, gp.var, rtol=1e-12)  # and its variance (no spread of means)
    plain = sp.sample("gp-limit", *ARGS, config=cfg)  # a plain SamplerConfig takes the sampler's defaults
    np.testing.assert_array_equal(plain.U_hat, np.eye(4))
    back = sp.load_samples(smp.save(tmp_path / "gp.npz"))  # a registered kind is a known kind
    np.testing.assert_array_equal(back.mean_samples, smp.mean_samples)
    sp.unregister_sampler("gp-limit")
    with pytest.raises(sp.SamplesFileError, match=r"gp.npz is of kind 'gp-limit', which is no known sampler"):
        sp.load_samples(tmp_path / "gp.npz")
    with pytest.raises(ValueError, match="got 'gp-limit'"):
        sp.sample("gp-limit", *ARGS)


def test_registration_is_checked(registered):
    with pytest.raises(ValueError, match=r"a sampler named 'echo' is already registered \(EchoSampler\)"):
        sp.register_sampler(EchoSampler())
    again = EchoSampler()
    assert sp.register_sampler(again, replace=True) is again and sp.get_sampler("echo") is again
    with pytest.raises(TypeError, match="register_sampler takes a Sampler instance, got the class EchoSampler"):
        sp.register_sampler(EchoSampler)

    class Nameless(EchoSampler):
        name = ""

    with pytest.raises(ValueError, match="sampler Nameless declares no name"):
        sp.register_sampler(Nameless())

    class Liar(EchoSampler):
        name = "liar"

    sp.register_sampler(Liar())
    registered.append(Liar())
    breach = r"sampler 'liar' \(Liar\) broke its contract: .* of kind 'liar', got PosteriorSamples 'echo'"
    with pytest.raises(TypeError, match=breach):
        sp.sample("liar", *ARGS, config=sp.SamplerConfig(num_samples=2, num_chains=1))


def test_known_draws_pass_through_the_dispatcher_and_the_old_keyword_still_works(registered):
    cfg = sp.SamplerConfig(num_samples=4, num_chains=2)
    smp = sp.sample("echo", *ARGS, config=cfg)
    np.testing.assert_array_equal(smp.U[1, 2], 6.0 * np.eye(4))  # U[c, d] = (c * 4 + d) I, as drawn
    xi = (PROB.path_inputs("train"), PROB.path_inputs("test"))
    with pytest.warns(DeprecationWarning, match=r"path_inputs=\.\.\.\) is deprecated: .*\.configure\(settings"):
        old = sp.sample("echo", *ARGS, path_inputs=xi, config=cfg)
    np.testing.assert_array_equal(old.extra["xi_train"], xi[0])  # delivered in the sampler's own config


def test_the_warning_policy_lives_in_the_dispatcher(registered):
    cfg = sp.get_sampler("echo").configure(sp.SamplerConfig(num_samples=2, num_chains=1), message="3 divergences")
    for _ in range(2):  # default "always": each run's warning is shown, a repeat too, whatever the caller filters
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("ignore")
            sp.sample("echo", *ARGS, config=cfg)
        assert [(w.category, str(w.message)) for w in seen] == [(sp.SamplingWarning, "3 divergences")]
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        sp.sample("echo", *ARGS, config=cfg, warn="ignore")  # a deliberately short run
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sp.SamplingWarning)
            sp.sample("echo", *ARGS, config=cfg, warn=None)  # the caller's filters decide
    assert seen == []
    with pytest.raises(sp.SamplingWarning, match="3 divergences"):
        sp.sample("echo", *ARGS, config=cfg, warn="error")
    with pytest.raises(ValueError, match="warn must be a warnings action"):
        sp.sample("echo", *ARGS, config=cfg, warn="loud")


def test_the_toy_check_reads_which_sampler_runs_at_which_width(registered, monkeypatch):
    """posterior_check runs a sampler at every width when it declares ``every_width``, else only at the config's
    ``full_widths`` (quick: 20 of 10, 20, 40): no table of sampler names in the task."""
    calls = []

    def fake_sample(kind, Xtr, y, tau, arch, Xte, *, config, progress=None):
        N = int(arch.widths[0])
        calls.append((N, kind, type(config).__name__))
        return dispatch.sample("echo", Xtr, y, tau, arch, Xte, config=sp.SamplerConfig(num_samples=2, num_chains=1))

    monkeypatch.setattr(sp, "sample", fake_sample)  # what tasks.toy.posterior_check calls
    toy.posterior_check("quick")
    assert calls == [
        (10, "rao-blackwell", "RaoBlackwellConfig"),
        (20, "rao-blackwell", "RaoBlackwellConfig"),
        (20, "full", "FullConfig"),
        (40, "rao-blackwell", "RaoBlackwellConfig"),
    ]
    calls.clear()
    monkeypatch.setattr(type(sp.get_sampler("full")), "every_width", True)  # declared cheap: every width
    toy.posterior_check("quick")
    assert [c[:2] for c in calls if c[1] == "full"] == [(10, "full"), (20, "full"), (40, "full")]


def test_the_dispatchers_docstring_example_runs():
    result = doctest.testmod(dispatch, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 5 and result.failed == 0


def test_a_registered_sampler_is_known_by_name_everywhere_without_an_edit(registered, capsys, monkeypatch):
    """Issue 35 §6: the registry's names (:data:`sampling.SAMPLER_NAMES`) are what ``oneshot.with_budget``, the
    toy check and the command line's ``--sampler`` and ``--samplers`` accept, so a third sampler is usable
    through them with no edit there; unregistered, it is refused again by all of them."""
    from attention_paths.__main__ import _parser, _subparser, main
    from attention_paths.tasks import oneshot

    assert tuple(sp.SAMPLER_NAMES) == ("rao-blackwell", "full", "gp-limit", "echo")
    assert sp.SAMPLER_NAMES.target("gp-limit") == f"{GPLimitSampler.__module__}:GPLimitSampler"
    budget = oneshot.with_budget({"sampler": {"num_chains": 2}}, {"kind": "gp-limit", "num_samples": 5})
    assert budget == {"sampler": {"num_chains": 2, "num_samples": 5}, "kind": "gp-limit"}
    for command in ("omniglot-theory", "reproduce"):
        sub = _subparser(_parser(), command)
        action = next(a for a in sub._actions if "--sampler" in a.option_strings)
        assert "gp-limit" in action.choices and "{rao-blackwell,full,gp-limit,echo}" in sub.format_help()
    seen = []
    monkeypatch.setattr("attention_paths.runs.experiments.run_experiment", lambda *a, **kw: seen.append(kw) or {})
    assert main(["omniglot-theory", "--sampler", "gp-limit", "--sampling", "1,2,3", "--out", "/tmp/x", "--quiet"]) == 0
    assert seen[-1]["budget"] == {"num_chains": 1, "num_warmup": 2, "num_samples": 3, "kind": "gp-limit"}
    assert main(["posterior", "--samplers", "gp-limit,rao-blackwell", "--out", "/tmp/x", "--quiet"]) == 0
    assert seen[-1]["samplers"] == "gp-limit,rao-blackwell"
    capsys.readouterr()
    sp.unregister_sampler("gp-limit")
    with pytest.raises(ValueError, match=r"sampling kind must be one of \('rao-blackwell', 'full', 'echo'\)"):
        oneshot.with_budget({"sampler": {}}, {"kind": "gp-limit"})
    for argv in (["omniglot-theory", "--sampler", "gp-limit"], ["posterior", "--samplers", "gp-limit"]):
        with pytest.raises(SystemExit):
            main([*argv, "--out", "/tmp/x"])
        assert "gp-limit" in capsys.readouterr().err
    with pytest.raises(ValueError, match="built-in sampler"):
        sp.unregister_sampler("full")


def test_the_toy_check_runs_the_samplers_it_is_given(registered, monkeypatch):
    """``posterior_check(samplers=...)`` runs any sampler by name (an every-width one at every width)."""
    calls = []

    def fake_sample(kind, Xtr, y, tau, arch, Xte, *, config, progress=None):
        calls.append((int(arch.widths[0]), kind))
        return dispatch.sample("echo", Xtr, y, tau, arch, Xte, config=sp.SamplerConfig(num_samples=2, num_chains=1))

    monkeypatch.setattr(sp, "sample", fake_sample)
    res = toy.posterior_check("quick", samplers="gp-limit,echo")
    assert calls == [(10, "gp-limit"), (20, "gp-limit"), (20, "echo"), (40, "gp-limit")]
    assert list(res.rows[1].agreement) == ["gp-limit", "echo"]
    with pytest.raises(ValueError, match=r"unknown sampler 'gibbs'; the samplers are \('rao-blackwell'"):
        toy.posterior_check("quick", samplers=("gibbs",))


def test_an_installed_packages_sampler_is_declared_by_its_entry_point(monkeypatch):
    """A package declares a sampler as an entry point (group ``attention_paths.samplers``): its name is known
    at once, without importing it, and ``get_sampler`` loads and registers it on first use."""
    from importlib import metadata

    from attention_paths.sampling import names

    target = f"{GPLimitSampler.__module__}:GPLimitSampler"
    eps = [metadata.EntryPoint("gp-limit", target, names.ENTRY_POINT_GROUP)]
    eps.append(metadata.EntryPoint("full", "elsewhere:Impostor", names.ENTRY_POINT_GROUP))  # never takes a built-in
    monkeypatch.setattr(names.metadata, "entry_points", lambda group: eps if group == names.ENTRY_POINT_GROUP else [])
    fresh = names.SamplerNames(names.BUILTIN_SAMPLER_TARGETS)
    assert tuple(fresh) == ("rao-blackwell", "full", "gp-limit") and fresh.target("full").startswith("attention_")
    monkeypatch.setattr(interface, "SAMPLER_NAMES", fresh)
    try:
        sampler = interface.get_sampler("gp-limit")
        assert isinstance(sampler, GPLimitSampler) and sp.SAMPLERS["gp-limit"] is sampler
    finally:
        sp.SAMPLERS.pop("gp-limit", None)
    fresh.declare("broken", "no_such_module_here:Sampler")
    with pytest.raises(ValueError, match=r"'broken' is declared as 'no_such_module_here:Sampler', which cannot"):
        interface.get_sampler("broken")
    assert doctest.testmod(names).failed == 0
