"""Conversions between the judge's Python types (base.py) and the irforge.v1.Judge messages."""

from __future__ import annotations

from collections.abc import Sequence

from irforge.judge.base import Judgement, JudgeOutcome, JudgePair, JudgeStats, Verdict
from irforge.v1 import judge_pb2

_VERDICTS = {
    Verdict.LABELLED: judge_pb2.JUDGE_VERDICT_LABELLED,
    Verdict.UNPARSED: judge_pb2.JUDGE_VERDICT_UNPARSED,
    Verdict.FAILED: judge_pb2.JUDGE_VERDICT_FAILED,
}
_FROM_PROTO = {code: verdict for verdict, code in _VERDICTS.items()}
_STATS = tuple(JudgeStats.__dataclass_fields__)


def pairs_to_proto(pairs: Sequence[JudgePair]) -> judge_pb2.JudgeRequest:
    return judge_pb2.JudgeRequest(pairs=[
        judge_pb2.JudgePair(query_id=p.query_id, query=p.query, doc_id=p.doc_id, document=p.document) for p in pairs])


def pairs_from_proto(request: judge_pb2.JudgeRequest) -> list[JudgePair]:
    return [JudgePair(p.query_id, p.query, p.doc_id, p.document) for p in request.pairs]


def judgement_to_proto(j: Judgement) -> judge_pb2.LabelJudgement:
    message = judge_pb2.LabelJudgement(
        query_id=j.query_id, doc_id=j.doc_id, verdict=_VERDICTS[j.verdict], raw_output=j.raw_output,
        backend=j.backend, model=j.model, template_sha256=j.template_sha256, judge_id=j.judge_id, calls=j.calls,
        prompt_tokens=j.prompt_tokens, completion_tokens=j.completion_tokens, cost_usd=j.cost_usd, error=j.error,
        created_at=j.created_at, from_store=j.from_store)
    # proto3 `optional`: unset means None, never a silent 0 label.
    if j.label is not None:
        message.label = j.label
    if j.score is not None:
        message.score = j.score
    if j.record_id is not None:
        message.record_id = j.record_id
    return message


def judgement_from_proto(m: judge_pb2.LabelJudgement) -> Judgement:
    if m.verdict not in _FROM_PROTO:
        raise ValueError(f"judgement of ({m.query_id}, {m.doc_id}): unknown verdict code {m.verdict}")
    return Judgement(
        query_id=m.query_id, doc_id=m.doc_id, verdict=_FROM_PROTO[m.verdict],
        label=m.label if m.HasField("label") else None, raw_output=m.raw_output, backend=m.backend, model=m.model,
        template_sha256=m.template_sha256, judge_id=m.judge_id, calls=m.calls, prompt_tokens=m.prompt_tokens,
        completion_tokens=m.completion_tokens, cost_usd=m.cost_usd, score=m.score if m.HasField("score") else None,
        error=m.error, created_at=m.created_at, record_id=m.record_id if m.HasField("record_id") else None,
        from_store=m.from_store)


def outcome_to_proto(outcome: JudgeOutcome) -> judge_pb2.JudgeResponse:
    return judge_pb2.JudgeResponse(
        judgements=[judgement_to_proto(j) for j in outcome.judgements],
        stats=judge_pb2.JudgeStats(**{name: getattr(outcome.stats, name) for name in _STATS}))


def outcome_from_proto(response: judge_pb2.JudgeResponse) -> JudgeOutcome:
    return JudgeOutcome(judgements=[judgement_from_proto(m) for m in response.judgements],
                        stats=JudgeStats(**{name: getattr(response.stats, name) for name in _STATS}))


def add_stats(total: JudgeStats, part: JudgeStats) -> None:
    for name in _STATS:
        setattr(total, name, getattr(total, name) + getattr(part, name))
