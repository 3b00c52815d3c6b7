"""The record of one checked claim, shared by the tasks' claims modules.

A claim is checked by a module-level function on a run's numbers; each task's ``*_claims`` runs a table of
them in order and returns the records (``runs.claims`` writes them for the paper-to-book map).
"""

from __future__ import annotations

from typing import Callable, Iterable

__all__ = ["claim", "check_table"]


def claim(cid: str, text: str, passed, detail: str) -> dict:
    """One claim's record: ``id``, ``claim`` (the statement), ``passed`` (a bool) and ``detail`` (the numbers
    behind it)."""
    return {"id": cid, "claim": text, "passed": bool(passed), "detail": detail}


def check_table(table: Iterable[tuple[str, str, Callable]], *args) -> list[dict]:
    """The records of a table of ``(id, statement, check)`` rows, in order; ``check(*args)`` returns
    ``(passed, detail)``."""
    return [claim(cid, text, *check(*args)) for cid, text, check in table]
