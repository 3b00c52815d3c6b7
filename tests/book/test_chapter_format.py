"""Saving a chapter in JupyterLab leaves it unchanged (issue 53): the chapters are committed in the form
jupytext's contents manager writes them (_ext/chapter_format.py), under the project's jupytext configuration
(pyproject.toml's [tool.jupytext]).  The real-browser check (open, run all, save, git diff) is in test_lab.py."""

import importlib.util
from pathlib import Path

import jupytext
import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("chapter_format", ROOT / "_ext" / "chapter_format.py")
chapter_format = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(chapter_format)
PAGES = sorted((ROOT / "book").glob("*.md"))
CHAPTERS = [p for p in PAGES if chapter_format.is_chapter(jupytext.read(p))]


def test_the_book_has_chapters_and_reference_pages():
    assert {p.name for p in CHAPTERS} >= {"theory.md", "hmc.md", "omniglot_theory.md", "pruning.md"}
    assert "api.md" not in {p.name for p in CHAPTERS}  # names no kernel: the book does not run it


@pytest.mark.parametrize("page", CHAPTERS, ids=[p.name for p in CHAPTERS])
def test_a_chapter_saved_by_the_lab_is_byte_for_byte_the_committed_one(page):
    text = page.read_text()
    saved = chapter_format.saved_by_the_lab(text)
    assert saved == text, (
        f"{page.name}: saving it in the lab would rewrite it; run `python _ext/chapter_format.py` "
        "(captions on one line, the lab's kernelspec in the header)"
    )
    assert "jupytext_version" not in saved and "language_info" not in saved


def test_the_configuration_is_what_keeps_the_version_out():
    nb = jupytext.reads((ROOT / "book" / "theory.md").read_text(), fmt="md:myst")
    nb.metadata["jupytext"]["text_representation"]["jupytext_version"] = jupytext.__version__
    with_config = jupytext.writes(nb, fmt="md:myst", config=chapter_format.config())
    without = jupytext.writes(nb, fmt="md:myst")
    assert "jupytext_version" in without and "jupytext_version" not in with_config


def test_a_multi_line_caption_is_what_the_lab_would_rewrite():
    text = (ROOT / "book" / "theory.md").read_text()
    name = "    name: fig-theory-U\n    caption: "
    i = text.index(name) + len(name)
    j = text.index("\n---\n", i)
    broken = text[:i] + "|\n      Two lines\n      of caption." + text[j:]
    assert chapter_format.saved_by_the_lab(broken) != broken  # the check would catch an author's block caption
    assert chapter_format.normalise(broken) == chapter_format.saved_by_the_lab(chapter_format.normalise(broken))
    assert chapter_format.figure_captions(ROOT / "book" / "theory.md")["fig-theory-U"].startswith("Order parameter")
