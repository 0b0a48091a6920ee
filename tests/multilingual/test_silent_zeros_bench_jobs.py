"""Issue 25, Deliver 3's loose ends: no silent zeros beyond `irforge eval`. A run that retrieves
nothing for more than half its queries fails `irforge bench` (exit 3, the dataset marked
`retrieved-nothing` with the reason) and an orchestrator job (FAILED with the reason) as it fails
`irforge eval` (exit 3); documents that index to nothing are reported when the BM25 index is
reused, not only when it is built. Expectations are hand counts of tiny collections.

Before (main at f6059e4): bench exited 0 with the dataset "evaluated" at nDCG@10 0.0; the job
SUCCEEDED; a second eval over the same index reported no documents_without_terms at all."""

from __future__ import annotations

import json
import time

import pytest

from irforge.cli.main import main
from irforge.orchestrator.spec import JobSpec, SuiteMember
from irforge.orchestrator.store import JobState

# Three Chinese sentences and their questions: analysed as English (--language en), each sentence
# is one "word" that no question shares: 3 of 3 queries retrieve nothing (hand count).
CHINESE = {"d1": "黑豹队的防守只丢了三百零八分，在联赛中排名第六。", "d2": "梅雨是东亚特有的气象现象，五月到七月多雨。",
           "d3": "长江是中国最长的河流，流经十一个省级行政区。"}
CHINESE_QUERIES = {"q1": "黑豹队的防守丢了多少分？", "q2": "梅雨在哪些月份？", "q3": "中国最长的河流是哪条？"}
# English, two documents that index to nothing: d3 is punctuation, d4 only stopwords (hand count).
ENGLISH = {"d1": "Rivers flow into the sea near the delta.", "d2": "Glaciers carve valleys in the mountains.",
           "d3": "... --- !!!", "d4": "the of and to it"}
ENGLISH_QUERIES = {"q1": "where do rivers flow", "q2": "glaciers carve valleys"}
REASON = "3 of 3 queries retrieved nothing; the corpus was analysed as en (given): if that is wrong, pass --language CODE"


def beir(root, documents: dict[str, str], queries: dict[str, str], qrels: dict[str, str]):
    root.mkdir(parents=True)
    (root / "corpus.jsonl").write_text("".join(json.dumps({"_id": i, "title": "", "text": t}, ensure_ascii=False) + "\n"
                                               for i, t in documents.items()), encoding="utf-8")
    (root / "queries.jsonl").write_text("".join(json.dumps({"_id": i, "text": t}, ensure_ascii=False) + "\n"
                                                for i, t in queries.items()), encoding="utf-8")
    (root / "qrels").mkdir()
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t1\n" for q, d in qrels.items()))
    return root


@pytest.fixture()
def collections(tmp_path):
    return {"zh3": beir(tmp_path / "zh3", CHINESE, CHINESE_QUERIES, {"q1": "d1", "q2": "d2", "q3": "d3"}),
            "en4": beir(tmp_path / "en4", ENGLISH, ENGLISH_QUERIES, {"q1": "d1", "q2": "d2"})}


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_a_reused_index_still_reports_the_documents_that_index_to_nothing(collections, capsys, tmp_path):
    index = tmp_path / "index"
    for attempt in ("built", "reused"):
        out = tmp_path / attempt
        code, _, err = run(capsys, "eval", "--dataset", collections["en4"], "--retriever", "bm25", "--language", "en",
                           "--index-dir", index, "--out", out)
        assert code == 0, err
        counts = json.loads((out / "results.json").read_text())["counts"]
        assert counts["ingest_skipped"] is (attempt == "reused")
        assert counts["documents_without_terms"] == 2 and counts["documents_without_terms_examples"] == ["d3", "d4"]
        assert "warning: 2 documents index to no term (e.g. d3; d4)" in err, attempt


def test_bench_marks_a_dataset_that_retrieved_nothing_and_exits_3(collections, capsys, tmp_path):
    out = tmp_path / "bench"
    argv = ("bench", "--dataset", collections["zh3"], "--dataset", collections["en4"], "--retriever", "bm25",
            "--language", "en", "--index-dir", tmp_path / "index", "--out", out)
    for attempt in ("evaluated", "reused"):   # a reused dataset is judged from its results.json the same way
        code, stdout, err = run(capsys, *argv)
        assert code == 3, err
        suite = json.loads((out / "suite.json").read_text())
        zh3, en4 = suite["datasets"]
        assert (zh3["status"], zh3["error"], zh3["metrics"]["nDCG@10"]) == ("retrieved-nothing", REASON, 0.0)
        assert en4["status"] == attempt and "error" not in en4 and en4["metrics"]["nDCG@10"] == 1.0
        assert f"irforge bench: error: dataset zh3: {REASON}" in err and "en4:" not in err.split("irforge bench: error")[-1]
        results = json.loads((out / "zh3" / "results.json").read_text())   # written, as eval writes it
        assert results["counts"]["queries_without_results"] == 3
    code, _, err = run(capsys, "report", out, "--out", tmp_path / "report.html")
    assert code == 0, err
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "1 of 2 datasets ok" in page and "retrieved-nothing" in page


@pytest.fixture()
def orchestrator(tmp_path, services_address):
    """An orchestrator over real corpus and evaluator services on loopback gRPC."""
    from irforge.orchestrator.context import ServiceAddresses
    from irforge.orchestrator.core import Orchestrator

    services = ServiceAddresses(corpus=services_address, evaluator=services_address, call_timeout_s=30.0,
                                long_call_timeout_s=30.0)
    started = Orchestrator(tmp_path / "state", services, cache_path=tmp_path / "cache.sqlite3", backoff_s=0.05,
                           progress_interval_s=0.0).start()
    yield started
    started.shutdown(wait=True)


def wait_for(orchestrator, job_id, timeout=120.0):
    deadline = time.monotonic() + timeout
    list(orchestrator.watch(job_id, is_active=lambda: time.monotonic() < deadline))
    record = orchestrator.get(job_id)
    assert record.state.ended, f"job {job_id} still {record.state.value}"
    return record


def test_a_job_whose_run_retrieved_nothing_fails_with_the_reason(collections, orchestrator, tmp_path):
    failed = wait_for(orchestrator, orchestrator.submit(JobSpec.of(dataset=str(collections["zh3"]), language="en")))
    assert failed.state == JobState.FAILED and failed.error == f"evaluate: {REASON}"
    assert failed.metrics["nDCG@10"] == 0.0 and all(step.state == "done" for step in failed.steps)
    fine = wait_for(orchestrator, orchestrator.submit(JobSpec.of(dataset=str(collections["en4"]), language="en")))
    assert fine.state == JobState.SUCCEEDED and fine.error == "" and fine.metrics["nDCG@10"] == 1.0
    suite = wait_for(orchestrator, orchestrator.submit(JobSpec.of(
        dataset="", name="two", language="en", output=str(tmp_path / "suite-out"),
        datasets=(SuiteMember(str(collections["zh3"]), "zh3", "test"), SuiteMember(str(collections["en4"]), "en4", "test")))))
    assert suite.state == JobState.FAILED and suite.error == f"1 of the suite's datasets failed: zh3: {REASON}"
    written = json.loads((tmp_path / "suite-out" / "suite.json").read_text())
    assert [(d["label"], d["status"], d.get("error")) for d in written["datasets"]] == [
        ("zh3", "retrieved-nothing", REASON), ("en4", "evaluated", None)]


def test_a_run_file_that_misses_most_queries_fails_without_blaming_the_analysis(collections, capsys, tmp_path):
    """A given run (eval --run) answering 1 of 3 queries: 2 of 3 retrieved nothing, hand count;
    no --language advice, since no analysis of irforge's made that run."""
    run_file = tmp_path / "one.trec"
    run_file.write_text("q1 Q0 d1 1 2.0 mine\n")
    code, _, err = run(capsys, "eval", "--dataset", collections["zh3"], "--run", run_file, "--out", tmp_path / "out")
    assert code == 3, err
    assert "irforge eval: error: 2 of 3 queries retrieved nothing\n" in err and "--language" not in err
