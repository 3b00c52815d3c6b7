"""The record of one checked claim, shared by the tasks' claims modules, and the book's one tie rule.

A claim is checked by a module-level function on a run's numbers; each task's ``*_claims`` runs a table of
them in order and returns the records (``runs.claims`` writes them for the paper-to-book map).

**The tie rule** (issue 49 §3): a difference counts only beyond :data:`TIE_SE` = 1.5 of its standard errors.
A claim that asserts a difference ("beats", "improves", "costs less") holds only when the difference exceeds
its bound by more than a tie (:func:`exceeds`); a claim that asserts a bound ("at most", "does not cost",
"within") fails only when the bound is exceeded by more than a tie.  :func:`verdict` names the three cases.

>>> exceeds(2.0, 0.0, 1.0), exceeds(1.0, 0.0, 1.0), verdict(-2.0, 1.0)
(True, False, 'below')
"""

from __future__ import annotations

from typing import Callable, Iterable

__all__ = ["claim", "check_table", "TIE_SE", "exceeds", "verdict", "check_stored_claims"]

# the book's tie: a difference within 1.5 standard errors is not a difference
TIE_SE = 1.5


def exceeds(value, bound, se) -> bool:
    """Whether ``value`` exceeds ``bound`` by more than a tie: ``value - bound > TIE_SE * se``."""
    return bool(float(value) - float(bound) > TIE_SE * float(se))


def verdict(diff, se) -> str:
    """``"above"``, ``"tie"`` or ``"below"``: a difference ``diff`` with standard error ``se`` against zero,
    by :data:`TIE_SE`."""
    return "above" if exceeds(diff, 0.0, se) else "below" if exceeds(-float(diff), 0.0, se) else "tie"


def claim(cid: str, text: str, passed, detail: str) -> dict:
    """One claim's record: ``id``, ``claim`` (the statement), ``passed`` (a bool) and ``detail`` (the numbers
    behind it)."""
    return {"id": cid, "claim": text, "passed": bool(passed), "detail": detail}


def check_table(table: Iterable[tuple[str, str, Callable]], *args) -> list[dict]:
    """The records of a table of ``(id, statement, check)`` rows, in order; ``check(*args)`` returns
    ``(passed, detail)``."""
    return [claim(cid, text, *check(*args)) for cid, text, check in table]


def check_stored_claims(stored, fresh: list[dict], folder=None, *, measured: Iterable[str] = ()) -> None:
    """Refuse a run whose stored claims contradict its own numbers: ``stored`` (the run's recorded claims, or
    ``None``) against ``fresh`` (the same claims recomputed from what the run stores).  A stored claim whose
    verdict or numbers differ from the recomputation, or that the recomputation does not make, raises
    ``ValueError`` naming ``folder``, the claim and both values (a run written under an earlier rule is
    re-derived with ``attention_paths.runs.rederive``).  ``measured``: the ids of claims that the stored
    numbers cannot give (they need what the run measured but did not keep, such as per-sequence
    predictions); those are taken as stored."""
    if stored is None:
        return
    now = {c["id"]: c for c in fresh}
    where = f"{folder}: " if folder is not None else ""
    for c in stored:
        f = now.get(c["id"])
        if f is None and c["id"] in set(measured):
            continue
        if f is None:
            raise ValueError(f"{where}claims[{c['id']}] is stored but not made by this code from the run's numbers")
        for key in ("passed", "detail"):
            if c.get(key) != f[key]:
                raise ValueError(
                    f"{where}claims[{c['id']}].{key} = {c.get(key)!r} is not {f[key]!r}, what the run's own "
                    "numbers give (re-derive the run if its rule changed: attention_paths.runs.rederive)"
                )
