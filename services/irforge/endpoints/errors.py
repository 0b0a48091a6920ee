"""Endpoint errors: each names the endpoint (never its key) and, where there is one, the request.

EndpointError, EndpointUnavailable and RequestBudgetExhausted are raised by the robust caller every
endpoint call goes through, so they live below every room, in irforge.common.call_errors; this
room's own errors (the spec, the answers) subclass them."""

from __future__ import annotations

from irforge.common.call_errors import EndpointError, EndpointUnavailable, RequestBudgetExhausted
from irforge.common.error_status import register_status

__all__ = ["EndpointAnswerError", "EndpointError", "EndpointSpecError", "EndpointUnavailable", "RequestBudgetExhausted"]


class EndpointSpecError(EndpointError, ValueError):
    """The endpoint spec file is malformed (names the file and the key)."""


class EndpointAnswerError(EndpointError):
    """The endpoint answered with something unusable: wrong dimension, NaN, missing or unknown
    ids, non-numeric scores. Never silently scored as zero."""


# How each travels over gRPC (irforge.common.grpc_errors): a team endpoint irforge calls, its
# answers or its availability, never irforge's own state.
register_status(EndpointSpecError, "INVALID_ARGUMENT")
register_status(EndpointAnswerError, "FAILED_PRECONDITION")
# (EndpointUnavailable, RequestBudgetExhausted and EndpointError: in irforge.common.call_errors.)
