"""The audit log: who did what, to what, and how it ended. A room records with
`record(action, target, outcome, detail)`; the caller is current_identity(). The process's store
is attached once by whoever opens it (the orchestrator service); with none attached (a test of a
room on its own, a script embedding the core) nothing is written."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from irforge.accounts.identity import Unauthenticated, current_identity
from irforge.accounts.store import AccountsStore

OK = "ok"
REFUSED = "refused"     # not allowed, or the request was bad
FAILED = "failed"       # allowed, then failed

log = logging.getLogger("irforge.accounts")
_store: AccountsStore | None = None
# What a row's detail passes through before it is stored: a room that hides text (the leaderboard's
# closed-book qrels) installs its scrubber here, so an error quoting hidden data is kept without it.
_detail_filter: Callable[[str], str] | None = None


def attach(store: AccountsStore | None) -> None:
    global _store
    _store = store


def attached() -> AccountsStore | None:
    return _store


def filter_details(scrub: Callable[[str], str] | None) -> None:
    global _detail_filter
    _detail_filter = scrub


def record(action: str, target: str = "", outcome: str = OK, detail: str = "") -> None:
    """One row: `action` (submit, cancel, results, team.add, ...) on `target` (a job id, a team)
    ended with `outcome` (OK, REFUSED, FAILED); `detail`: a short reason (never a token or a
    qrels line: it is shown to operators)."""
    store = _store
    if store is None:
        return
    try:
        who = current_identity()
        name, role, via = who.name, who.role, who.via
    except Unauthenticated:
        name, role, via = "(nobody)", "", ""
    try:
        if _detail_filter is not None and detail:
            detail = _detail_filter(detail)
        store.record(name, role, via, action, target, outcome, detail)
    except Exception:  # noqa: BLE001 - a full disk must not turn a cancel into an error; the log says so
        log.exception("could not write the audit row for %s %s", action, target)


class _Row:
    def __init__(self, target: str, detail: str):
        self.target, self.detail = target, detail


@contextmanager
def audited(action: str, target: str = "", detail: str = "") -> Iterator[_Row]:
    """Record `action` when the block ends: OK, or REFUSED with the error's type and message (the
    error is raised on). The block may set `.target` (a job id known only at the end) and `.detail`."""
    row = _Row(target, detail)
    try:
        yield row
    except Exception as error:
        record(action, row.target, REFUSED, f"{type(error).__name__}: {error}")
        raise
    record(action, row.target, OK, row.detail)
