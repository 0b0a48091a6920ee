"""The leaderboard's errors, each with the gRPC status it travels as (irforge.common.grpc_errors)."""

from __future__ import annotations

from irforge.accounts import errors as _accounts  # noqa: F401 - registers Forbidden, Unauthenticated (the use cases raise them)
from irforge.common.error_status import register_status


class LeaderboardError(ValueError):
    """A request the leaderboard refuses as given (a bad name, a run ranking non-candidates...):
    names what and where."""


class DatasetNotFound(LookupError):
    def __init__(self, name: str):
        super().__init__(f"no registered dataset {name!r} (list them with `irforge leaderboard datasets`)")


class DatasetExists(LeaderboardError):
    """Registering a name already taken."""


class SubmissionNotFound(LookupError):
    def __init__(self, submission_id: str):
        super().__init__(f"no submission {submission_id!r} (list yours with `irforge leaderboard submissions`)")


class LimitReached(RuntimeError):
    """A team's submissions for the UTC day are used up: says used/limit and when it resets."""


register_status(LeaderboardError, "INVALID_ARGUMENT")
register_status(DatasetExists, "ALREADY_EXISTS")
register_status(DatasetNotFound, "NOT_FOUND")
register_status(SubmissionNotFound, "NOT_FOUND")
register_status(LimitReached, "RESOURCE_EXHAUSTED")
