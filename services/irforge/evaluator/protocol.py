"""Conversions between the evaluator's plain types and its protobuf messages."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager

from irforge.common.checks import INT32_MAX, INT32_MIN
from irforge.common.iterables import chunked
from irforge.data.entries import EntryError, add_judgement, add_run_entry
from irforge.data.types import Qrels, Run
from irforge.evaluator.core import EvaluationError, EvaluationOptions, EvaluationResult
from irforge.evaluator.depth import top_ranking
from irforge.evaluator.measures import MeasureError, parse_measures, reading_depth
from irforge.ranking import Ranking
from irforge.v1 import common_pb2, evaluator_pb2

ENTRIES_PER_MESSAGE = 10_000  # run/qrels lines per stream message (~0.5 MB)


def options_to_proto(measures: list[str], options: EvaluationOptions, per_query: bool) -> evaluator_pb2.EvaluateOptions:
    for name in ("relevance_level", "max_docs_per_query"):   # int32 fields: refused here, in words, not by protobuf
        if getattr(options, name) > INT32_MAX:
            raise EvaluationError(f"evaluation option {name} must be at most {INT32_MAX}, got {getattr(options, name)}")
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
    judgements = (_judgement(q, d, r) for q, docs in qrels.items() for d, r in docs.items())
    for chunk in chunked(judgements, ENTRIES_PER_MESSAGE):
        yield evaluator_pb2.EvaluateRequest(qrels=evaluator_pb2.QrelsChunk(judgements=chunk))
    depth = _depth_to_send(measures)
    entries = (common_pb2.RunEntry(query_id=q, doc_id=d, score=s)
               for q, scores in run.items() for d, s in _entries_to_send(q, scores, depth, options.drop_identical_ids))
    for chunk in chunked(entries, ENTRIES_PER_MESSAGE):
        yield evaluator_pb2.EvaluateRequest(run=evaluator_pb2.RunChunk(entries=chunk))


def _judgement(query_id: str, doc_id: str, relevance: int) -> common_pb2.Judgement:
    """One judgement as sent; a relevance the wire cannot carry is refused naming the pair, rather
    than by protobuf's bare "Value out of range" on gRPC's request thread."""
    if not INT32_MIN <= relevance <= INT32_MAX:
        raise EvaluationError(f"qrels: query {query_id!r}, document {doc_id!r}: relevance {relevance} is outside the "
                              f"range the evaluator service accepts ({INT32_MIN}..{INT32_MAX})")
    return common_pb2.Judgement(query_id=query_id, doc_id=doc_id, relevance=relevance)


def _depth_to_send(measures: list[str]) -> int:
    """The top D the server will read of each query (measures.py, MeasureRequest.depth); 0 = all.
    Names the server will refuse send everything: the server's answer is the error, as before."""
    try:
        return reading_depth(parse_measures(measures))
    except MeasureError:
        return 0


def _entries_to_send(query_id: str, scores: Mapping[str, float], depth: int, drop_identical_ids: bool) -> Iterable[tuple[str, float]]:
    """What the server needs of one query: its top `depth` by the tie rule (everything when 0).

    With BEIR's identical-id rule the server drops the query's own id before it cuts, so it gets
    one document more, and the own id wherever it is ranked (the count of dropped ids covers every
    rank). What arrives is a prefix of the ranking, so the server's values are the whole run's.
    """
    if not depth:
        return scores.pairs() if isinstance(scores, Ranking) else scores.items()
    try:
        top = top_ranking(scores, depth + 1 if drop_identical_ids else depth).pairs()
    except ValueError:  # a NaN score: send everything, and the server refuses it in the readers' words
        return scores.items()
    if drop_identical_ids and len(top) > depth and all(doc_id != query_id for doc_id, _ in top):
        top.extend(_own_id(query_id, scores))
    return top


def _own_id(query_id: str, scores: Mapping[str, float]) -> list[tuple[str, float]]:
    if isinstance(scores, Ranking):  # not `in`: that would build and cache the Ranking's dict
        found = (scores.doc_ids == query_id).nonzero()[0]
        return [(query_id, float(scores.scores[found[0]]))] if len(found) else []
    return [(query_id, scores[query_id])] if query_id in scores else []


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
