"""The paper-to-book map names every numbered figure of the book (issue 26)."""

import re
from pathlib import Path

BOOK = Path(__file__).resolve().parents[2] / "book"


def test_every_numbered_figure_is_in_the_map():
    figures = {
        name: md.name for md in sorted(BOOK.glob("*.md")) for name in re.findall(r"name: (fig-[\w-]+)", md.read_text())
    }
    assert len(figures) >= 25  # the chapters' figures were found
    mapped = set(re.findall(r"\{numref\}`(fig-[\w-]+)`", (BOOK / "figure_map.md").read_text()))
    missing = {name: chapter for name, chapter in figures.items() if name not in mapped}
    assert not missing, f"figures not in book/figure_map.md: {missing}"
    assert mapped <= set(figures), f"the map names figures that do not exist: {mapped - set(figures)}"
