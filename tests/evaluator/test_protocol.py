"""The evaluator's gRPC door refuses what the file readers refuse, in the same words; a client sends
only what the measures read."""

import random

import pytest

from irforge.data import DataFormatError, read_trec_qrels
from irforge.runs import read_run_file
from irforge.evaluator import protocol
from irforge.evaluator.core import EvaluationError, EvaluationOptions, Evaluator
from irforge.evaluator.measures import DEFAULT_MEASURES
from irforge.ranking import Ranking, ranked
from irforge.v1 import common_pb2, evaluator_pb2

OPTIONS = evaluator_pb2.EvaluateRequest(options=protocol.options_to_proto(["P@1"], EvaluationOptions(), False))


def run_message(*entries):
    return evaluator_pb2.EvaluateRequest(run=evaluator_pb2.RunChunk(
        entries=[common_pb2.RunEntry(query_id=q, doc_id=d, score=s) for q, d, s in entries]))


def qrels_message(*judgements):
    return evaluator_pb2.EvaluateRequest(qrels=evaluator_pb2.QrelsChunk(
        judgements=[common_pb2.Judgement(query_id=q, doc_id=d, relevance=r) for q, d, r in judgements]))


def file_reason(reader, tmp_path, text) -> str:
    path = tmp_path / "file.txt"
    path.write_text(text)
    with pytest.raises(DataFormatError) as caught:
        reader(path)
    return caught.value.reason


@pytest.mark.parametrize("score", ["nan", "inf", "-inf"])
def test_a_non_finite_score_is_refused_as_by_the_run_reader(tmp_path, score):
    reason = file_reason(read_run_file, tmp_path, f"q1 Q0 d1 1 {score} t\n")
    with pytest.raises(EvaluationError) as caught:
        protocol.collect_request(iter([OPTIONS, run_message(("q1", "d1", float(score)))]))
    assert str(caught.value) == f"the request's run: {reason}"
    assert "query 'q1', document 'd1'" in reason


def test_a_run_entry_sent_twice_is_refused_as_by_the_run_reader(tmp_path):
    # Split over two messages, as a large run is: the check spans the whole stream.
    reason = file_reason(read_run_file, tmp_path, "q1 Q0 d1 1 1.0 t\nq1 Q0 d1 2 0.5 t\n")
    messages = [OPTIONS, run_message(("q1", "d1", 1.0)), run_message(("q2", "d1", 1.0), ("q1", "d1", 0.5))]
    with pytest.raises(EvaluationError) as caught:
        protocol.collect_request(iter(messages))
    assert reason == "document 'd1' appears twice for query 'q1' (first at line 1)"  # the file names its lines, the stream cannot
    assert str(caught.value) == f"the request's run: {reason.removesuffix(' (first at line 1)')}"


def test_conflicting_judgements_are_refused_as_by_the_qrels_reader(tmp_path):
    reason = file_reason(read_trec_qrels, tmp_path, "q1 0 d1 1\nq1 0 d1 1\nq1 0 d1 0\n")
    messages = [OPTIONS, qrels_message(("q1", "d1", 1), ("q1", "d1", 1)), qrels_message(("q1", "d1", 0))]
    with pytest.raises(EvaluationError) as caught:
        protocol.collect_request(iter(messages))
    assert reason == "conflicting judgements for query 'q1', document 'd1': 1 (line 1) and 0"
    assert str(caught.value) == "the request's qrels: conflicting judgements for query 'q1', document 'd1': 1 and 0"


@pytest.mark.parametrize("message", [run_message(("", "d1", 1.0)), run_message(("q1", "", 1.0)),
                                     qrels_message(("", "d1", 1)), qrels_message(("q1", "", 1))])
def test_an_empty_id_is_refused(message):
    # No file can hold one (fields are split on whitespace); a gRPC client can send one.
    with pytest.raises(EvaluationError, match="an entry with an empty query id or document id"):
        protocol.collect_request(iter([OPTIONS, message]))


def test_repeated_identical_judgements_are_accepted_as_by_the_qrels_reader():
    _, qrels, run = protocol.collect_request(iter([OPTIONS, qrels_message(("q1", "d1", 2), ("q1", "d1", 2)),
                                                   run_message(("q1", "d1", 0.5))]))
    assert (qrels, run) == ({"q1": {"d1": 2}}, {"q1": {"d1": 0.5}})


# -- what a client sends: each query's top D, which the server evaluates as the whole run -------

def tied_run_with_own_ids() -> dict[str, dict[str, float]]:
    """12 queries x 300 documents, scores on a grid of 41 values (ties at every cutoff); five of
    them retrieve the query's own id (BEIR's identical ids), near rank 1, 100, 101, 130 and 250."""
    rng = random.Random(5)
    run = {f"q{q}": {f"d{rng.randrange(10**6)}": rng.randint(0, 40) / 8 for _ in range(300)} for q in range(12)}
    for (query_id, scores), rank in zip(run.items(), [1, 100, 101, 130, 250]):
        scores[query_id] = ranked(scores)[rank - 1][1] + 1e-9  # first of the tied group holding that rank
    return run


def own_rank(query_id, scores) -> int | None:
    return next((n for n, (doc_id, _) in enumerate(ranked(scores), 1) if doc_id == query_id), None)


def tied_qrels(run) -> dict[str, dict[str, int]]:
    rng = random.Random(6)
    return {q: {d: rng.choice([0, 1, 2]) for d in rng.sample(sorted(scores), 40)} for q, scores in run.items()}


def sent_run(qrels, run, measures, options):
    _, _, received = protocol.collect_request(protocol.request_stream(qrels, run, measures, options, per_query=True))
    return received


@pytest.mark.parametrize("as_rankings", [False, True], ids=["dicts", "Rankings"])
def test_the_client_sends_the_top_d_and_any_identical_id(as_rankings):
    run = tied_run_with_own_ids()
    given = {q: Ranking.of(s) for q, s in run.items()} if as_rankings else run
    qrels = tied_qrels(run)
    ranks = {q: own_rank(q, s) for q, s in run.items()}
    assert sorted(r for r in ranks.values() if r)[0] == 1 and sum(r > 101 for r in ranks.values() if r) == 2
    sizes = {q: len(s) for q, s in sent_run(qrels, given, list(DEFAULT_MEASURES), EvaluationOptions()).items()}
    # 100 + 1 (the server drops the own id before it cuts) + the own id when it is ranked below 101
    assert sizes == {q: 102 if rank and rank > 101 else 101 for q, rank in ranks.items()}
    kept = sent_run(qrels, given, list(DEFAULT_MEASURES), EvaluationOptions(drop_identical_ids=False))
    assert {len(s) for s in kept.values()} == {100}
    assert {len(s) for s in sent_run(qrels, given, [*DEFAULT_MEASURES, "map"], EvaluationOptions()).values()} == {300, 301}


@pytest.mark.parametrize("as_rankings", [False, True], ids=["dicts", "Rankings"])
@pytest.mark.parametrize("options", [EvaluationOptions(), EvaluationOptions(drop_identical_ids=False),
                                     EvaluationOptions(max_docs_per_query=50), EvaluationOptions(max_docs_per_query=150)],
                         ids=["drop", "keep", "-M50", "-M150"])
def test_what_the_client_sends_evaluates_as_the_whole_run(options, as_rankings):
    run = tied_run_with_own_ids()
    given = {q: Ranking.of(s) for q, s in run.items()} if as_rankings else run
    qrels = tied_qrels(run)
    measures = [*DEFAULT_MEASURES, "nDCG@20", "RR@100", "Judged@100", "P(rel=2)@5"]
    local = Evaluator().evaluate(qrels, run, measures, options)
    remote = Evaluator().evaluate(qrels, sent_run(qrels, given, measures, options), measures, options)
    assert (remote.per_query, remote.aggregate, remote.identical_ids_dropped) == (local.per_query, local.aggregate, local.identical_ids_dropped)
    assert local.identical_ids_dropped == (5 if options.drop_identical_ids else 0)


def test_a_nan_score_below_the_top_d_still_reaches_the_server_and_is_refused():
    run = {"q1": {**{f"d{n}": float(n) for n in range(200)}, "dnan": float("nan")}}
    with pytest.raises(EvaluationError, match="score nan for query 'q1', document 'dnan' is not a finite number"):
        sent_run({"q1": {"d1": 1}}, run, list(DEFAULT_MEASURES), EvaluationOptions())
