"""A rebuild gives identical numbers: the claims every chapter recorded when nbval ran it (this session, in
``conftest.NBVAL_CLAIMS``) equal, claim for claim and digit for digit, those the book build recorded
(``_build/claims``) with the same code.  Run after every chapter (``conftest.AFTER_CHAPTERS``).

The two executions differ in everything but the inputs: another kernel, another executor (nbval against
jupyter-cache's nbclient), other processes before them.  The quick-scale posterior sampling is the sensitive
part: NUTS is chaotic, so a last-bit difference in its inputs or in the chains' placement (two parallel JAX
devices against one sequential) changes the draws, and with them the sampled accuracies (issue 37).
"""

import json
import os
from pathlib import Path

import pytest

from attention_paths.base import config
from attention_paths.base.provenance import code_version

ROOT = Path(__file__).resolve().parents[2]
BOOK_CLAIMS = ROOT / "_build" / "claims"


def _records(folder: Path) -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))}


def _comparable(record: dict) -> dict:
    """What must be identical: the claims (id, statement, verdict, numbers) and the expected failures."""
    return {"claims": record["claims"], "expected_failures": record.get("expected_failures", {})}


def test_the_chapters_run_under_nbval_record_the_book_builds_claims():
    scale = config.get_scale()
    here = Path(os.environ.get("ATTENTION_PATHS_CLAIMS", "")) / scale
    if here.resolve() == (BOOK_CLAIMS / scale).resolve():
        pytest.skip("ATTENTION_PATHS_CLAIMS is the book build's folder: nothing to compare with")
    book, nbval = _records(BOOK_CLAIMS / scale), _records(here)
    current = code_version()
    book = {k: r for k, r in book.items() if r.get("code_version") == current}
    nbval = {k: r for k, r in nbval.items() if r.get("code_version") == current}
    both = sorted(set(book) & set(nbval))
    if not both:
        pytest.skip(
            f"no chapter has claims from both the book build ({BOOK_CLAIMS / scale}, built with this code) "
            f"and nbval ({here}): run `make book` before `make test` to compare them"
        )
    differ = {}
    for chapter in both:
        a, b = _comparable(book[chapter]), _comparable(nbval[chapter])
        if a != b:
            ids = [c["id"] for c, d in zip(a["claims"], b["claims"]) if c != d] or ["(claim lists differ)"]
            differ[chapter] = {
                i: (
                    next((c["detail"] for c in a["claims"] if c["id"] == i), None),
                    next((c["detail"] for c in b["claims"] if c["id"] == i), None),
                )
                for i in ids
            }
    assert not differ, "the book build and nbval recorded different claims (book, nbval): " + json.dumps(
        differ, indent=1
    )
