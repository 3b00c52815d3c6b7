"""Claim records shared by the experiment chapters: ``{"id", "claim", "passed", "detail"}`` dictionaries."""
from __future__ import annotations

import textwrap

__all__ = ["format_claims", "assert_claims"]


def format_claims(claims: list[dict], width: int = 88) -> str:
    """Claim records as wrapped text, one block per claim: ``[pass]`` / ``[FAIL]``, id, claim, numbers."""
    blocks = []
    for c in claims:
        blocks.append(f"[{'pass' if c['passed'] else 'FAIL'}] {c['id']}: {c['claim']}")
        blocks.append(textwrap.fill(c["detail"], width, initial_indent=" " * 7, subsequent_indent=" " * 7))
    return "\n".join(blocks)


def assert_claims(claims: list[dict], expected_failures: dict | None = None) -> None:
    """Raise ``AssertionError`` if a claim fails that is not in ``expected_failures`` ({id: reason}), or if an
    expected failure passes (so that the text explaining it goes stale loudly)."""
    expected_failures = expected_failures or {}
    status = {c["id"]: c["passed"] for c in claims}
    unknown = [k for k in expected_failures if k not in status]
    unexpected = [k for k, ok in status.items() if not ok and k not in expected_failures]
    stale = [k for k in expected_failures if status.get(k, False)]
    assert not unknown, f"expected failures name unknown claims: {unknown}"
    assert not unexpected, f"claims failed: {unexpected}"
    assert not stale, f"expected failures now pass (update the text that explains them): {stale}"
