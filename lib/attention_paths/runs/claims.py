"""Claim records shared by the experiment chapters: ``{"id", "claim", "passed", "detail"}`` dictionaries."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from attention_paths.base import config
from attention_paths.base.io import atomic_write_json
from attention_paths.base.provenance import code_version, provenance

__all__ = [
    "format_claims",
    "deviations_markdown",
    "assert_claims",
    "record_claims",
    "load_claim_records",
    "claims_markdown",
]


def format_claims(claims: list[dict], width: int = 80) -> str:
    """Claim records as wrapped text, one block per claim: ``[pass]`` / ``[FAIL]``, id, claim, numbers; every
    line at most ``width`` characters (the book's text column holds about 83)."""
    blocks = []
    for c in claims:
        head = f"[{'pass' if c['passed'] else 'FAIL'}] {c['id']}: {c['claim']}"
        blocks.append(textwrap.fill(head, width, subsequent_indent=" " * 7, break_on_hyphens=False))
        blocks.append(textwrap.fill(c["detail"], width, initial_indent=" " * 7, subsequent_indent=" " * 7))
    return "\n".join(blocks)


def deviations_markdown(claims: list[dict], explained: dict[str, str], sections: dict[str, str]) -> str:
    """MyST Markdown for below a chapter's printed claims: every claim that fails, with its reason
    (``explained``: {id: reason}) and a link to the section that explains it (``sections``: {id: label}),
    so that no failure is a bare "FAIL" line; "Every claim holds." when none fails."""
    failing = [c for c in claims if not c["passed"]]
    if not failing:
        return "Every claim holds on these numbers."
    lines = ["Claims that fail on these numbers, and where the text explains why:", ""]
    for c in failing:
        where = f" (see {{ref}}`{sections[c['id']]}`)" if c["id"] in sections else ""
        lines.append(f"- **{c['id']}**: {explained.get(c['id'], 'not explained')}{where}")
    return "\n".join(lines)


def assert_claims(
    claims: list[dict], expected_failures: dict | None = None, *, chapter: str | None = None, scale: str | None = None
) -> None:
    """Raise ``AssertionError`` if a claim fails that is not in ``expected_failures`` ({id: reason}), or if an
    expected failure passes (so that the text explaining it goes stale loudly).

    With ``chapter``, the claims are first recorded (:func:`record_claims`) for the paper-to-book map.
    """
    expected_failures = expected_failures or {}
    if chapter is not None:
        record_claims(chapter, claims, scale, expected_failures)
    status = {c["id"]: c["passed"] for c in claims}
    unknown = [k for k in expected_failures if k not in status]
    unexpected = [k for k, ok in status.items() if not ok and k not in expected_failures]
    stale = [k for k in expected_failures if status.get(k, False)]
    assert not unknown, f"expected failures name unknown claims: {unknown}"
    assert not unexpected, f"claims failed: {unexpected}"
    assert not stale, f"expected failures now pass (update the text that explains them): {stale}"


# ------------------------------------------------------------------------------------------ records for the map
def record_claims(
    chapter: str, claims: list[dict], scale: str | None = None, expected_failures: dict | None = None
) -> Path:
    """Write the claims a chapter computed to ``config.claims_folder()/<scale>/<chapter>.json`` (atomically), with the
    code version and time, for :func:`claims_markdown`."""
    scale = config.get_scale(scale)
    record = {
        "chapter": chapter,
        "scale": scale,
        "claims": claims,
        "expected_failures": expected_failures or {},
        "code_version": code_version(),
        "provenance": provenance(),
    }
    return atomic_write_json(config.claims_folder() / scale / f"{chapter}.json", record)


def load_claim_records(scale: str | None = None) -> dict[str, dict]:
    """{chapter: record} of the claims recorded at ``scale``; unreadable records are skipped with a note."""
    folder = config.claims_folder() / config.get_scale(scale)
    out = {}
    for p in sorted(folder.glob("*.json")):
        try:
            out[p.stem] = json.loads(p.read_text())
        except (OSError, json.JSONDecodeError) as err:
            out[p.stem] = {"error": f"{p} is unreadable ({err})"}
    return out


def _status(claim: dict, expected: dict) -> str:
    if "of" in claim:  # a claim tallied over several networks (tasks.ensemble.tally_claims)
        k, n = claim["holds"], claim["of"]
        return f"**holds on {k} of {n}**" if k == n else f"holds on {k} of {n}"
    if claim["passed"]:
        return "**agrees**" if claim["id"] not in expected else "agrees (listed as a deviation)"
    return "known deviation" if claim["id"] in expected else "**FAILS**"


def claims_markdown(records: dict[str, dict], chapters: dict[str, str], detail_width: int = 160) -> str:
    """Markdown: per chapter, when and by which code its claims were computed, then a table of the claims
    with their computed status and the numbers behind it; a claim tallied over several networks (with
    ``holds`` and ``of``) is shown as "holds on k of n".  ``chapters`` maps chapter names to MyST
    references (the headings)."""
    blocks = []
    for chapter, ref in chapters.items():
        rec = records.get(chapter)
        if rec is None:
            blocks.append(f"**{ref}**: not computed yet (build or run the chapter).")
            continue
        if "error" in rec:
            blocks.append(f"**{ref}**: {rec['error']}.")
            continue
        prov = rec.get("provenance", {})
        stale = rec.get("code_version") != code_version()
        head = f"**{ref}**: computed {prov.get('time_utc', '?')}, commit {(prov.get('git_commit') or '?')[:10]}" + (
            ", **by other code than this build's (stale)**" if stale else ""
        )
        rows = ["| claim | computed | numbers |", "|---|---|---|"]
        for c in rec["claims"]:
            detail = c["detail"] if len(c["detail"]) <= detail_width else c["detail"][: detail_width - 1] + "…"
            text = c["claim"].replace("|", "\\|")
            rows.append(
                f"| {c['id']}: {text} | {_status(c, rec.get('expected_failures', {}))} | {detail.replace('|', '/')} |"
            )
        blocks.append(head + "\n\n" + "\n".join(rows))
    return "\n\n".join(blocks)
