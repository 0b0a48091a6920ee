"""Endpoint errors: each names the endpoint (never its key) and, where there is one, the request."""

from __future__ import annotations


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
