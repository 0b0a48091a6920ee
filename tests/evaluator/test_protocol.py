"""The evaluator's gRPC door refuses what the file readers refuse, in the same words."""

import pytest

from irforge.data import DataFormatError, read_trec_qrels, read_trec_run
from irforge.evaluator import protocol
from irforge.evaluator.core import EvaluationError, EvaluationOptions
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
    reason = file_reason(read_trec_run, tmp_path, f"q1 Q0 d1 1 {score} t\n")
    with pytest.raises(EvaluationError) as caught:
        protocol.collect_request(iter([OPTIONS, run_message(("q1", "d1", float(score)))]))
    assert str(caught.value) == f"the request's run: {reason}"
    assert "query 'q1', document 'd1'" in reason


def test_a_run_entry_sent_twice_is_refused_as_by_the_run_reader(tmp_path):
    # Split over two messages, as a large run is: the check spans the whole stream.
    reason = file_reason(read_trec_run, tmp_path, "q1 Q0 d1 1 1.0 t\nq1 Q0 d1 2 0.5 t\n")
    messages = [OPTIONS, run_message(("q1", "d1", 1.0)), run_message(("q2", "d1", 1.0), ("q1", "d1", 0.5))]
    with pytest.raises(EvaluationError) as caught:
        protocol.collect_request(iter(messages))
    assert str(caught.value) == f"the request's run: {reason}"


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
