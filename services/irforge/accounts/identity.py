"""Who a request acts for. Every front door (gRPC, the web page) resolves the caller once and binds
an `Identity` for the request; the rooms below ask `current_identity()` and never parse tokens,
cookies or certificates themselves."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

TEAM = "team"
OPERATOR = "operator"


@dataclass(frozen=True)
class Identity:
    name: str      # the team's name, or the operator's
    role: str      # TEAM or OPERATOR
    via: str       # how it was established: "token", "mtls", "proxy" (a header an Ingress's OIDC proxy set), "local"

    @property
    def is_operator(self) -> bool:
        return self.role == OPERATOR


# A platform started without authentication (one person on one machine, `--auth none`): every
# caller is this operator, so nothing is hidden and the audit log still names who did what.
LOCAL_OPERATOR = Identity("local", OPERATOR, "local")


class Unauthenticated(Exception):
    """No valid credential (gRPC UNAUTHENTICATED, HTTP 401)."""


class Forbidden(Exception):
    """A valid caller asking for what is not theirs to do (gRPC PERMISSION_DENIED, HTTP 403)."""


_current: ContextVar[Identity | None] = ContextVar("irforge_identity", default=None)


def current_identity() -> Identity:
    identity = _current.get()
    if identity is None:
        raise Unauthenticated("no caller is bound to this request")
    return identity


@contextmanager
def acting_as(identity: Identity) -> Iterator[Identity]:
    token = _current.set(identity)
    try:
        yield identity
    finally:
        _current.reset(token)


def require_operator(action: str) -> Identity:
    """The caller, if an operator; Forbidden (naming `action` and who asked) if not."""
    identity = current_identity()
    if not identity.is_operator:
        raise Forbidden(f"{action} is for operators; you are {identity.role} {identity.name!r}")
    return identity
