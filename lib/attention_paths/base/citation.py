"""How to cite this version of the book and package: a one-line label and BibTeX entries.

The paper is the preferred citation; the software entry names the version (and, when known, the commit) a
reader's numbers came from.  The same facts as ``CITATION.cff`` and ``.zenodo.json`` at the repository's root
(``tests/base/test_release.py`` keeps the versions equal).  Standard library only: the git commit comes from
:func:`attention_paths.base.git.state`, as the provenance record's does.
"""

from __future__ import annotations

import textwrap

from attention_paths.base import git
from attention_paths.base.version import __version__

__all__ = ["version_label", "bibtex"]

REPOSITORY = "https://github.com/attention-paths/attention-paths"
SITE = "https://attention-paths.github.io/attention-paths/"
TITLE = (
    "Attention paths: a reproducible companion to ``Dissecting the Interplay of Attention Paths "
    "in a Statistical Mechanics Theory of Transformers'' (Tiberi et al., NeurIPS 2024)"
)
YEAR = 2026

# the paper, as in book/references.bib (key tiberi2024; tests/base/test_release.py compares them)
PAPER_BIBTEX = """@inproceedings{tiberi2024,
  author    = {Tiberi, Lorenzo and Mignacco, Francesca and Irie, Kazuki and Sompolinsky, Haim},
  title     = {Dissecting the Interplay of Attention Paths in a Statistical Mechanics Theory of Transformers},
  booktitle = {Advances in Neural Information Processing Systems},
  volume    = {37},
  year      = {2024},
  eprint    = {2405.15926},
  archivePrefix = {arXiv},
  url       = {https://arxiv.org/abs/2405.15926}
}"""


def _git_state() -> tuple[str | None, bool | None]:
    """(commit, dirty) of the checkout the package runs from, as the provenance record has them."""
    return git.state()


def version_label(commit: str | None = None, dirty: bool | None = None) -> str:
    """This version in one line: package version, short commit and whether the checkout had changes.

    With ``commit=None`` the commit and the dirty flag are read from the provenance record (git); a commit
    given without ``dirty`` is taken as clean.

    >>> version_label("4325a19ab0c1d2e3f4", dirty=True)  # doctest: +ELLIPSIS
    'attention-paths ... (commit 4325a19ab0, with uncommitted changes)'
    >>> version_label("4325a19ab0c1d2e3f4")  # doctest: +ELLIPSIS
    'attention-paths ... (commit 4325a19ab0)'

    Outside a git checkout (an installed wheel) the commit is unknown:
    ``'attention-paths 0.2.0 (commit unknown)'``.
    """
    if commit is None:
        commit, found_dirty = _git_state()
        dirty = found_dirty if dirty is None else dirty
    label = f"commit {commit[:10]}" if commit else "commit unknown"
    if commit and dirty:
        label += ", with uncommitted changes"
    return f"attention-paths {__version__} ({label})"


def _software_entry(commit: str | None, dirty: bool | None) -> str:
    key = "attention_paths_" + __version__.replace(".", "_").replace("-", "_")
    fields = [
        ("author", "{attention-paths contributors}"),
        ("title", TITLE),
        ("version", __version__),
        ("year", str(YEAR)),
        ("url", REPOSITORY),
        ("howpublished", rf"\url{{{SITE}}}"),
    ]
    if commit:
        fields.append(("note", f"commit {commit}" + (", with uncommitted changes" if dirty else "")))
    lines = []
    for name, value in fields:  # wrapped within 80 columns, as the chapters print it
        start = f"  {name:<12} = {{"
        wrapped = textwrap.wrap(value + "}", 80, initial_indent=start, subsequent_indent=" " * len(start))
        lines.append("\n".join(wrapped))
    return f"@software{{{key},\n" + ",\n".join(lines) + "\n}"


def bibtex(commit: str | None = None, dirty: bool | None = None, paper: bool = True) -> str:
    """BibTeX for this version: an ``@software`` entry (key ``attention_paths_<version>``, e.g.
    ``attention_paths_0_2_0``) whose ``version`` is ``__version__`` and whose ``note`` names the commit when
    known, followed by the paper's ``@inproceedings{tiberi2024, ...}`` (the preferred citation; the same entry
    as the book's ``references.bib``) unless ``paper=False``.

    With ``commit=None`` the commit and ``dirty`` (whether the checkout had uncommitted changes, said in the
    note) are read from the provenance record; outside a git checkout the entry has no ``note``.

    >>> print(bibtex("4325a19ab0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5", paper=False))  # doctest: +ELLIPSIS
    @software{attention_paths_...,
      author       = {{attention-paths contributors}},
      title        = {Attention paths: a reproducible companion to ...
                      ... (Tiberi et al., NeurIPS 2024)},
      version      = {...},
      year         = {2026},
      url          = {https://github.com/attention-paths/attention-paths},
      howpublished = {\\url{https://attention-paths.github.io/attention-paths/}},
      note         = {commit 4325a19ab0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5}
    }
    """
    if commit is None:
        commit, found_dirty = _git_state()
        dirty = found_dirty if dirty is None else dirty
    entry = _software_entry(commit, dirty)
    return entry + "\n\n" + PAPER_BIBTEX if paper else entry
