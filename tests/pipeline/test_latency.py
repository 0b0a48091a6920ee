"""results.json's `latency`: the recorder's figures against numpy on samples a test can read, and
a real BM25 evaluation on a SciFact slice that records and prints them without changing anything
else in the record."""

from __future__ import annotations

import json

import numpy as np
import pytest

from irforge.results.render import text as results_text
from irforge.common.progress import no_progress
from irforge.corpus.core import SEARCH_CHUNK, CorpusService
from irforge.corpus.lexical import make_backend
from irforge.corpus.settings import Bm25Settings
from irforge.evaluator.core import Evaluator
from irforge.pipeline.eval_job import EvalJob, EvalJobSpec
from irforge.pipeline.latency import LatencyRecorder, latency_lines, merged_latency, summarise
from irforge.pipeline.retrievers.bm25 import Bm25Retriever

SAMPLES_S = [0.012, 0.003, 0.250, 0.007, 0.041, 0.009, 0.110, 0.002, 0.018, 0.075, 0.033]


def test_percentiles_equal_numpy_linear_on_known_samples():
    recorder = LatencyRecorder()
    with recorder.answering(len(SAMPLES_S)):
        for n, seconds in enumerate(SAMPLES_S):
            recorder.request("endpoint", seconds, "per request", query_id=f"q{n}")
    stage = recorder.summary()["stages"]["endpoint"]
    milliseconds = np.array(SAMPLES_S) * 1000
    for q in (50, 95, 99):
        assert stage[f"p{q}_ms"] == round(float(np.percentile(milliseconds, q)), 3)
    assert stage["p95_ms"] == pytest.approx(180.0)   # between 110 and 250: interpolated, not nearest rank
    assert stage["max_ms"] == 250.0 and stage["mean_ms"] == round(float(milliseconds.mean()), 3)
    assert stage["count"] == stage["calls"] == len(SAMPLES_S) and stage["unit"] == "query"
    assert summarise([]) == {"count": 0}


def test_a_batch_is_split_evenly_and_each_pass_keeps_its_queries_apart():
    recorder = LatencyRecorder()
    for _ in range(2):  # the same query ids retrieved twice (instruction modes): two passes
        with recorder.answering(4):
            recorder.batch("search", ["a", "b", "c", "d"], 0.4, "batch")
            recorder.batch("rerank", ["a", "b"], 0.2, "batch")
    summary = recorder.summary()
    search = summary["stages"]["search"]
    assert (search["count"], search["calls"], search["p50_ms"], search["max_ms"]) == (8, 2, 100.0, 100.0)
    assert search["wall_s"] == 0.8 and search["queries_per_s"] == 10.0
    # a and b: 100 + 100 ms per pass; c and d: 100 ms. Passes are not summed together.
    end_to_end = summary["end_to_end"]
    assert end_to_end["count"] == 8 and end_to_end["max_ms"] == 200.0 and end_to_end["p50_ms"] == 150.0
    assert [line.split()[0] for line in latency_lines(summary)[1:]] == ["per", "search", "rerank"]


def test_nothing_recorded_is_none_and_prints_nothing():
    assert LatencyRecorder().summary() is None and latency_lines(None) == []


def test_steps_merge_side_by_side_and_end_to_end_only_from_one_step():
    retrieve, rerank = LatencyRecorder(), LatencyRecorder()
    for recorder, name in ((retrieve, "bm25 search"), (rerank, "rerank")):
        with recorder.answering(2):
            recorder.batch(name, ["a", "b"], 0.2, "batch")
    rerank.encoded("queries", 10, 0.5)
    alone = merged_latency([None, retrieve.summary()])
    assert alone == retrieve.summary()
    both = merged_latency([None, retrieve.summary(), rerank.summary()])
    assert list(both["stages"]) == ["bm25 search", "rerank"] and both["encoding"]["queries"]["texts_per_s"] == 20.0
    assert "end_to_end" not in both and "separate steps" in both["end_to_end_note"]
    assert merged_latency([None, None]) is None


def test_bm25_eval_records_and_prints_latency(scifact_subset, tmp_path):
    corpus = CorpusService(make_backend("embedded", index_dir=tmp_path / "index"))
    try:
        retriever = Bm25Retriever(corpus, Bm25Settings(), no_progress)
        results = EvalJob(EvalJobSpec(dataset=scifact_subset, out_dir=tmp_path), retriever, Evaluator(), "in-process").run()
    finally:
        corpus.close()
    written = json.loads((tmp_path / "results.json").read_text())
    latency = written["latency"]
    queries = written["counts"]["queries_retrieved"]
    stage = latency["stages"]["bm25 search"]
    assert list(latency["stages"]) == ["bm25 search"] and "encoding" not in latency
    assert stage["count"] == queries == 40 and stage["calls"] == -(-queries // SEARCH_CHUNK) == 1
    assert 0 < stage["p50_ms"] <= stage["p95_ms"] <= stage["p99_ms"] <= stage["max_ms"]
    assert "batch" in stage["basis"] and str(SEARCH_CHUNK) in stage["basis"]
    # One batch: every query's share is the batch time / 40, and the stage's wall time is that batch.
    assert stage["p50_ms"] == stage["max_ms"] == pytest.approx(stage["wall_s"] * 1000 / queries, rel=0.01, abs=0.02)  # wall_s is rounded to 1 ms
    end_to_end = latency["end_to_end"]
    assert end_to_end["count"] == queries and end_to_end["p50_ms"] == stage["p50_ms"]
    # The retriever's wall time holds the search and irforge's own work around it, within retrieve_s.
    assert stage["wall_s"] <= end_to_end["wall_s"] <= written["timings"]["retrieve_s"] + 0.002
    # queries_per_s comes from the unrounded wall time; wall_s is rounded to 1 ms (5% of a 10 ms run).
    wall = end_to_end["wall_s"]
    assert queries / (wall + 0.0005) - 0.05 <= end_to_end["queries_per_s"] <= queries / max(wall - 0.0005, 1e-9) + 0.05
    # The fields that were there keep their meaning.
    assert {"metrics", "per_query", "evaluation", "data", "counts", "timings", "versions", "files"} <= set(written)
    assert set(written["timings"]) == {"index_s", "retrieve_s", "evaluate_s", "total_s"}
    printed = results_text(results)
    assert "latency p50/p95/p99/max" in printed
    assert f"bm25 search             {stage['p50_ms']:.1f}/" in printed and "batch time / size, 1 batches" in printed
