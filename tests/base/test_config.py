"""Run-time switches (issue 24, group 3): booleans parsed strictly, every variable read in one place."""

from pathlib import Path

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


def _fake_checkout(folder):
    (folder / "lib" / "attention_paths").mkdir(parents=True)
    (folder / "data").mkdir()
    (folder / "data" / "README.md").write_text("committed results\n")
    (folder / "_config.yml").write_text("title: x\n")
    return folder


def test_the_committed_results_are_found_from_a_variable_the_package_or_the_working_directory(tmp_path, monkeypatch):
    from attention_paths.base import config

    monkeypatch.delenv("ATTENTION_PATHS_REPO", raising=False)
    here = Path(config.__file__).resolve().parents[3]
    assert config.repo_data_dir() == here / "data"  # this checkout (editable install)
    other = _fake_checkout(tmp_path / "other")
    monkeypatch.setenv("ATTENTION_PATHS_REPO", str(other))
    assert config.repo_root() == other.resolve() and config.repo_data_dir() == other.resolve() / "data"
    monkeypatch.setenv("ATTENTION_PATHS_REPO", str(tmp_path))  # not a checkout: named in the error
    with pytest.raises(FileNotFoundError, match=f"ATTENTION_PATHS_REPO={tmp_path} is not a checkout"):
        config.repo_data_dir()
    # installed away from a checkout: the nearest checkout at or above the working directory, else an error
    monkeypatch.delenv("ATTENTION_PATHS_REPO")
    monkeypatch.setattr(config, "__file__", str(tmp_path / "site" / "attention_paths" / "base" / "config.py"))
    (other / "book").mkdir()
    monkeypatch.chdir(other / "book")
    assert config.repo_data_dir() == other.resolve() / "data"
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError, match="git clone --depth 1 --branch v.* or set ATTENTION_PATHS_REPO"):
        config.repo_data_dir()
