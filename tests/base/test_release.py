"""A version a reader can cite: the version is written once (base/version.py) and every file that repeats it
(pyproject.toml through setuptools, CITATION.cff, .zenodo.json, CHANGELOG.md) says the same; the citation
helpers (base.citation) give a label and BibTeX for it."""

import doctest
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from attention_paths.base import citation, git, provenance
from attention_paths.base.version import __version__

ROOT = Path(__file__).resolve().parents[2]
RELEASE_HEADING = re.compile(r"^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})$", re.M)


def _cff() -> dict:
    return yaml.safe_load((ROOT / "CITATION.cff").read_text())


def _newest_release() -> tuple[str, str]:
    """(version, date) of CHANGELOG.md's first release heading (the Unreleased section aside)."""
    found = RELEASE_HEADING.search((ROOT / "CHANGELOG.md").read_text())
    assert found, "CHANGELOG.md has no heading '## [X.Y.Z] - YYYY-MM-DD'"
    return found.group(1), found.group(2)


def test_the_version_is_written_once():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    toml = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in toml["project"], "pyproject.toml states a version of its own"
    assert "version" in toml["project"]["dynamic"]
    assert toml["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "attention_paths.base.version.__version__"}
    pyprojecttoml = pytest.importorskip("setuptools.config.pyprojecttoml")
    project = pyprojecttoml.read_configuration(ROOT / "pyproject.toml")["project"]
    assert project["version"] == __version__  # what a build's metadata says
    assert re.fullmatch(r"\d+\.\d+\.\d+", __version__)


def test_every_file_that_states_the_version_states_the_same():
    cff = _cff()
    zenodo = json.loads((ROOT / ".zenodo.json").read_text())
    newest, date = _newest_release()
    stated = {"CITATION.cff": str(cff["version"]), ".zenodo.json": zenodo["version"], "CHANGELOG.md": newest}
    assert stated == dict.fromkeys(stated, __version__), f"base/version.py says {__version__}"
    assert str(cff["date-released"]) == date  # the release date, as the changelog has it


def test_the_changelog_opens_with_unreleased_then_the_releases_newest_first():
    text = (ROOT / "CHANGELOG.md").read_text()
    headings = re.findall(r"^## (.*)$", text, re.M)
    assert headings[0] == "[Unreleased]"
    versions = [tuple(map(int, re.search(r"(\d+)\.(\d+)\.(\d+)", h).groups())) for h in headings[1:]]
    assert versions == sorted(versions, reverse=True) and len(versions) >= 2


def test_citation_cff_is_complete():
    cff = _cff()
    required = {"cff-version", "message", "title", "authors", "version", "date-released", "license"}
    assert required <= set(cff)
    assert cff["type"] == "software" and cff["license"] == "MIT"
    assert cff["title"].startswith("Attention paths: a reproducible companion to") and "NeurIPS 2024" in cff["title"]
    assert cff["repository-code"] == citation.REPOSITORY and cff["url"] == citation.SITE
    assert cff["authors"] == [{"name": "attention-paths contributors"}]
    assert len(cff["abstract"]) > 200 and len(cff["keywords"]) >= 5
    paper = cff["preferred-citation"]
    assert paper["type"] == "conference-paper" and paper["year"] == 2024
    assert [a["family-names"] for a in paper["authors"]] == ["Tiberi", "Mignacco", "Irie", "Sompolinsky"]
    assert "NeurIPS 2024" in paper["collection-title"]
    assert {i["value"] for i in paper["identifiers"]} >= {"arXiv:2405.15926", "10.48550/arXiv.2405.15926"}
    assert paper["url"] == "https://arxiv.org/abs/2405.15926"


def test_zenodo_metadata_mints_a_doi_for_the_supplement():
    zenodo = json.loads((ROOT / ".zenodo.json").read_text())
    assert zenodo["upload_type"] == "software" and zenodo["license"] == "MIT"
    assert zenodo["title"] == _cff()["title"] and zenodo["description"]
    assert zenodo["creators"] == [{"name": "attention-paths contributors"}]
    assert zenodo["keywords"] == _cff()["keywords"]
    related = {(r["identifier"], r["relation"]) for r in zenodo["related_identifiers"]}
    assert ("10.48550/arXiv.2405.15926", "isSupplementTo") in related
    assert any(identifier == citation.REPOSITORY for identifier, _ in related)


def _balanced(text: str) -> bool:
    depth = 0
    for ch in text:
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if depth < 0:
            return False
    return depth == 0


def _entries(text: str) -> list[tuple[str, str, str]]:
    """(type, key, body) of each top-level BibTeX entry, read by brace depth."""
    out, i = [], 0
    while (at := text.find("@", i)) >= 0:
        head = re.match(r"@(\w+)\{([^,]+),", text[at:])
        assert head, text[at : at + 40]
        depth, j = 0, at + text[at:].index("{")
        for j in range(j, len(text)):
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            if depth == 0:
                break
        out.append((head.group(1), head.group(2), text[at : j + 1]))
        i = j + 1
    return out


def test_bibtex_cites_this_version_and_the_paper():
    sha = "0123456789abcdef0123456789abcdef01234567"
    text = citation.bibtex(sha)
    assert _balanced(text)
    (kind, key, software), (paper_kind, paper_key, paper) = _entries(text)
    assert (kind, key) == ("software", "attention_paths_" + __version__.replace(".", "_"))
    assert re.search(r"version\s*=\s*\{" + re.escape(__version__) + "}", software)
    assert f"commit {sha}" in software and "with uncommitted changes" not in software
    assert "author       = {{attention-paths contributors}}" in software
    assert citation.REPOSITORY in software and citation.SITE in software and "year         = {2026}" in software
    assert (paper_kind, paper_key) == ("inproceedings", "tiberi2024") and "2405.15926" in paper
    assert "uncommitted" in citation.bibtex(sha, dirty=True)
    only = citation.bibtex(sha, paper=False)
    assert only == software and _balanced(only)
    assert all(len(line) <= 80 for line in only.splitlines())  # printed within the chapters' column


def test_the_paper_entry_is_the_books():
    """The paper's entry is book/references.bib's tiberi2024, field for field (whitespace aside)."""
    bib = (ROOT / "book" / "references.bib").read_text()
    ((_, _, entry),) = [e for e in _entries(bib) if e[1] == "tiberi2024"]
    assert " ".join(citation.PAPER_BIBTEX.split()) == " ".join(entry.split())


def test_without_a_commit_the_citation_reads_the_git_state(monkeypatch):
    monkeypatch.setattr(git, "state", lambda cwd=None: ("fedcba9876543210", True))
    assert citation.version_label() == f"attention-paths {__version__} (commit fedcba9876, with uncommitted changes)"
    assert "note         = {commit fedcba9876543210, with uncommitted changes}" in citation.bibtex()
    monkeypatch.setattr(git, "state", lambda cwd=None: (None, None))
    assert citation.version_label() == f"attention-paths {__version__} (commit unknown)"
    assert "note" not in citation.bibtex(paper=False) and _balanced(citation.bibtex())


def test_the_citation_and_the_provenance_record_read_the_same_git_state():
    record = provenance.provenance()
    assert git.state() == (record["git_commit"], record["git_dirty"])
    if record["git_commit"]:
        assert record["git_commit"][:10] in citation.version_label()


def test_version_label_formats_a_given_commit():
    assert citation.version_label("4325a19ab0c1d2", dirty=True) == (
        f"attention-paths {__version__} (commit 4325a19ab0, with uncommitted changes)"
    )
    assert citation.version_label("4325a19ab0c1d2", dirty=False) == f"attention-paths {__version__} (commit 4325a19ab0)"
    assert citation.version_label("4325a19ab0c1d2") == f"attention-paths {__version__} (commit 4325a19ab0)"


def test_the_docstring_examples_hold():
    result = doctest.testmod(citation, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 3 and result.failed == 0


def test_importing_the_citation_helpers_loads_no_heavy_library():
    probe = "import sys, attention_paths.base.citation\nprint(*sorted(m.split('.')[0] for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert not set(out.stdout.split()) & {"torch", "jax", "numpy", "torchvision"}
