"""Run-time switches (issue 24, group 3): booleans parsed strictly, every variable read in one place."""

import pytest

from attention_paths.base import config
from attention_paths.base.progress import quiet


@pytest.mark.parametrize("value", ["1", "true", "TRUE", "yes", "on", " On "])
def test_boolean_switches_on(monkeypatch, value):
    monkeypatch.setenv("ATTENTION_PATHS_OFFLINE", value)
    monkeypatch.setenv("ATTENTION_PATHS_QUIET", value)
    assert config.offline() is True and config.quiet_requested() is True and quiet()


@pytest.mark.parametrize("value", ["0", "false", "False", "no", "off", ""])
def test_boolean_switches_off(monkeypatch, value):
    monkeypatch.setenv("ATTENTION_PATHS_OFFLINE", value)
    monkeypatch.setenv("ATTENTION_PATHS_QUIET", value)
    assert config.offline() is False and config.quiet_requested() is False


def test_unset_switches_are_off(monkeypatch):
    monkeypatch.delenv("ATTENTION_PATHS_OFFLINE", raising=False)
    monkeypatch.delenv("ATTENTION_PATHS_QUIET", raising=False)
    assert config.offline() is False and config.quiet_requested() is False


@pytest.mark.parametrize(
    "name, fn", [("ATTENTION_PATHS_OFFLINE", config.offline), ("ATTENTION_PATHS_QUIET", config.quiet_requested)]
)
@pytest.mark.parametrize("value", ["2", "y", "enabled", "nope"])
def test_other_values_are_errors_naming_the_variable(monkeypatch, name, fn, value):
    monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match=f"{name}='{value}' is not a boolean"):
        fn()


def test_scale_is_checked(monkeypatch):
    monkeypatch.setenv("REPRO_SCALE", "Paper ")
    assert config.get_scale() == "paper"
    monkeypatch.setenv("REPRO_SCALE", "huge")
    with pytest.raises(ValueError, match="REPRO_SCALE must be one of"):
        config.get_scale()
