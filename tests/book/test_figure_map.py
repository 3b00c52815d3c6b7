"""The paper-to-book map names every numbered figure of the book (issue 26) by the paper's panel (issue 49)."""

import importlib.util
import re
from pathlib import Path

BOOK = Path(__file__).resolve().parents[2] / "book"
_spec = importlib.util.spec_from_file_location("chapter_format", BOOK.parent / "_ext" / "chapter_format.py")
chapter_format = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(chapter_format)


def test_every_numbered_figure_is_in_the_map():
    figures = {
        name: md.name for md in sorted(BOOK.glob("*.md")) for name in re.findall(r"name: (fig-[\w-]+)", md.read_text())
    }
    assert len(figures) >= 25  # the chapters' figures were found
    mapped = set(re.findall(r"\{numref\}`(fig-[\w-]+)`", (BOOK / "figure_map.md").read_text()))
    missing = {name: chapter for name, chapter in figures.items() if name not in mapped}
    assert not missing, f"figures not in book/figure_map.md: {missing}"
    assert mapped <= set(figures), f"the map names figures that do not exist: {mapped - set(figures)}"


# The reference implementation's figure scripts (tiberilor/attention-paths-interplay, its file list), and the
# gradient-descent scripts whose numbers a figure script draws; the map names each by its path in the task's
# folder.
HMC, OMNIGLOT = "hidden_markov_chain_classification/", "one_shot_image_classification/"
REFERENCE_PLOT_SCRIPTS = {
    HMC + "4paths/PLOT_classification_accuracy_mean_predictor.py",
    HMC + "4paths/PLOT_order_parameter.py",
    HMC + "4paths/PLOT_kernels.py",
    HMC + "4paths/PLOT_kernel_alignment.py",
    HMC + "2paths/PLOT_classification_accuracy_mean_predictor.py",
    OMNIGLOT + "PLOT_classification_accuracy_mean_predictor.py",
    OMNIGLOT + "PLOT_order_parameter.py",
    OMNIGLOT + "PLOT_kernel_alignment.py",
    OMNIGLOT + "PLOT_head_scores_vs_performance_drop.py",
}
REFERENCE_GD_SCRIPTS = {OMNIGLOT + "gradient_descent_training/scripts/prune_2lay_h4_g128_n512.sh"}


def _figure_rows():
    text = (BOOK / "figure_map.md").read_text()
    section = text[text.index("## Figures") : text.index("## Claims")]
    rows = [
        [c.strip() for c in line.strip().strip("|").split("|")] for line in section.splitlines() if line.startswith("|")
    ]
    return rows[0], rows[2:], section


def test_every_reproduced_panel_names_its_reference_script_or_says_why_not():
    header, rows, section = _figure_rows()
    assert header[2] == "reference script" and all(len(r) == len(header) for r in rows)
    named = set()
    for first, _figures, script, _scale in rows:
        folder = HMC if re.search(r"`[42]paths/", script) else OMNIGLOT
        if script.startswith("—"):  # no script: a footnote says why
            notes = re.findall(r"\[\^([\w-]+)\]", script)
            assert notes and all(f"[^{n}]: " in section for n in notes), f"{first}: '—' without its footnote"
            continue
        paths = {folder + p for p in re.findall(r"`([\w/.-]+\.(?:py|sh))`", script)}
        assert paths and paths <= REFERENCE_PLOT_SCRIPTS | REFERENCE_GD_SCRIPTS, f"{first}: {paths}"
        assert any("PLOT_" in p for p in paths), f"{first}: no figure script"
        named |= paths
    assert REFERENCE_PLOT_SCRIPTS <= named, f"figure scripts the map does not name: {REFERENCE_PLOT_SCRIPTS - named}"
    for note in re.findall(r"\[\^([\w-]+)\]:", section):  # every footnote is referred to
        assert section.count(f"[^{note}]") >= 2, note


# The paper's panels by number and letter (spec §C.7): Fig. 1(a)-(d), Fig. 2(a)-(e), Fig. 3(a)-(f)
PAPER_PANELS = {f"{n}({x})" for n, letters in ((1, "abcd"), (2, "abcde"), (3, "abcdef")) for x in letters}
SPEC = BOOK.parents[1] / "shared" / "spec" / "experiments.md"


def _captions() -> dict:
    out = {}
    for md in sorted(BOOK.glob("*.md")):
        out.update(chapter_format.figure_captions(md))
    return out


def test_the_map_has_one_row_per_paper_panel_and_each_caption_names_its_panel():
    _header, rows, _section = _figure_rows()
    panels = [re.match(r"\*\*(\d\([a-f]\))\*\*", r[0]) for r in rows]
    named = [p.group(1) for p in panels if p]
    assert len(named) == len(set(named)) + named.count("2(c)") - 1  # 2(c) has a top and a bottom row
    assert set(named) == PAPER_PANELS, f"missing {PAPER_PANELS - set(named)}, extra {set(named) - PAPER_PANELS}"
    captions = _captions()
    for row, panel in zip(rows, panels):
        figures = re.findall(r"\{numref\}`(fig-[\w-]+)`", row[1])
        assert figures, row[0]
        for fig in figures:
            cap = captions[fig]
            if panel:  # the caption names the panel (or the whole figure, for the scheme of Fig. 1)
                n, x = panel.group(1)[0], panel.group(1)[2]
                assert f"Fig. {n}({x})" in cap or f"Fig. {n} (" in cap, f"{fig}: caption does not name Fig. {n}({x})"
            else:  # the row says the figure has no (identified) counterpart, and so does its caption
                assert row[0].startswith("no "), row[0]
                assert re.search(r"not a paper figure|no identified paper panel", cap, re.I), fig


def test_every_caption_names_its_panel_or_says_it_has_none():
    for fig, cap in _captions().items():
        assert re.search(r"Fig\. \d[( ]|not a paper figure|no identified paper panel", cap, re.I), fig


def test_the_panel_list_is_the_specs():
    if not SPEC.exists():
        import pytest

        pytest.skip(f"the project's specification is not beside this checkout ({SPEC})")
    text = SPEC.read_text()
    section = text[text.index("### C.7") :]
    section = section[: section.index("Decision rule")]
    found = set()
    for n, block in re.findall(r"\*\*Fig\. (\d)\*\*(.*?)(?=\*\*Fig\. \d\*\*|\Z)", section, re.S):
        found |= {f"{n}({x})" for x in re.findall(r"\(([a-f])\)", block)}
    assert found == PAPER_PANELS
