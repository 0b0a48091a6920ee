"""A Leaderboard client over gRPC (the CLI's `irforge leaderboard ...`), raising the server's own
error types (LimitReached, LeaderboardError, DatasetNotFound, Forbidden...)."""

from __future__ import annotations

import json
from pathlib import Path

import grpc

from irforge.common.files import atomic_write
from irforge.common.grpc_errors import ServiceUnavailable, raise_from_rpc
from irforge.common.grpc_server import open_channel
from irforge.leaderboard import errors as _errors  # noqa: F401 - registers the types the server raises, to rebuild them
from irforge.leaderboard.board import BoardError  # noqa: F401 - registered there, raised by GetBoard
from irforge.orchestrator import client as _jobs  # noqa: F401 - registers what a submission's job checks raise
from irforge.v1 import leaderboard_pb2, leaderboard_pb2_grpc


class LeaderboardClient:
    def __init__(self, address: str, timeout: float = 600.0, token: str | None = None):
        """`token`: the caller's bearer token, for an orchestrator started with --auth tokens."""
        self.address = address
        self.timeout = timeout      # registering computes BM25 over the whole corpus
        self._channel = open_channel(address, channel="orchestrator", token=token)
        self._stub = leaderboard_pb2_grpc.LeaderboardStub(self._channel)

    def _call(self, method, request):
        try:
            return method(request, timeout=self.timeout)
        except grpc.RpcError as error:
            raise_from_rpc(error, self.address, channel="orchestrator")

    def register_dataset(self, name: str, source: str, *, split: str = "test", task: str = "qa",
                         main_metric: str | None = None, language: str = "en", closed: bool = True,
                         per_query: str | None = None) -> leaderboard_pb2.Dataset:
        return self._call(self._stub.RegisterDataset, leaderboard_pb2.RegisterDatasetRequest(
            name=name, source=source, split=split, task=task, main_metric=main_metric or "", language=language,
            open=not closed, per_query=per_query or ""))

    def datasets(self) -> list[leaderboard_pb2.Dataset]:
        return list(self._call(self._stub.ListDatasets, leaderboard_pb2.ListDatasetsRequest()).datasets)

    def candidates(self, dataset: str, out: Path) -> Path:
        """Write the dataset's BM25 top 100 to `out` whole, or not at all."""
        with atomic_write(out, "wb") as handle:
            try:
                finished = False
                for chunk in self._stub.GetCandidates(leaderboard_pb2.CandidatesRequest(dataset=dataset), timeout=self.timeout):
                    handle.write(chunk.data)
                    finished = chunk.last
            except grpc.RpcError as error:
                raise_from_rpc(error, self.address, channel="orchestrator")
            if not finished:
                raise ServiceUnavailable(f"{self.address}: the candidates stream of {dataset} ended early")
        return Path(out)

    def submit(self, *, dataset: str, system: str, category: str, kind: str, data: bytes) -> leaderboard_pb2.Submission:
        return self._call(self._stub.Submit, leaderboard_pb2.SubmitRequest(dataset=dataset, system=system, category=category,
                                                                           kind=kind, data=data))

    def submissions(self) -> list[leaderboard_pb2.Submission]:
        return list(self._call(self._stub.ListSubmissions, leaderboard_pb2.ListSubmissionsRequest()).submissions)

    def submission(self, submission_id: str) -> leaderboard_pb2.Submission:
        return self._call(self._stub.GetSubmission, leaderboard_pb2.SubmissionRef(submission_id=submission_id))

    def board(self, **filters) -> tuple[dict, str]:
        """(the board as JSON, as text: `text_format` "text" or "markdown")."""
        request = leaderboard_pb2.BoardRequest(**{k: v for k, v in filters.items() if v})
        answer = self._call(self._stub.GetBoard, request)
        return json.loads(answer.board_json), answer.board_text

    def close(self) -> None:
        self._channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
