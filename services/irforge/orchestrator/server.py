"""The orchestrator's gRPC door: decode, call the core, encode. Its own error types keep their
type across the wire as every irforge error does (the type name prefixes the status details).

What a caller reads of a job passes through a disclosure policy (the leaderboard's, for jobs on
closed-book datasets: irforge.leaderboard.disclosure); without one, everything is shown."""

from __future__ import annotations

from pathlib import Path

from irforge.common.grpc_errors import grpc_method, grpc_stream_method
from irforge.common.grpc_server import ServiceBinding
from irforge.orchestrator import protocol
from irforge.orchestrator.core import Orchestrator
from irforge.orchestrator.errors import ResultsNotReady
from irforge.orchestrator.spec import JobSpec
from irforge.orchestrator.steps import result_files
from irforge.v1 import orchestrator_pb2, orchestrator_pb2_grpc

SERVICE_NAME = orchestrator_pb2.DESCRIPTOR.services_by_name["Orchestrator"].full_name  # "irforge.v1.Orchestrator"


class ShowEverything:
    """The disclosure policy of an orchestrator with no closed-book datasets."""

    def admit(self, spec) -> None:
        pass

    def record(self, record):
        return record

    def event(self, spec: dict, event):
        return event

    def result_file(self, spec: dict, name: str, path: Path) -> Path | bytes | None:
        """What to send of a results file: the file itself, other bytes, or nothing (None)."""
        return path


class OrchestratorServicer(orchestrator_pb2_grpc.OrchestratorServicer):
    def __init__(self, orchestrator: Orchestrator, disclosure=None):
        self.orchestrator = orchestrator
        self.disclosure = disclosure or ShowEverything()

    @grpc_method
    def SubmitJob(self, request, context):
        spec = JobSpec.from_proto(request)
        self.disclosure.admit(spec)
        return orchestrator_pb2.JobRef(job_id=self.orchestrator.submit(spec))

    @grpc_stream_method
    def WatchJob(self, request, context):
        spec = self.orchestrator.get(request.job_id).spec
        for event in self.orchestrator.watch(request.job_id, request.after_sequence, is_active=context.is_active):
            yield protocol.event_to_proto(self.disclosure.event(spec, event))

    @grpc_method
    def GetJob(self, request, context):
        return protocol.job_to_proto(self.disclosure.record(self.orchestrator.get(request.job_id)))

    @grpc_method
    def ListJobs(self, request, context):
        return orchestrator_pb2.ListJobsResponse(
            jobs=[protocol.job_to_proto(self.disclosure.record(r)) for r in self.orchestrator.list(request.limit)])

    @grpc_method
    def CancelJob(self, request, context):
        return protocol.job_to_proto(self.disclosure.record(self.orchestrator.cancel(request.job_id)))

    @grpc_stream_method
    def GetResults(self, request, context):
        try:
            folder = self.orchestrator.results_dir(request.job_id)   # first: the core audits the call, refused or not
        except ResultsNotReady:   # its message quotes the job's error: the one the caller may read
            record = self.disclosure.record(self.orchestrator.get(request.job_id))
            raise ResultsNotReady(f"job {record.job_id} is {record.state.value}" + (f": {record.error}" if record.error else "")
                                  + "; results exist once it has SUCCEEDED") from None
        record = self.orchestrator.get(request.job_id)
        for name in result_files(folder):
            shown = self.disclosure.result_file(record.spec, name, folder / name)
            if isinstance(shown, Path):
                yield from file_chunks(name, shown)
            elif shown is not None:
                for start in range(0, max(len(shown), 1), protocol.RESULT_CHUNK_BYTES):
                    yield orchestrator_pb2.ResultChunk(name=name, data=shown[start:start + protocol.RESULT_CHUNK_BYTES],
                                                       last=start + protocol.RESULT_CHUNK_BYTES >= len(shown))


def file_chunks(name: str, path: Path):
    with open(path, "rb") as handle:
        while True:
            data = handle.read(protocol.RESULT_CHUNK_BYTES)
            last = len(data) < protocol.RESULT_CHUNK_BYTES
            yield orchestrator_pb2.ResultChunk(name=name, data=data, last=last)
            if last:
                break


def binding(orchestrator: Orchestrator, disclosure=None) -> ServiceBinding:
    """`disclosure`: what callers may read of which job (irforge.leaderboard.disclosure.Disclosure)."""
    return ServiceBinding(SERVICE_NAME, orchestrator_pb2_grpc.add_OrchestratorServicer_to_server,
                          OrchestratorServicer(orchestrator, disclosure))
