"""Sphinx extension: each page's downloadable ``.ipynb`` installs the version the page was built from.

Every chapter opens with a hidden cell that, outside the book's repository (Colab, say), fetches the
project at ``REF`` and installs it with the book's pins.  In the ``.md`` source ``REF = None``; when the HTML
build finishes, this extension writes the commit the book was built from (``git rev-parse HEAD``) into that
line of every ``.ipynb`` under ``_sources/`` (the files behind the pages' download button).  The same
function, :func:`pin_notebook`, is what the test of the Colab route applies to a chapter.

    python _ext/colab.py NOTEBOOK.ipynb COMMIT     # pin one notebook by hand (written atomically)
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

# the line of the chapters' first cell that names the version to install
REF_LINE = re.compile(r"^REF = None(  #.*)?$", re.M)


def pin_source(source: str, ref: str) -> str:
    """The first cell's source with ``REF = None`` replaced by ``REF = "<ref>"`` (unchanged without it)."""
    if not re.fullmatch(r"[0-9A-Za-z._/-]+", ref):
        raise ValueError(f"not a git commit or tag: {ref!r}")
    return REF_LINE.sub(lambda m: f'REF = "{ref}"' + (m.group(1) or ""), source, count=1)


def pin_notebook(nb: dict, ref: str) -> tuple[dict, bool]:
    """``(notebook, pinned)``: ``nb`` (nbformat JSON) with the install cell's ``REF`` set to ``ref``."""
    for cell in nb.get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        pinned = pin_source(source, ref)
        if pinned != source:
            cell["source"] = pinned
            return nb, True
    return nb, False


def _write_pinned(path: Path, ref: str) -> bool:
    nb, pinned = pin_notebook(json.loads(path.read_text(encoding="utf-8")), ref)
    if pinned:
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(nb, f, indent=1, ensure_ascii=False)
            f.write("\n")
        os.replace(tmp, path)
    return pinned


def build_commit(srcdir) -> str | None:
    """The commit checked out in ``srcdir`` (``None`` outside a git checkout)."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=srcdir, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def _pin_downloads(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    commit = build_commit(app.srcdir)
    if commit is None:
        return
    for path in sorted(Path(app.outdir, "_sources").rglob("*.ipynb")):
        _write_pinned(path, commit)


def setup(app):
    app.connect("build-finished", _pin_downloads)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    print("pinned" if _write_pinned(Path(sys.argv[1]), sys.argv[2]) else "no install cell found")
