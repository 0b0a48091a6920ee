"""A judge client over gRPC with the same judge() / identity() as JudgeCore, raising the same errors.

Large requests go in chunks of `chunk_pairs` pairs (one RPC each, well under the message limit:
a SciFact abstract is ~1.5 KB); the judgements come back in input order and the stats summed.
A chunk that fails raises, and what earlier chunks judged is already in the server's store, so
asking again costs only the rest.
"""

from __future__ import annotations

from collections.abc import Sequence

import grpc

from irforge.common.grpc_errors import raise_from_rpc
from irforge.common.grpc_server import open_channel
from irforge.judge import protocol
from irforge.judge.base import JudgeOutcome, JudgePair, Progress, identity_sha256
from irforge.judge.core import check_pairs
from irforge.v1 import judge_pb2, judge_pb2_grpc

CHUNK_PAIRS = 256


class RemoteJudge:
    def __init__(self, address: str, timeout: float = 3600.0, chunk_pairs: int = CHUNK_PAIRS):
        self.address = address
        self.timeout = timeout          # per chunk: an LLM behind the server may be slow and rate-limited
        self.chunk_pairs = chunk_pairs
        self._channel = open_channel(address, channel="judge")
        self._stub = judge_pb2_grpc.JudgeStub(self._channel)

    def identity(self) -> dict[str, str]:
        try:
            reply = self._stub.Identity(judge_pb2.JudgeIdentityRequest(), timeout=60.0)
        except grpc.RpcError as error:
            raise_from_rpc(error, self.address, channel="judge")
        return dict(reply.identity)

    @property
    def judge_id(self) -> str:
        return identity_sha256(self.identity())

    def judge(self, pairs: Sequence[JudgePair], progress: Progress | None = None) -> JudgeOutcome:
        pairs = list(pairs)
        check_pairs(pairs)  # the same error, raised here, before anything is sent
        total = JudgeOutcome()
        for start in range(0, len(pairs), self.chunk_pairs):
            chunk = pairs[start:start + self.chunk_pairs]
            try:
                reply = self._stub.Judge(protocol.pairs_to_proto(chunk), timeout=self.timeout)
            except grpc.RpcError as error:
                raise_from_rpc(error, self.address, channel="judge")
            outcome = protocol.outcome_from_proto(reply)
            total.judgements.extend(outcome.judgements)
            protocol.add_stats(total.stats, outcome.stats)
            if progress is not None:
                progress(len(chunk))
        return total

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> RemoteJudge:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()
