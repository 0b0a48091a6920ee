"""Whose a job is. Every job records who submitted it; a team sees, watches, cancels and fetches
only its own, operators all of them (irforge.accounts decides who a caller is)."""

from __future__ import annotations

from irforge.accounts import audit
from irforge.accounts.identity import LOCAL_OPERATOR, Identity, Unauthenticated, current_identity


def caller() -> Identity:
    """Who is asking: the identity a front door bound for the request. In a process without front
    doors (a test, a script embedding the core) an unbound caller is the local operator; in one
    that serves them (an accounts store is attached) an unbound call is refused, so a front door
    that forgot to bind its caller fails closed instead of acting as an operator."""
    try:
        return current_identity()
    except Unauthenticated:
        if audit.attached() is not None:
            raise
        return LOCAL_OPERATOR


def owner_of(identity: Identity) -> str:
    """A job's owner column: role and name, so a team never shares jobs with a same-named operator."""
    return f"{identity.role}:{identity.name}"


def may_see(identity: Identity, owner: str) -> bool:
    return identity.is_operator or owner == owner_of(identity)
