"""Which gRPC status each irforge error type travels as: a registry each room fills beside its own
errors (`register_status(CorpusNotFound, "NOT_FOUND")` in corpus/errors.py), read by
common/grpc_errors.py. Stdlib only, so an errors module that registers stays light (no grpc import).

A server answers an error with the status of the most specific registered type in the error's MRO
(INTERNAL when none is) and prefixes the error's class name; a client rebuilds the registered type
of that name. A client therefore needs the errors modules its server can raise imported: each
room's client imports them (see tests/test_architecture.py)."""

from __future__ import annotations

# error type -> the name of its grpc.StatusCode ("NOT_FOUND")
_STATUS: dict[type[BaseException], str] = {}
# class name -> error type, for the client that rebuilds it
_BY_NAME: dict[str, type[BaseException]] = {}


def register_status(error_type: type[BaseException], status: str) -> type[BaseException]:
    """Declare that `error_type` (and its unregistered subclasses) travels as gRPC status `status`.
    Registering a type again (a module loaded twice) replaces the earlier entry."""
    if not status.isupper() or not status.replace("_", "").isalpha():
        raise ValueError(f"{status!r} is not a grpc.StatusCode name (e.g. 'NOT_FOUND')")
    _STATUS[error_type] = status
    _BY_NAME[error_type.__name__] = error_type
    return error_type


def status_name(error: BaseException) -> str | None:
    """The registered status of the most specific registered type `error` is an instance of."""
    for klass in type(error).__mro__:
        if klass in _STATUS:
            return _STATUS[klass]
    return None


def registered_type(name: str) -> type[BaseException] | None:
    return _BY_NAME.get(name)


def registered() -> dict[type[BaseException], str]:
    """A copy of the registry (for tests and tools)."""
    return dict(_STATUS)


# Python's own: a malformed argument anywhere is the caller's mistake.
register_status(ValueError, "INVALID_ARGUMENT")
