"""Which request and which job the current code works for: context variables every log line and
every outgoing gRPC call read, so one id follows a request across services.

    with bound(job_id=job.job_id):          # e.g. the orchestrator running a job's steps
        corpus.ingest(...)                   # the call carries x-irforge-job-id (and x-request-id)

gRPC servers bind both ids for each handler (irforge.common.grpc_interceptors); a thread started
inside a handler does not inherit them (threads start with an empty context): wrap its target
with `contextvars.copy_context().run` or bind the ids again there.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

REQUEST_ID_HEADER = "x-request-id"        # the de facto standard header (Envoy, nginx, most tracers)
JOB_ID_HEADER = "x-irforge-job-id"

# Ids arrive from clients and end up in log lines: accept only short, plain tokens, so a caller can
# neither inject fake log lines (newlines, quotes) nor blow up log volume.
_SAFE_ID = re.compile(r"[A-Za-z0-9._:/-]{1,128}")

_request_id: ContextVar[str | None] = ContextVar("irforge_request_id", default=None)
_job_id: ContextVar[str | None] = ContextVar("irforge_job_id", default=None)


def current_request_id() -> str | None:
    return _request_id.get()


def current_job_id() -> str | None:
    return _job_id.get()


def new_request_id() -> str:
    return uuid.uuid4().hex


def safe_id(value: str | None) -> str | None:
    """`value` when it is an acceptable id, else None (the caller mints or drops it)."""
    return value if value is not None and _SAFE_ID.fullmatch(value) else None


@contextmanager
def bound(request_id: str | None = None, job_id: str | None = None) -> Iterator[None]:
    """Bind the given ids (None keeps the current one) for the duration of the block."""
    tokens = []
    if request_id is not None:
        tokens.append((_request_id, _request_id.set(request_id)))
    if job_id is not None:
        tokens.append((_job_id, _job_id.set(job_id)))
    try:
        yield
    finally:
        for variable, token in reversed(tokens):
            variable.reset(token)


def bind_in_current_context(request_id: str | None, job_id: str | None) -> None:
    """Set both ids in the running context, for a context made for one request (no reset needed)."""
    _request_id.set(request_id)
    _job_id.set(job_id)


def outgoing_metadata() -> list[tuple[str, str]]:
    """The metadata that carries the current ids to the next service."""
    metadata = []
    if (request_id := _request_id.get()) is not None:
        metadata.append((REQUEST_ID_HEADER, request_id))
    if (job_id := _job_id.get()) is not None:
        metadata.append((JOB_ID_HEADER, job_id))
    return metadata
