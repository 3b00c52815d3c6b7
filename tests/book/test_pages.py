"""The built book in a real browser (tests/pagecheck.py): runs after `make book`; skips without a build or Chromium."""
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import pagecheck  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def _site(tmp_path):
    (tmp_path / "book").mkdir()
    (tmp_path / "index.html").write_text('<html><body><main><a href="book/a.html#sec">a</a></main></body></html>')
    (tmp_path / "book" / "a.html").write_text(
        '<html><body><main id="m"><section id="sec"><span class="math notranslate">\\(x\\)</span>'
        '<img src="../_images/fig.png"><a href="b.html">b</a><a href="a.html#nowhere">x</a>'
        '<div class="cell_output"><pre>Traceback (most recent call last):\n  ValueError</pre></div>'
        '</section></main></body></html>')
    return tmp_path


def test_static_checks_find_broken_images_links_anchors_and_errors(tmp_path):
    res = pagecheck.check(_site(tmp_path), browser=False)
    assert res["index.html"] == []
    problems = " | ".join(res[str(Path("book") / "a.html")])
    for expected in ("missing image ../_images/fig.png", "broken link b.html", "broken anchor a.html#nowhere",
                     "error output"):
        assert expected in problems
    assert any("browser checks skipped" in n for n in res["_notes"])


@pytest.mark.slow
def test_every_built_page_renders_in_chromium(tmp_path):
    html = ROOT / "_build" / "html"
    if not (html / "index.html").exists():
        pytest.skip("no built book in _build/html (run `make book` first)")
    if pagecheck.find_browser() is None:
        pytest.skip("no Chromium on this machine (Debian: apt-get install chromium)")
    shots = Path(os.environ.get("PAGECHECK_SCREENSHOTS", tmp_path / "screenshots"))
    res = pagecheck.check(html, screenshots=shots)
    notes = res.pop("_notes")
    assert {k: v for k, v in res.items() if v} == {}, notes
    assert len(list(shots.glob("*.png"))) == len(res)


@pytest.mark.parametrize("wrapped", [False, True])
def test_an_output_wider_than_the_column_is_found_and_the_books_css_wraps_it(tmp_path, wrapped):
    """Issue 26: a 200-character output line in a narrow column is reported as cut at the column's edge;
    with the book's stylesheet (book/_static/custom.css) it wraps and passes."""
    if pagecheck.find_browser() is None:
        pytest.skip("no Chromium on this machine (Debian: apt-get install chromium)")
    css = (ROOT / "book" / "_static" / "custom.css").read_text() if wrapped else ""
    line = "claim " + "x" * 40 + " " + "0.123 " * 30
    (tmp_path / "index.html").write_text(
        f"<html><head><style>{css}</style></head><body><main style='width: 500px'>"
        f"<div class='cell_output'><pre>{line}</pre></div></main></body></html>"
    )
    res = pagecheck.check(tmp_path)
    problems = res["index.html"]
    if wrapped:
        assert problems == []
    else:
        assert len(problems) == 1 and "1 cell output(s) wider than the column" in problems[0]


def test_a_figure_drawn_much_wider_than_shown_is_found(tmp_path):
    """Issue 26: a 2000 px figure shown in a 500 px column (its text shrunk 4x) fails the check; one drawn at
    the width it is shown passes."""
    if pagecheck.find_browser() is None:
        pytest.skip("no Chromium on this machine (Debian: apt-get install chromium)")
    from PIL import Image

    Image.new("RGB", (2000, 400), "white").save(tmp_path / "wide.png")
    Image.new("RGB", (600, 300), "white").save(tmp_path / "fits.png")
    for name, bad in (("wide", True), ("fits", False)):
        (tmp_path / "index.html").write_text(
            f"<html><body><main style='width: 500px'><img src='{name}.png' style='max-width: 100%'></main>"
            "</body></html>"
        )
        problems = pagecheck.check(tmp_path)["index.html"]
        assert (len(problems) == 1 and "drawn over 1.3x their displayed width" in problems[0]) if bad else not problems
