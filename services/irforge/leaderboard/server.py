"""The Leaderboard gRPC door (protos/irforge/v1/leaderboard.proto), in the orchestrator's
process: decode, call the use cases (irforge.app.leaderboard.Leaderboard, handed in by whoever
hosts it: this room sits below app/), encode. Errors keep their type across the wire."""

from __future__ import annotations

import json

from irforge.common.grpc_errors import grpc_method, grpc_stream_method
from irforge.common.grpc_server import ServiceBinding
from irforge.leaderboard import errors as _errors  # noqa: F401 - registers the statuses the use cases raise
from irforge.leaderboard.board_render import render_board_text
from irforge.leaderboard.store import DatasetRecord
from irforge.orchestrator.server import file_chunks
from irforge.v1 import leaderboard_pb2, leaderboard_pb2_grpc

SERVICE_NAME = leaderboard_pb2.DESCRIPTOR.services_by_name["Leaderboard"].full_name  # "irforge.v1.Leaderboard"


def dataset_to_proto(record: DatasetRecord) -> leaderboard_pb2.Dataset:
    return leaderboard_pb2.Dataset(
        name=record.name, split=record.split, task=record.task, main_metric=record.main_metric, language=record.language,
        closed=record.closed, per_query=record.per_query, created=record.created, queries=record.queries,
        documents=record.documents, corpus_sha256=record.corpus_sha256, candidates_sha256=record.candidates_sha256,
        candidates_depth=record.candidates_depth, bm25_json=json.dumps(record.bm25, sort_keys=True))


def submission_to_proto(status) -> leaderboard_pb2.Submission:
    r = status.record
    return leaderboard_pb2.Submission(
        submission_id=r.submission_id, team=r.team, system=r.system, category=r.category, dataset=r.dataset, kind=r.kind,
        fingerprint=r.fingerprint, size=r.size, created=r.created, job_id=r.job_id, state=status.state,
        error=status.error, metrics=status.metrics, main_metric=status.main_metric, per_query=status.per_query)


class LeaderboardServicer(leaderboard_pb2_grpc.LeaderboardServicer):
    def __init__(self, cases):
        self.cases = cases

    @grpc_method
    def RegisterDataset(self, request, context):
        return dataset_to_proto(self.cases.register_dataset(
            request.name, request.source, split=request.split or "test", task=request.task or "qa",
            main_metric=request.main_metric or None, language=request.language or "en", closed=not request.open,
            per_query=request.per_query or None))

    @grpc_method
    def ListDatasets(self, request, context):
        return leaderboard_pb2.ListDatasetsResponse(datasets=[dataset_to_proto(d) for d in self.cases.list_datasets()])

    @grpc_stream_method
    def GetCandidates(self, request, context):
        for chunk in file_chunks("candidates.trec", self.cases.candidates(request.dataset)):
            yield leaderboard_pb2.FileChunk(data=chunk.data, last=chunk.last)

    @grpc_method
    def Submit(self, request, context):
        return submission_to_proto(self.cases.submit(dataset=request.dataset, system=request.system,
                                                     category=request.category, kind=request.kind, data=request.data))

    @grpc_method
    def ListSubmissions(self, request, context):
        return leaderboard_pb2.ListSubmissionsResponse(submissions=[submission_to_proto(s) for s in self.cases.submissions()])

    @grpc_method
    def GetSubmission(self, request, context):
        return submission_to_proto(self.cases.submission(request.submission_id))

    @grpc_method
    def GetBoard(self, request, context):
        board = self.cases.board(category=request.category or None, datasets=list(request.datasets) or None,
                                 language=request.language or None, task=request.task or None,
                                 since=request.since or None, until=request.until or None,
                                 baseline=request.baseline or None)
        return leaderboard_pb2.BoardResponse(board_json=json.dumps(board.as_dict(), default=str),
                                             board_text=render_board_text(board, request.text_format or "text"))


def binding(cases) -> ServiceBinding:
    return ServiceBinding(SERVICE_NAME, leaderboard_pb2_grpc.add_LeaderboardServicer_to_server, LeaderboardServicer(cases))
