"""Typed client for irforge's Evaluator service: trec_eval-exact metrics for your run."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import islice

from irforge_client._channel import Tls, channel
from irforge_client.v1 import common_pb2, evaluator_pb2, evaluator_pb2_grpc

ENTRIES_PER_MESSAGE = 10_000
DEFAULT_MEASURES = ("nDCG@10", "R@100", "AP@100", "RR@10", "P@10", "Judged@10")


@dataclass(frozen=True)
class Evaluation:
    measure_names: list[str]
    aggregate: dict[str, float]
    per_query: dict[str, dict[str, float]]
    queries_evaluated: int
    identical_ids_dropped: int
    versions: dict[str, str]


def _chunks(items, size: int) -> Iterator[list]:
    iterator = iter(items)
    while chunk := list(islice(iterator, size)):
        yield chunk


class EvaluatorClient:
    """`EvaluatorClient("127.0.0.1:50051").evaluate(qrels, run)`; qrels and run as nested dicts
    (query id -> doc id -> relevance / score). Streams them in chunks, so runs of any size work."""

    def __init__(self, address: str, timeout: float = 600.0, *, tls: Tls | None = None):
        self._channel = channel(address, tls)
        self._stub = evaluator_pb2_grpc.EvaluatorStub(self._channel)
        self.timeout = timeout

    def evaluate(self, qrels: Mapping[str, Mapping[str, int]], run: Mapping[str, Mapping[str, float]],
                 measures: Sequence[str] = DEFAULT_MEASURES, *, drop_identical_ids: bool = True,
                 complete: bool = False, relevance_level: int = 1, max_docs_per_query: int = 0) -> Evaluation:
        def requests():
            yield evaluator_pb2.EvaluateRequest(options=evaluator_pb2.EvaluateOptions(
                measures=list(measures), drop_identical_ids=drop_identical_ids, complete=complete,
                relevance_level=relevance_level, max_docs_per_query=max_docs_per_query, per_query=True,
            ))
            judgements = (common_pb2.Judgement(query_id=q, doc_id=d, relevance=r) for q, docs in qrels.items() for d, r in docs.items())
            for chunk in _chunks(judgements, ENTRIES_PER_MESSAGE):
                yield evaluator_pb2.EvaluateRequest(qrels=evaluator_pb2.QrelsChunk(judgements=chunk))
            entries = (common_pb2.RunEntry(query_id=q, doc_id=d, score=s) for q, docs in run.items() for d, s in docs.items())
            for chunk in _chunks(entries, ENTRIES_PER_MESSAGE):
                yield evaluator_pb2.EvaluateRequest(run=evaluator_pb2.RunChunk(entries=chunk))

        reply = self._stub.Evaluate(requests(), timeout=self.timeout)
        names = list(reply.measure_names)
        return Evaluation(
            measure_names=names,
            aggregate={n: reply.aggregate.values[n] for n in names},
            per_query={q: dict(v.values) for q, v in sorted(reply.per_query.items())},
            queries_evaluated=reply.queries_evaluated,
            identical_ids_dropped=reply.identical_ids_dropped,
            versions=dict(reply.versions),
        )

    def list_measures(self) -> tuple[list[str], list[str]]:
        reply = self._stub.ListMeasures(evaluator_pb2.ListMeasuresRequest(), timeout=self.timeout)
        return list(reply.ir_measures_names), list(reply.trec_eval_names)

    def close(self) -> None:
        self._channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
