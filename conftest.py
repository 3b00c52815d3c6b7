"""Run every book chapter (jupytext MyST notebooks under book/) as a pytest item through nbval.

The chapters are read with jupytext and handed to nbval's collector, so no .ipynb file is written.
Outputs are not compared (there are none stored); a cell that raises fails the test.  The kernel
inherits the environment, so ``REPRO_SCALE`` reaches the chapters.
"""

import os
import sys
from pathlib import Path
from unittest import mock

import jupytext
import nbval.plugin as nbval_plugin
import pytest

BOOK = Path(__file__).parent / "book"
sys.path.insert(0, str(Path(__file__).parent / "_ext"))
import hangwatch  # noqa: E402

# as in the book build (_config.yml): a wall-clock limit of hours as a backstop, and a kernel that does no work
# for BOOK_HANG_SECONDS (20 min) is stopped as hung; a slow but working cell passes on a busy machine
CELL_TIMEOUT = 21600


# The chapters run here record their claims apart from the book build's (_build/claims), so that
# tests/book/test_rebuild.py, run after every chapter, can compare the two executions number for number.
NBVAL_CLAIMS = Path(__file__).parent / "_build" / "claims-nbval"


def pytest_configure(config):
    if str(config.option.nbval_cell_timeout) == "2000":  # nbval's default, not given on the command line
        config.option.nbval_cell_timeout = CELL_TIMEOUT
    os.environ.setdefault("ATTENTION_PATHS_CLAIMS", str(NBVAL_CLAIMS))  # inherited by the chapters' kernels
    _ENVIRON.update(os.environ)
    hangwatch.start()


# The environment the run started with, which every chapter's kernel gets (pytest_runtest_setup below).
_ENVIRON: dict[str, str] = {}


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """A chapter's kernel starts in the setup of its first cell and inherits ``os.environ``: give it the environment
    ``make test`` started with, not what earlier tests left behind.  (A Dask ``LocalCluster`` sets
    ``OMP_NUM_THREADS=1``, ``OPENBLAS_NUM_THREADS=1`` and friends in its parent process; single-threaded BLAS
    changes a chapter's floating-point sums in the last bits, and the quick posterior sampling, NUTS being
    chaotic, turns that into other draws and other sampled accuracies: issue 37.)"""
    if isinstance(item.parent, JupytextNotebook) and dict(os.environ) != _ENVIRON:
        os.environ.clear()
        os.environ.update(_ENVIRON)


def _is_notebook(path: Path) -> bool:
    if path.suffix != ".md" or path.parent != BOOK:
        return False
    head = path.read_text(encoding="utf-8")[:600]
    return head.startswith("---") and "kernelspec" in head


class JupytextNotebook(nbval_plugin.IPyNbFile):
    """nbval collector for a jupytext notebook; runs the cells without comparing outputs."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.compare_outputs = False

    def collect(self):
        nb = jupytext.read(self.path)
        with mock.patch.object(nbval_plugin.nbformat, "read", return_value=nb):
            yield from super().collect()


def pytest_collect_file(file_path, parent):
    if _is_notebook(file_path):
        return JupytextNotebook.from_parent(parent, path=file_path)


READ_LAST = ("figure_map.md",)  # tabulates the claims the other chapters record: run it after them
AFTER_CHAPTERS = ("test_rebuild.py",)  # compares the chapters' claims with the book build's: after them all


def pytest_collection_modifyitems(session, config, items):
    def order(item):
        name = Path(str(item.fspath)).name
        return (name in AFTER_CHAPTERS, name in READ_LAST)

    items.sort(key=order)  # stable: only moves these to the end
