"""The errors of calling an endpoint (irforge.common.calling.RobustCaller): owned here, below every
room that calls one, and completed in irforge.endpoints.errors with the errors of a team's
endpoint spec and answers (EndpointSpecError, EndpointAnswerError). Each names the endpoint,
never its key, and, where there is one, the request."""

from __future__ import annotations

from irforge.common.error_status import register_status


class EndpointError(RuntimeError):
    """Base class for endpoint problems a user can act on."""


class EndpointUnavailable(EndpointError):
    """The circuit breaker opened: the endpoint kept failing (down, or refusing every request)."""


class RequestBudgetExhausted(EndpointError):
    """The run used up its per-run request budget before finishing."""


# How each travels over gRPC (irforge.common.grpc_errors): a team endpoint irforge calls, its
# availability, never irforge's own state.
register_status(EndpointUnavailable, "UNAVAILABLE")
register_status(RequestBudgetExhausted, "RESOURCE_EXHAUSTED")
register_status(EndpointError, "FAILED_PRECONDITION")
