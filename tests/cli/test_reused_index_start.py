"""Issue 29, Deliver 2: a BM25 eval on an existing index prints its table in about a second. What
made it slow was work that the index's first eval had already done: loading langid's model
(~0.45 s) to detect the corpus's and the queries' language, and analysing every document to count
those that index to nothing. Both are now remembered (irforge.common.memo) under the corpus's
fingerprint, so a second eval, in a fresh process like a user's, does neither, and reports the
same languages and counts; a cleared or corrupt memory is worked out again, never trusted.

Checked by what the process did (langid's module loaded or not; documents analysed, counted by
wrapping the one function that analyses them), not by a stopwatch. Expectations are hand counts.
Before: the second run loaded langid and analysed all 5 documents."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# d4 is punctuation, d5 only stopwords: 2 documents that index to nothing (hand count).
DOCUMENTS = {"d1": "Rivers flow into the sea near the delta of the great plain.",
             "d2": "Glaciers carve deep valleys in the northern mountains over many centuries.",
             "d3": "Volcanic islands form where magma rises through the ocean floor.",
             "d4": "... --- !!!", "d5": "the of and to it"}
QUERIES = {"q1": "where do rivers flow into the sea", "q2": "how do glaciers carve valleys",
           "q3": "how are volcanic islands formed"}

# Runs `irforge eval` and says whether langid was loaded and how many documents were analysed.
PROBE = """
import json, sys
import irforge.pipeline.retrievers.bm25 as bm25
from irforge.cli.main import main
analysed = [0]
original = bm25.indexes_to_nothing
def counting(analyzer, document):
    analysed[0] += 1
    return original(analyzer, document)
bm25.indexes_to_nothing = counting
code = main(sys.argv[1:])
print(json.dumps({"code": code, "analysed": analysed[0], "langid": "py3langid.langid" in sys.modules}))
"""


@pytest.fixture()
def dataset(tmp_path) -> Path:
    root = tmp_path / "rivers"
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text("".join(json.dumps({"_id": i, "title": "", "text": t}) + "\n" for i, t in DOCUMENTS.items()))
    (root / "queries.jsonl").write_text("".join(json.dumps({"_id": i, "text": t}) + "\n" for i, t in QUERIES.items()))
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\nq3\td3\t1\n")
    return root


def evaluate(dataset: Path, tmp_path: Path, out: str) -> tuple[dict, dict]:
    env = {**os.environ, "IRFORGE_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-c", PROBE, "eval", "--dataset", str(dataset), "--retriever", "bm25",
                           "--index-dir", str(tmp_path / "index"), "--out", str(tmp_path / out)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    probe = json.loads(done.stdout.splitlines()[-1])
    assert probe["code"] == 0, done.stderr
    return probe, json.loads((tmp_path / out / "results.json").read_text())


def facts(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "cache" / "facts").rglob("*.json"))


def test_a_second_eval_neither_loads_langid_nor_analyses_the_corpus_again(dataset, tmp_path):
    built_probe, built = evaluate(dataset, tmp_path, "built")
    assert built["counts"]["ingest_skipped"] is False
    assert built_probe == {"code": 0, "analysed": 5, "langid": True}

    reused_probe, reused = evaluate(dataset, tmp_path, "reused")
    assert reused["counts"]["ingest_skipped"] is True
    assert reused_probe == {"code": 0, "analysed": 0, "langid": False}
    for results in (built, reused):
        assert results["counts"]["documents_without_terms"] == 2
        assert results["counts"]["documents_without_terms_examples"] == ["d4", "d5"]
        assert results["retriever"]["languages"]["corpus"]["language"] == "en"
        assert results["counts"]["queries_language"]["language"] == "en"
    assert reused["retriever"]["languages"] == built["retriever"]["languages"]
    assert reused["counts"]["queries_language"] == built["counts"]["queries_language"]
    assert reused["metrics"] == built["metrics"]


def test_a_cleared_or_corrupt_memory_is_worked_out_again(dataset, tmp_path):
    evaluate(dataset, tmp_path, "first")
    remembered = facts(tmp_path)
    assert len(remembered) == 3   # the corpus's language, the queries', the empty documents
    for path in remembered:
        path.write_text("{not json")
    probe, results = evaluate(dataset, tmp_path, "corrupt")
    assert probe == {"code": 0, "analysed": 5, "langid": True}
    assert results["counts"]["documents_without_terms_examples"] == ["d4", "d5"]
    assert all(json.loads(path.read_text())["value"] for path in facts(tmp_path))   # rewritten whole

    for path in facts(tmp_path):
        path.unlink()
    probe, results = evaluate(dataset, tmp_path, "cleared")
    assert probe == {"code": 0, "analysed": 5, "langid": True}
    assert results["counts"]["documents_without_terms"] == 2


def test_a_changed_corpus_is_not_answered_from_memory(dataset, tmp_path):
    evaluate(dataset, tmp_path, "first")
    corpus = dataset / "corpus.jsonl"
    corpus.write_text(corpus.read_text().replace('"the of and to it"', '"Deltas form where rivers meet the sea."'))
    probe, results = evaluate(dataset, tmp_path, "changed")
    assert results["counts"]["ingest_skipped"] is False
    assert probe["analysed"] == 5
    assert results["counts"]["documents_without_terms"] == 1
    assert results["counts"]["documents_without_terms_examples"] == ["d4"]


def test_a_corpus_with_a_refused_id_reuses_its_index(dataset, tmp_path):
    """The reuse check counts the documents every backend's id rule accepts. The embedded index
    also refused an id holding NUL, outside that rule: the check then found one document fewer in
    the index than in the corpus, and rebuilt it on every run."""
    corpus = dataset / "corpus.jsonl"
    corpus.write_text(corpus.read_text() + json.dumps({"_id": "d\u00006", "title": "", "text": "Deltas meet the sea."}) + "\n")
    _, built = evaluate(dataset, tmp_path, "built")
    assert built["counts"]["ingest_skipped"] is False
    assert [error.endswith("document id contains NUL") for error in built["counts"]["document_errors"]] == [True]
    _, reused = evaluate(dataset, tmp_path, "reused")
    assert reused["counts"]["ingest_skipped"] is True, reused["counts"].get("reindexed_because")
    assert reused["metrics"] == built["metrics"]
