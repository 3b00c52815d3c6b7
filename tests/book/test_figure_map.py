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
        folder = HMC if first.startswith("Markov chain") else OMNIGLOT
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
