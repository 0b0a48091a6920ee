"""An evaluator client over gRPC with the same `evaluate` as the in-process Evaluator."""

from __future__ import annotations

import grpc

from irforge.common.grpc_errors import RequestStream, raise_from_rpc
from irforge.common.grpc_server import open_channel
from irforge.data.types import Qrels, Run
from irforge.evaluator import protocol
from irforge.evaluator.core import EvaluationOptions, EvaluationResult
from irforge.evaluator.measures import DEFAULT_MEASURES
from irforge.v1 import evaluator_pb2_grpc


class RemoteEvaluator:
    def __init__(self, address: str, timeout: float = 600.0):
        self.address = address
        self.timeout = timeout
        self._channel = open_channel(address, channel="evaluator")
        self._stub = evaluator_pb2_grpc.EvaluatorStub(self._channel)

    def evaluate(
        self, qrels: Qrels, run: Run, measures: list[str] | tuple[str, ...] = DEFAULT_MEASURES,
        options: EvaluationOptions = EvaluationOptions(),
    ) -> EvaluationResult:
        requests = RequestStream(protocol.request_stream(qrels, run, list(measures), options, per_query=True))
        try:
            reply = self._stub.Evaluate(iter(requests), timeout=self.timeout)
        except grpc.RpcError as error:
            raise_from_rpc(error, self.address, sent=requests, channel="evaluator")
        return protocol.result_from_proto(reply)

    def close(self) -> None:
        self._channel.close()
