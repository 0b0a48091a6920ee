"""The orchestrator's gRPC door: decode, call the core, encode. Its own error types keep their
type across the wire as every irforge error does (the type name prefixes the status details)."""

from __future__ import annotations

import functools

from irforge.common.grpc_errors import abort
from irforge.common.grpc_server import ServiceBinding
from irforge.orchestrator import protocol
from irforge.orchestrator.core import Orchestrator
from irforge.orchestrator.spec import JobSpec
from irforge.orchestrator.steps import result_files
from irforge.v1 import orchestrator_pb2, orchestrator_pb2_grpc

SERVICE_NAME = orchestrator_pb2.DESCRIPTOR.services_by_name["Orchestrator"].full_name  # "irforge.v1.Orchestrator"


def _unary(method):
    @functools.wraps(method)
    def wrapper(self, request, context):
        try:
            return method(self, request, context)
        except Exception as error:  # noqa: BLE001 - every error reaches the client as a status
            abort(context, error)
    return wrapper


def _stream(method):
    @functools.wraps(method)
    def wrapper(self, request, context):
        try:
            yield from method(self, request, context)
        except Exception as error:  # noqa: BLE001
            abort(context, error)
    return wrapper


class OrchestratorServicer(orchestrator_pb2_grpc.OrchestratorServicer):
    def __init__(self, orchestrator: Orchestrator):
        self.orchestrator = orchestrator

    @_unary
    def SubmitJob(self, request, context):
        return orchestrator_pb2.JobRef(job_id=self.orchestrator.submit(JobSpec.from_proto(request)))

    @_stream
    def WatchJob(self, request, context):
        for event in self.orchestrator.watch(request.job_id, request.after_sequence, is_active=context.is_active):
            yield protocol.event_to_proto(event)

    @_unary
    def GetJob(self, request, context):
        return protocol.job_to_proto(self.orchestrator.get(request.job_id))

    @_unary
    def ListJobs(self, request, context):
        return orchestrator_pb2.ListJobsResponse(jobs=[protocol.job_to_proto(r) for r in self.orchestrator.list(request.limit)])

    @_unary
    def CancelJob(self, request, context):
        return protocol.job_to_proto(self.orchestrator.cancel(request.job_id))

    @_stream
    def GetResults(self, request, context):
        folder = self.orchestrator.results_dir(request.job_id)
        for name in result_files(folder):
            with open(folder / name, "rb") as handle:
                while True:
                    data = handle.read(protocol.RESULT_CHUNK_BYTES)
                    last = len(data) < protocol.RESULT_CHUNK_BYTES
                    yield orchestrator_pb2.ResultChunk(name=name, data=data, last=last)
                    if last:
                        break


def binding(orchestrator: Orchestrator) -> ServiceBinding:
    return ServiceBinding(SERVICE_NAME, orchestrator_pb2_grpc.add_OrchestratorServicer_to_server,
                          OrchestratorServicer(orchestrator))
