"""Every colour a figure caption names is one the figure's code draws with (issue 26).

A static check, where it can be automated: each colour word of a caption (``blue``, ``orange``, ...) must
match a colour the figure cell uses, written as a matplotlib cycle colour (``"C1"``), a role of
:data:`attention_paths.plotting.ROLES`, a colour name, or inside a :mod:`attention_paths.plotting` helper
that the cell calls.  Colour maps are not checked (a heatmap's colours are read from its colour bar).
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
import yaml

from attention_paths import plotting
from attention_paths.plotting import COLOR_NAMES, ROLES

BOOK = Path(__file__).resolve().parents[2] / "book"

# caption word -> the cycle colour it names (COLOR_NAMES), plus black and grey shades
_WORDS = {name: f"C{i}" for i, name in enumerate(COLOR_NAMES)}
_WORDS["grey"] = "C7"
_WORDS["black"] = "k"
_OTHER = {"k": ("black",), "C7": ('"gray"', '"0.')}  # black and grey besides "k", "grey" and C7
# "red" names nothing in the palette (C3 is vermilion): allowed only where a cell draws with "red" itself
_FORBIDDEN = ("red",)


def _figure_cells():
    """(chapter, figure name, caption, code) of every numbered figure cell."""
    cell = re.compile(r"```\{code-cell\} ipython3\n---\n(.*?)\n---\n(.*?)```", re.S)
    for md in sorted(BOOK.glob("*.md")):
        for head, code in cell.findall(md.read_text()):
            figure = (yaml.safe_load(head) or {}).get("mystnb", {}).get("figure", {})
            if "name" in figure and "caption" in figure:
                yield md.name, figure["name"], " ".join(figure["caption"].split()), code


def _helpers_source(code: str) -> str:
    """The source of every plotting helper the cell calls (they draw with the roles too)."""
    out = []
    for fn in set(re.findall(r"plotting\.(\w+)\(", code)):
        obj = getattr(plotting, fn, None)
        if callable(obj):
            out.append(inspect.getsource(obj))
    return "\n".join(out)


def _drawn(code: str, word: str) -> bool:
    """Whether ``code`` draws with the colour a caption calls ``word``."""
    if re.search(rf"[\"']{word}[\"']", code):  # a matplotlib colour name, e.g. ec="red"
        return True
    cycle = _WORDS.get(word)
    if cycle is None:
        return False
    if re.search(rf"[\"']{cycle}[\"']", code):
        return True
    roles = [role for role, c in ROLES.items() if c == cycle]
    # plotting.ROLES["gp"], an alias of it, or ROLES[role] with the role's name as a literal in the cell
    if "ROLES[" in code and any(re.search(rf"[\"']{role}[\"']", code) for role in roles):
        return True
    return any(token in code for token in _OTHER.get(cycle, ()))


CELLS = list(_figure_cells())


def test_figure_cells_found():
    assert len(CELLS) >= 25


@pytest.mark.parametrize("chapter,name,caption,code", CELLS, ids=[c[1] for c in CELLS])
def test_caption_colours_are_drawn(chapter, name, caption, code):
    # colour-map words name a scale, not a drawn colour
    text = re.sub(r"\bgr[ae]y[ -]?scale\b|\bcolou?r (map|scale)\b", " ", caption.lower())
    source = code + "\n" + _helpers_source(code)
    for word in _FORBIDDEN:
        if re.search(rf"\b{word}\b", text):
            assert _drawn(source, word), f"{chapter} {name}: the caption says {word!r}, C3 is vermilion"
    # "sky blue" first, so that its "blue" is not read as C0
    missing = []
    for word in sorted(_WORDS, key=len, reverse=True):
        pattern = rf"\b{word}\b"
        if not re.search(pattern, text):
            continue
        text = re.sub(pattern, " ", text)
        if not _drawn(source, word):
            missing.append(word)
    assert not missing, f"{chapter} {name}: the caption names {missing}, which its code does not draw with"
