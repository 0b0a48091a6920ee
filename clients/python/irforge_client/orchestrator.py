"""Typed client for irforge's Orchestrator: submit evaluation jobs, follow them, fetch results.

    with OrchestratorClient("127.0.0.1:50050") as client:
        job_id = client.submit(pipeline={"dataset": "/data/beir/scifact", "retriever": "bm25"})
        for event in client.watch(job_id):
            print(event.step, event.state, event.done, event.total)
        client.results(job_id, "runs/scifact-bm25")     # results.json and run.trec

A spec is the JobSpec message's fields (as keyword arguments or one mapping): `pipeline`, the
pipeline configuration `irforge eval` takes, nested by section (e.g. pipeline={"dataset": DIR,
"retriever": "hybrid", "bm25": {"k1": 1.2}, "fusion": {"method": "linear"}}), and the job's own
`output`, `shards`, `name`, `instructions`, `datasets`; paths are on the orchestrator's filesystem.

On a shared platform (`--auth tokens`) the client sends your team's token: `token=...`, or by
default $IRFORGE_TOKEN.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import grpc
from google.protobuf import json_format

from irforge_client._channel import Tls, channel
from irforge_client.v1 import orchestrator_pb2, orchestrator_pb2_grpc

ENDED = ("SUCCEEDED", "FAILED", "CANCELLED")


class JobError(RuntimeError):
    """The orchestrator refused a request (bad spec, unknown job, results not ready): its message."""

    def __init__(self, code: grpc.StatusCode, message: str):
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class JobEvent:
    sequence: int
    job_id: str
    step: str           # "" for the job itself
    state: str          # step: running, progress, done, retrying, failed; job: QUEUED ... CANCELLED
    done: int
    total: int
    rate: float         # units per second
    eta_seconds: float  # -1 when unknown
    message: str
    unit: str
    time: str


@dataclass(frozen=True)
class Job:
    job_id: str
    state: str          # QUEUED, RUNNING, SUCCEEDED, FAILED, CANCELLED
    error: str
    spec: dict
    steps: list[dict] = field(default_factory=list)   # name, state, executions, started_at, finished_at
    metrics: dict[str, float] = field(default_factory=dict)
    created_at: str = ""
    updated_at: str = ""
    # What a SUCCEEDED job could not do (e.g. holes the judge failed on): its results are incomplete.
    warnings: list[str] = field(default_factory=list)
    owner: str = ""     # "team:NAME" or "operator:NAME": who submitted it

    @property
    def ended(self) -> bool:
        return self.state in ENDED


def _job(message) -> Job:
    return Job(
        job_id=message.job_id, state=orchestrator_pb2.JobState.Name(message.state), error=message.error,
        spec=json_format.MessageToDict(message.spec, preserving_proto_field_name=True),
        steps=[json_format.MessageToDict(s, preserving_proto_field_name=True, always_print_fields_with_no_presence=True)
               for s in message.steps],
        metrics=dict(message.metrics), created_at=message.created_at, updated_at=message.updated_at,
        warnings=list(message.warnings), owner=message.owner,
    )


TOKEN_VARIABLE = "IRFORGE_TOKEN"


class OrchestratorClient:
    def __init__(self, address: str, timeout: float = 60.0, *, tls: Tls | None = None, token: str | None = None):
        """`token`: your team's token, for a platform started with --auth tokens (default
        $IRFORGE_TOKEN; keep it out of code). Without a valid one, calls raise JobError with code
        UNAUTHENTICATED; another team's job raises NOT_FOUND, as a job that does not exist."""
        self.address = address
        self.timeout = timeout
        self._channel = channel(address, tls, token if token is not None else (os.environ.get(TOKEN_VARIABLE) or None))
        self._stub = orchestrator_pb2_grpc.OrchestratorStub(self._channel)

    def _call(self, method, request):
        try:
            return method(request, timeout=self.timeout)
        except grpc.RpcError as error:
            raise JobError(error.code(), f"{self.address}: {error.details()}") from None

    def submit(self, spec: Mapping | None = None, **fields) -> str:
        """Queue a job; returns its id. Unknown fields and bad values raise JobError at once."""
        message = json_format.ParseDict({**(spec or {}), **fields}, orchestrator_pb2.JobSpec())
        return self._call(self._stub.SubmitJob, message).job_id

    def get(self, job_id: str) -> Job:
        return _job(self._call(self._stub.GetJob, orchestrator_pb2.JobRef(job_id=job_id)))

    def list(self, limit: int = 100) -> list[Job]:
        return [_job(j) for j in self._call(self._stub.ListJobs, orchestrator_pb2.ListJobsRequest(limit=limit)).jobs]

    def cancel(self, job_id: str) -> Job:
        return _job(self._call(self._stub.CancelJob, orchestrator_pb2.JobRef(job_id=job_id)))

    def watch(self, job_id: str, after: int = 0) -> Iterator[JobEvent]:
        """Every event of the job (after `after`), until it has ended."""
        stream = self._stub.WatchJob(orchestrator_pb2.WatchJobRequest(job_id=job_id, after_sequence=after))
        try:
            for m in stream:
                yield JobEvent(m.sequence, m.job_id, m.step, m.state, m.done, m.total, m.rate, m.eta_seconds,
                               m.message, m.unit, m.time)
        except grpc.RpcError as error:
            raise JobError(error.code(), f"{self.address}: {error.details()}") from None
        finally:
            stream.cancel()

    def wait(self, job_id: str) -> Job:
        """Follow the job to its end; returns its final state (check `.state` and `.error`)."""
        for _ in self.watch(job_id):
            pass
        return self.get(job_id)

    def results(self, job_id: str, out_dir: str | os.PathLike) -> list[Path]:
        """Write the finished job's results.json and run.trec into out_dir; each file appears
        whole or not at all. A suite job's files keep their layout: suite.json, suite.md and
        <label>/results.json, <label>/run.trec per dataset."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        parts: dict[str, list[bytes]] = {}
        written = []
        try:
            for chunk in self._stub.GetResults(orchestrator_pb2.JobRef(job_id=job_id), timeout=self.timeout):
                parts.setdefault(chunk.name, []).append(chunk.data)
                if chunk.last:
                    target = out / _relative_name(chunk.name)
                    target.parent.mkdir(parents=True, exist_ok=True)
                    written.append(_write_atomic(target, b"".join(parts.pop(chunk.name))))
        except grpc.RpcError as error:
            raise JobError(error.code(), f"{self.address}: {error.details()}") from None
        return written

    def close(self) -> None:
        self._channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _relative_name(name: str) -> Path:
    """Where a streamed file goes under out_dir: `name`, or a suite's `<label>/<name>`; never outside it."""
    parts = Path(name).parts
    if len(parts) == 2 and not Path(name).is_absolute() and not any(part in (".", "..") for part in parts):
        return Path(*parts)
    return Path(Path(name).name)


def _write_atomic(path: Path, data: bytes) -> Path:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    return path
