"""Conversions between the orchestrator core's types and the Orchestrator protobuf messages."""

from __future__ import annotations

from irforge.orchestrator.spec import JobSpec
from irforge.orchestrator.store import JobEvent, JobRecord, JobState, StepRecord
from irforge.v1 import orchestrator_pb2

RESULT_CHUNK_BYTES = 1 << 20   # GetResults sends files in 1 MiB pieces: far below the message cap


def job_to_proto(record: JobRecord) -> orchestrator_pb2.JobStatus:
    return orchestrator_pb2.JobStatus(
        job_id=record.job_id, state=orchestrator_pb2.JobState.Value(record.state.value),
        spec=JobSpec.from_dict(record.spec).to_proto(),
        steps=[orchestrator_pb2.StepStatus(name=s.name, state=s.state, executions=s.executions, started_at=s.started_at,
                                           finished_at=s.finished_at) for s in record.steps],
        error=record.error, created_at=record.created_at, updated_at=record.updated_at, metrics=record.metrics,
        warnings=record.warnings, owner=record.owner,
    )


def job_from_proto(message: orchestrator_pb2.JobStatus) -> JobRecord:
    return JobRecord(
        job_id=message.job_id, spec=JobSpec.from_proto(message.spec).as_dict(),
        state=JobState(orchestrator_pb2.JobState.Name(message.state)), error=message.error,
        created_at=message.created_at, updated_at=message.updated_at, metrics=dict(message.metrics),
        steps=[StepRecord(s.name, s.state, s.executions, s.started_at, s.finished_at, 0.0, {}) for s in message.steps],
        warnings=tuple(message.warnings), owner=message.owner,
    )


def event_to_proto(event: JobEvent) -> orchestrator_pb2.JobEvent:
    return orchestrator_pb2.JobEvent(
        sequence=event.sequence, job_id=event.job_id, step=event.step, state=event.state, done=event.done,
        total=event.total, rate=event.rate, eta_seconds=event.eta_seconds, message=event.message, time=event.time,
        unit=event.unit,
    )


def event_from_proto(message: orchestrator_pb2.JobEvent) -> JobEvent:
    return JobEvent(job_id=message.job_id, sequence=message.sequence, time=message.time, step=message.step,
                    state=message.state, done=message.done, total=message.total, rate=message.rate,
                    eta_seconds=message.eta_seconds, message=message.message, unit=message.unit)
