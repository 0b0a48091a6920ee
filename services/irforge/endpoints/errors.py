"""Endpoint errors: each names the endpoint (never its key) and, where there is one, the request."""

from __future__ import annotations

from irforge.common.error_status import register_status


class EndpointError(RuntimeError):
    """Base class for endpoint problems a user can act on."""


class EndpointSpecError(EndpointError, ValueError):
    """The endpoint spec file is malformed (names the file and the key)."""


class EndpointAnswerError(EndpointError):
    """The endpoint answered with something unusable: wrong dimension, NaN, missing or unknown
    ids, non-numeric scores. Never silently scored as zero."""


class EndpointUnavailable(EndpointError):
    """The circuit breaker opened: the endpoint kept failing (down, or refusing every request)."""


class RequestBudgetExhausted(EndpointError):
    """The run used up its per-run request budget before finishing."""


# How each travels over gRPC (irforge.common.grpc_errors): a team endpoint irforge calls, its
# answers or its availability, never irforge's own state.
register_status(EndpointSpecError, "INVALID_ARGUMENT")
register_status(EndpointAnswerError, "FAILED_PRECONDITION")
register_status(EndpointUnavailable, "UNAVAILABLE")
register_status(RequestBudgetExhausted, "RESOURCE_EXHAUSTED")
register_status(EndpointError, "FAILED_PRECONDITION")
