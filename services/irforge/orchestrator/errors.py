"""The orchestrator's own errors. Each keeps its type across the wire (registered below, see
irforge.common.grpc_errors)."""

from __future__ import annotations

from irforge.common.error_status import register_status


class JobSpecError(ValueError):
    """A job spec that cannot run: names the field and what is wrong with it."""


class RequestError(ValueError):
    """A request field outside what the orchestrator accepts (ListJobs' limit): names the field."""


class JobNotFound(LookupError):
    def __init__(self, job_id: str):
        super().__init__(f"no job {job_id!r} (list jobs with `irforge jobs`)")


class ResultsNotReady(RuntimeError):
    """GetResults on a job that has not succeeded (yet)."""


class JobCancelled(Exception):
    """Raised inside a running step when its job is cancelled."""


class OrchestratorStopping(Exception):
    """Raised inside a running step when the orchestrator shuts down: the job stays RUNNING and
    resumes, from its last completed step, when an orchestrator starts on the same state."""


# How each travels over gRPC (irforge.common.grpc_errors).
register_status(JobSpecError, "INVALID_ARGUMENT")
register_status(RequestError, "INVALID_ARGUMENT")
register_status(JobNotFound, "NOT_FOUND")
register_status(ResultsNotReady, "FAILED_PRECONDITION")
