"""The evaluator's gRPC door."""

from __future__ import annotations

from irforge.common.grpc_errors import grpc_method
from irforge.common.grpc_server import ServiceBinding
from irforge.evaluator import protocol
from irforge.evaluator.core import Evaluator
from irforge.evaluator.measures import DEFAULT_MEASURES, supported_names
from irforge.v1 import evaluator_pb2, evaluator_pb2_grpc


class EvaluatorServicer(evaluator_pb2_grpc.EvaluatorServicer):
    def __init__(self, evaluator: Evaluator):
        self.evaluator = evaluator

    @grpc_method
    def Evaluate(self, request_iterator, context):
        options_message, qrels, run = protocol.collect_request(request_iterator)
        measures = list(options_message.measures) or list(DEFAULT_MEASURES)
        result = self.evaluator.evaluate(qrels, run, measures, protocol.options_from_proto(options_message))
        return protocol.result_to_proto(result, measures, options_message.per_query)

    @grpc_method
    def ListMeasures(self, request, context):
        ir_names, trec_names = supported_names()
        return evaluator_pb2.ListMeasuresResponse(ir_measures_names=ir_names, trec_eval_names=trec_names)


def binding(evaluator: Evaluator) -> ServiceBinding:
    return ServiceBinding(
        evaluator_pb2.DESCRIPTOR.services_by_name["Evaluator"].full_name,
        evaluator_pb2_grpc.add_EvaluatorServicer_to_server,
        EvaluatorServicer(evaluator),
    )
