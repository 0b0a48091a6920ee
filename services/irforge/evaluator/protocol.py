"""Conversions between the evaluator's plain types and its protobuf messages."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from irforge.common.iterables import chunked
from irforge.data.entries import EntryError, add_judgement, add_run_entry
from irforge.data.types import Qrels, Run
from irforge.evaluator.core import EvaluationError, EvaluationOptions, EvaluationResult
from irforge.v1 import common_pb2, evaluator_pb2

ENTRIES_PER_MESSAGE = 10_000  # run/qrels lines per stream message (~0.5 MB)


def options_to_proto(measures: list[str], options: EvaluationOptions, per_query: bool) -> evaluator_pb2.EvaluateOptions:
    return evaluator_pb2.EvaluateOptions(
        measures=measures, drop_identical_ids=options.drop_identical_ids, complete=options.complete,
        relevance_level=options.relevance_level, max_docs_per_query=options.max_docs_per_query, per_query=per_query,
    )


def options_from_proto(message: evaluator_pb2.EvaluateOptions) -> EvaluationOptions:
    return EvaluationOptions(
        drop_identical_ids=message.drop_identical_ids if message.HasField("drop_identical_ids") else True,
        complete=message.complete,
        relevance_level=message.relevance_level or 1,
        max_docs_per_query=message.max_docs_per_query,
    )


def request_stream(qrels: Qrels, run: Run, measures: list[str], options: EvaluationOptions, per_query: bool) -> Iterator[evaluator_pb2.EvaluateRequest]:
    yield evaluator_pb2.EvaluateRequest(options=options_to_proto(measures, options, per_query))
    judgements = (common_pb2.Judgement(query_id=q, doc_id=d, relevance=r) for q, docs in qrels.items() for d, r in docs.items())
    for chunk in chunked(judgements, ENTRIES_PER_MESSAGE):
        yield evaluator_pb2.EvaluateRequest(qrels=evaluator_pb2.QrelsChunk(judgements=chunk))
    entries = (common_pb2.RunEntry(query_id=q, doc_id=d, score=s) for q, scores in run.items() for d, s in scores.items())
    for chunk in chunked(entries, ENTRIES_PER_MESSAGE):
        yield evaluator_pb2.EvaluateRequest(run=evaluator_pb2.RunChunk(entries=chunk))


@contextmanager
def _refusing(part: str):
    """A bad entry is the request's error (INVALID_ARGUMENT), in the file readers' words: a map
    would keep the last of two scores or judgements, and NaN would rank as nonsense."""
    try:
        yield
    except EntryError as error:
        raise EvaluationError(f"the request's {part}: {error}") from None


def collect_request(messages: Iterator[evaluator_pb2.EvaluateRequest]) -> tuple[evaluator_pb2.EvaluateOptions, Qrels, Run]:
    options = None
    qrels: Qrels = {}
    run: Run = {}
    for message in messages:
        kind = message.WhichOneof("chunk")
        if kind == "options":
            if options is not None:
                raise ValueError("Evaluate: options sent twice")
            options = message.options
        elif options is None:
            raise ValueError("Evaluate: the first message must carry the options")
        elif kind == "qrels":
            with _refusing("qrels"):
                for j in message.qrels.judgements:
                    add_judgement(qrels, j.query_id, j.doc_id, j.relevance)
        elif kind == "run":
            with _refusing("run"):
                for e in message.run.entries:
                    add_run_entry(run, e.query_id, e.doc_id, e.score)
    if options is None:
        raise ValueError("Evaluate: empty request stream")
    return options, qrels, run


def result_to_proto(result: EvaluationResult, measures: list[str], per_query: bool) -> evaluator_pb2.EvaluateResponse:
    return evaluator_pb2.EvaluateResponse(
        aggregate=evaluator_pb2.MeasureValues(values=result.aggregate),
        per_query={q: evaluator_pb2.MeasureValues(values=v) for q, v in result.per_query.items()} if per_query else {},
        measure_names=result.measure_names,
        queries_evaluated=result.queries_evaluated,
        identical_ids_dropped=result.identical_ids_dropped,
        applied_options=options_to_proto(measures, result.options, per_query),
        versions=result.versions,
    )


def result_from_proto(message: evaluator_pb2.EvaluateResponse) -> EvaluationResult:
    names = list(message.measure_names)
    return EvaluationResult(
        measure_names=names,
        aggregate={n: message.aggregate.values[n] for n in names},
        per_query={q: {n: v.values[n] for n in names if n in v.values} for q, v in sorted(message.per_query.items())},
        queries_evaluated=message.queries_evaluated,
        identical_ids_dropped=message.identical_ids_dropped,
        options=options_from_proto(message.applied_options),
        versions=dict(message.versions),
    )
