"""The routes by which a reader runs a chapter outside `make book`, each tested from scratch.

* **A non-editable install** (``pip install .``, as Binder's ``postBuild`` does): the package lives in
  site-packages, away from the repository, and must still find the committed ``data/`` (searching upward from
  the working directory).  A committed network loads, and a chapter that reads committed runs executes to the
  end.
* **Colab**: a chapter's ``.ipynb`` as the book's download button serves it (``REF`` pinned to the commit by
  ``_ext/colab.py``), started in an empty folder by a Python that lacks the package.  Its first cell fetches
  that commit from a local stand-in for the repository (this checkout, over ``file://``), installs it with
  the book's pins (offline: every pin is already satisfied, nothing is downloaded) and the chapter executes to
  the end.

Both run in a fresh virtual environment that sees this environment's dependencies (a ``.pth`` file naming
its site-packages, whose own ``.pth`` files, the editable install among them, are not read), so that the
package is importable only through the route under test.  Neither needs a network.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "_ext"))
import colab  # noqa: E402

pytestmark = pytest.mark.slow
TIMEOUT = 3600  # a hang, not a slow machine: each chapter takes minutes


def _venv(tmp: Path) -> Path:
    """A fresh virtual environment whose Python sees this one's packages (pip and setuptools among them: none
    of its own, whose older versions would shadow them) but not ``attention_paths``."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp / "venv")], check=True, capture_output=True)
    python = tmp / "venv" / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    (Path(purelib) / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    probe = subprocess.run([str(python), "-c", "import attention_paths"], capture_output=True, cwd=tmp)
    assert probe.returncode != 0, "the fresh environment must not see the package yet"
    return python


def _run(cmd, **kwargs):
    """A command that must succeed; its output is shown when it does not."""
    out = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    assert out.returncode == 0, f"{cmd} failed:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    return out.stdout


def _kernel(tmp: Path, python: Path, monkeypatch) -> str:
    """A kernel spec running ``python`` (found through ``$JUPYTER_PATH``)."""
    spec = tmp / "share" / "kernels" / "route"
    spec.mkdir(parents=True)
    argv = [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "route", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp / "share"))
    return "route"


def _notebook(chapter: str, ref: str | None = None):
    """The chapter as a notebook (jupytext), its install cell pinned to ``ref`` as the book build pins it."""
    import jupytext
    import nbformat

    nb = jupytext.read(ROOT / "book" / f"{chapter}.md")
    if ref is not None:
        raw, pinned = colab.pin_notebook(json.loads(nbformat.writes(nb)), ref)
        assert pinned, "the chapter has no install cell with REF = None"
        nb = nbformat.reads(json.dumps(raw), as_version=4)
    return nb


def _execute(nb, kernel: str, cwd: Path):
    """Run every cell; a failing cell raises with its traceback.  Returns the executed notebook."""
    from nbclient import NotebookClient

    NotebookClient(nb, kernel_name=kernel, timeout=TIMEOUT, resources={"metadata": {"path": str(cwd)}}).execute()
    return nb


def _outputs(nb) -> str:
    return "\n".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))


def _copy_checkout(dest: Path) -> Path:
    """The working tree's tracked and untracked (not ignored) files, as a clone elsewhere would hold them."""
    files = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    ).stdout.split(b"\0")
    for name in filter(None, files):
        src = ROOT / os.fsdecode(name)
        if src.is_file():
            (dest / os.fsdecode(name)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / os.fsdecode(name))
    return dest


@pytest.fixture
def reader_env(monkeypatch):
    """The reader's environment: quick scale, no results folder, the datasets root as the build has it."""
    monkeypatch.setenv("REPRO_SCALE", "quick")
    for name in ("REPRO_RESULTS", "ATTENTION_PATHS_REPO", "ATTENTION_PATHS_CLAIMS", "MPLBACKEND"):
        monkeypatch.delenv(name, raising=False)


def test_a_non_editable_install_finds_the_committed_results_and_runs_a_chapter(tmp_path, monkeypatch, reader_env):
    python = _venv(tmp_path)
    clone = _copy_checkout(tmp_path / "clone")
    _run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index", str(clone)])
    where = subprocess.run(
        [
            str(python),
            "-c",
            "import attention_paths as a; from attention_paths.base import config; "
            "print(a.__file__); print(config.repo_data_dir())",
        ],
        cwd=clone / "book",
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    assert "site-packages" in where[0] and not where[0].startswith(str(clone))  # installed, not the checkout
    assert Path(where[1]) == clone / "data"  # found upward from the chapter's folder
    # away from any checkout the reader is told what to do, in one line
    away = subprocess.run(
        [str(python), "-c", "from attention_paths.base import config; config.repo_data_dir()"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert away.returncode != 0
    assert "ATTENTION_PATHS_REPO" in away.stderr and "git clone --depth 1 --branch v" in away.stderr
    # a committed network (data/omniglot-paper) loads from there, its digest checked ...
    loaded = _run(
        [
            str(python),
            "-c",
            "from attention_paths.tasks.omniglot.training import load_network; "
            "print(load_network('paper', train_if_missing=False)[1]['source'])",
        ],
        cwd=clone / "book",
    )
    assert "committed checkpoint data/omniglot-paper/model.pt" in loaded
    # ... and the paper-to-book map, which reads the committed theory and pruning runs, executes to the end
    # (the Colab test below runs a whole experiment chapter; one is enough for the time CI has)
    nb = _execute(_notebook("figure_map"), _kernel(tmp_path, python, monkeypatch), clone / "book")
    assert "REPRO_SCALE=quick" in _outputs(nb)


def test_the_colab_first_cell_installs_the_pinned_commit_and_the_chapter_runs(tmp_path, monkeypatch, reader_env):
    if subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip():
        pytest.skip(
            "the working tree has uncommitted changes: the Colab route installs a commit (run in a clean "
            "clone, as CI does)"
        )
    commit = colab.build_commit(ROOT)
    python = _venv(tmp_path)
    monkeypatch.setenv("ATTENTION_PATHS_GIT", f"file://{ROOT}")  # the local stand-in for the repository
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # offline: every pin must already be satisfied
    monkeypatch.setenv("PIP_NO_BUILD_ISOLATION", "0")  # (pip's spelling of "build without isolation")
    monkeypatch.setenv("PIP_DISABLE_PIP_VERSION_CHECK", "1")
    start = tmp_path / "colab"
    start.mkdir()
    nb = _execute(_notebook("pruning", commit), _kernel(tmp_path, python, monkeypatch), start)
    fetched = start / "attention-paths"
    assert colab.build_commit(fetched) == commit  # the page's commit, not a branch
    assert (fetched / "data" / "pruning" / "paper-network" / "summary.json").is_file()
    installed = subprocess.run(
        [str(python), "-c", "import attention_paths as a; print(a.__file__)"],
        cwd=tmp_path,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    assert installed.startswith(str(fetched / "lib"))  # the fetched version is the installed one
    assert "REPRO_SCALE=quick" in _outputs(nb)


def test_a_notebook_made_outside_the_build_says_where_to_get_one():
    """The ``.md`` source leaves ``REF`` unset: run outside the repository it stops with what to do."""
    nb = _notebook("theory")
    cell = next(c for c in nb.cells if c.cell_type == "code")
    assert "REF = None" in cell.source and "download this notebook from the book's page" in cell.source
    pinned = colab.pin_source(cell.source, "0123abc")
    assert 'REF = "0123abc"  # the commit' in pinned and pinned.count("REF = None") == 0
    with pytest.raises(ValueError, match="not a git commit"):
        colab.pin_source(cell.source, 'x"; import os')


def test_every_chapter_opens_with_the_same_install_cell():
    """One install cell, the same in every chapter that runs code (so that a change reaches all of them)."""
    import jupytext

    first = {}
    for path in sorted((ROOT / "book").glob("*.md")):
        if "kernelspec:" not in path.read_text()[:400]:  # a page, not a notebook
            continue
        nb = jupytext.read(path)
        code = [c for c in nb.cells if c.cell_type == "code"]
        if code and any("import attention_paths" in c.source for c in code):
            first[path.stem] = code[0].source
    assert len(first) >= 6, sorted(first)
    assert len(set(first.values())) == 1, sorted(first)
    assert "REF = None" in next(iter(first.values()))


def test_the_built_pages_notebooks_name_the_commit_they_were_built_from():
    """Every page's downloadable .ipynb (``_build/html/_sources``) installs a commit of this repository (the
    HEAD the book was built from), not a branch."""
    import re

    built = sorted((ROOT / "_build" / "html" / "_sources" / "book").glob("*.ipynb"))
    if not built:
        pytest.skip("the book is not built here (make book): nothing to check")
    for path in built:
        refs = re.findall(r'REF = \\"([^"\\]*)\\"', path.read_text())
        assert len(refs) == 1 and re.fullmatch(r"[0-9a-f]{40}", refs[0]), (path.name, refs)
        known = subprocess.run(["git", "cat-file", "-e", f"{refs[0]}^{{commit}}"], cwd=ROOT, capture_output=True)
        assert known.returncode == 0, f"{path.name} names {refs[0]}, not a commit of this repository"
