"""The Judge service's gRPC door (irforge.v1.Judge): decode, call JudgeCore, encode."""

from __future__ import annotations

from irforge.common.grpc_errors import grpc_method
from irforge.common.grpc_server import ServiceBinding
from irforge.judge import protocol
from irforge.judge.base import identity_sha256
from irforge.judge.core import JudgeCore
from irforge.v1 import judge_pb2, judge_pb2_grpc

SERVICE_NAME = judge_pb2.DESCRIPTOR.services_by_name["Judge"].full_name  # "irforge.v1.Judge"


class JudgeServicer(judge_pb2_grpc.JudgeServicer):
    def __init__(self, core: JudgeCore):
        self.core = core

    @grpc_method
    def Judge(self, request, context):
        return protocol.outcome_to_proto(self.core.judge(protocol.pairs_from_proto(request)))

    @grpc_method
    def Identity(self, request, context):
        identity = self.core.identity()
        return judge_pb2.JudgeIdentityResponse(identity=identity, judge_id=identity_sha256(identity))


def binding(core: JudgeCore) -> ServiceBinding:
    return ServiceBinding(SERVICE_NAME, judge_pb2_grpc.add_JudgeServicer_to_server, JudgeServicer(core))
