"""Provenance (base.provenance): the code version follows every source file, the import closure of a module
is what importing it loads, and the record names the machine."""

import subprocess
import sys
from pathlib import Path

import pytest

from attention_paths.base import provenance as pv
from attention_paths.base.version import __version__


def test_the_code_version_of_a_file_set_follows_each_file():
    files = ("base/io.py", "base/config.py")
    assert pv.code_version(files) == pv.code_version(tuple(reversed(files)))  # order does not matter
    assert pv.code_version(files) != pv.code_version(files[:1])
    assert pv.code_version() != pv.code_version(files)  # the whole package


@pytest.mark.parametrize("module", ["tasks/omniglot/training.py", "tasks/markov/experiment.py", "runs/stages.py"])
def test_the_import_closure_is_what_importing_loads(module):
    """Parsed (import_closure) against imported (sys.modules): the same files, package __init__ files included."""
    closure = set(pv.import_closure(module))
    name = "attention_paths." + module.removesuffix(".py").replace("/", ".")
    probe = f"import sys, {name}\nprint(*sorted(m for m in sys.modules if m.startswith('attention_paths')))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    loaded = set()
    for m in out.stdout.split():
        rel = Path(*m.split(".")[1:])  # "attention_paths" itself: the top-level __init__.py
        loaded.add((rel / "__init__.py").as_posix() if (pv.PACKAGE_DIR / rel / "__init__.py").exists() else f"{rel}.py")
    assert closure == loaded and module in closure


def test_the_record_names_code_and_machine():
    rec, hw = pv.provenance(), pv.hardware()
    assert rec["package_version"] and rec["python"].count(".") == 2 and rec["time_utc"].endswith("Z")
    assert hw["cpu_count"] >= 1 and hw["torch_threads"] >= 1 and hw["cpu"]


def test_the_chapters_closing_record_names_the_version_and_how_to_cite_it():
    """Every chapter ends with reproducibility_report: the version and commit, then this version's BibTeX."""
    report = pv.reproducibility_report("quick", seeds={"toy problem": 0})
    rec = pv.provenance()
    version_line = f"version            attention-paths {__version__}, commit {rec['git_commit'] or 'unknown'}"
    assert version_line in report.splitlines()
    assert "seeds              toy problem: 0" in report
    head, cited = report.split("\ncite this version:\n")
    assert head.endswith("\n") and head.splitlines()[-1].startswith("built ")  # the record, a blank line, the entry
    assert cited.startswith("@software{attention_paths_") and cited.endswith("}") and "@inproceedings" not in cited
    assert f"version      = {{{__version__}}}" in cited
    assert f"commit {rec['git_commit']}" in cited if rec["git_commit"] else "note" not in cited
