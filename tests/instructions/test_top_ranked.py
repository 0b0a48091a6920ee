"""FollowIR's protocol: with a reranker, `irforge eval-instructions` reranks each query's
top_ranked.jsonl candidates in every mode (the same candidates, that mode's text) instead of
retrieving over the full corpus. A tiny collection where the two differ (d4 is relevant but no
candidate), scored by a rerank endpoint whose scores are counted by hand, against nDCG and p-MRR
computed by hand below."""

from __future__ import annotations

import json
import math
import re
import shutil
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from irforge.cli.main import main
from irforge.data.errors import DataFormatError
from irforge.runs.top_ranked import read_top_ranked

CORPUS = {"d1": "heart disease heart disease in adults", "d2": "heart disease for doctors doctors",
          "d3": "blood pressure for patients", "d4": "heart disease for doctors", "d5": "cooking recipes"}
QUERIES = [{"_id": "q1", "text": "heart disease", "instruction_og": "", "instruction_changed": "for doctors"},
           {"_id": "q2", "text": "blood pressure", "instruction_og": "", "instruction_changed": "for patients"}]
QRELS_OG = {"q1": {"d1": 1, "d2": 1, "d4": 1}, "q2": {"d3": 1}}
QRELS_CHANGED = {"q1": {"d1": 0, "d2": 1, "d4": 1}, "q2": {"d3": 1}}
TOP_RANKED = [{"query-id": "q1", "corpus-ids": ["d5", "d1", "d2"]}]   # q2 has none; d4 is no candidate


def overlap_score(query: str, document: str) -> float:
    """The stand-in reranker: how many times the query's words occur in the document."""
    words = re.findall(r"\w+", document.lower())
    return float(sum(words.count(term) for term in re.findall(r"\w+", query.lower())))


class OverlapRerankServer:
    """POST /v1/rerank scored by overlap_score; the requests are kept."""

    def __init__(self):
        self.requests: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                scores = [overlap_score(body["query"], document) for document in body["documents"]]
                data = json.dumps({"results": [{"index": i, "relevance_score": s} for i, s in enumerate(scores)]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_port}/v1"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def close(self):
        self.http.shutdown()
        self.http.server_close()


def jsonl(rows) -> str:
    return "".join(json.dumps(row) + "\n" for row in rows)


def qrels_tsv(qrels) -> str:
    return "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{r}\n" for q, docs in qrels.items() for d, r in docs.items())


def followir(root: Path, top_ranked=TOP_RANKED) -> Path:
    root.mkdir(parents=True)
    (root / "corpus.jsonl").write_text(jsonl({"_id": d, "title": "", "text": t} for d, t in CORPUS.items()))
    (root / "queries.jsonl").write_text(jsonl(QUERIES))
    for mode, qrels in (("og", QRELS_OG), ("changed", QRELS_CHANGED)):
        (root / f"qrels_{mode}").mkdir()
        (root / f"qrels_{mode}" / "test.tsv").write_text(qrels_tsv(qrels))
    if top_ranked is not None:
        (root / "top_ranked.jsonl").write_text(jsonl(top_ranked))
    return root


def ndcg_at_10(ranking: list[str], judged: dict[str, int]) -> float:
    """nDCG@10 by its definition (binary gains here): sum of rel / log2(rank + 1), over the ideal."""
    dcg = sum(judged.get(doc, 0) / math.log2(rank + 1) for rank, doc in enumerate(ranking[:10], start=1))
    ideal = sorted(judged.values(), reverse=True)[:10]
    return dcg / sum(gain / math.log2(rank + 1) for rank, gain in enumerate(ideal, start=1))


@pytest.fixture()
def reranker(tmp_path):
    server = OverlapRerankServer()
    spec = tmp_path / "rerank.yaml"
    spec.write_text(f"kind: rerank-http\nurl: {server.url}\nmodel: overlap\n")
    yield spec, server
    server.close()


def run(collection: Path, out: Path, tmp_path: Path, *flags: str) -> dict:
    assert main(["eval-instructions", "--dataset", str(collection), "--out", str(out),
                 "--index-dir", str(tmp_path / "idx"), *flags]) == 0
    return json.loads((out / "results.json").read_text())


def test_a_reranker_reranks_the_collections_candidates_in_every_mode(tmp_path, reranker):
    spec, server = reranker
    collection = followir(tmp_path / "core17")
    results = run(collection, tmp_path / "out", tmp_path, "--reranker-endpoint", str(spec), "--rerank-depth", "10")

    # By hand: og "heart disease" scores d1 4, d2 2, d5 0; changed "heart disease for doctors" d2 5, d1 4, d5 0.
    og, changed = ["d1", "d2", "d5"], ["d2", "d1", "d5"]
    for mode, ranking in (("og", og), ("changed", changed)):
        lines = (tmp_path / "out" / f"core17.{mode}.trec").read_text().split("\n")
        assert [line.split()[2] for line in lines if line] == ranking
    # Only q1's three candidates were sent, once per mode, with that mode's text; q2 has none.
    assert sorted((r["query"], tuple(r["documents"])) for r in server.requests) == [
        ("heart disease", (CORPUS["d5"], CORPUS["d1"], CORPUS["d2"])),
        ("heart disease for doctors", (CORPUS["d5"], CORPUS["d1"], CORPUS["d2"]))]

    q1_og, q1_changed = ndcg_at_10(og, QRELS_OG["q1"]), ndcg_at_10(changed, QRELS_CHANGED["q1"])
    assert q1_og == pytest.approx((1 + 1 / math.log2(3)) / (1 + 1 / math.log2(3) + 0.5))   # d4 is missed
    per_query = results["per_query"]
    assert per_query["q1"]["nDCG@10[og]"] == pytest.approx(q1_og, abs=1e-12)
    assert per_query["q1"]["nDCG@10[changed]"] == pytest.approx(q1_changed, abs=1e-12)
    assert per_query["q2"]["nDCG@10[og]"] == per_query["q2"]["nDCG@10[changed]"] == 0.0   # no candidates: nothing retrieved
    # p-MRR: d1 is the one document whose label changed (1 -> 0); og rank o = 1, changed rank n = 2:
    # it moved down, 1 - o/n = 0.5. q2 has no changed document and is left out of the mean.
    assert per_query["q1"]["p-MRR"] == pytest.approx(0.5, abs=1e-12) and "p-MRR" not in per_query["q2"]
    assert results["metrics"] == pytest.approx({"nDCG@10[og]": q1_og / 2, "nDCG@10[changed]": q1_changed / 2,
                                                "p-MRR": 0.5}, abs=1e-12)

    # The candidate source is recorded: the file, its sha256 and layout, and that it was used.
    dimension = results["dimensions"]["core17"]
    source = dimension["retriever"]["first_stage"]["candidates"]
    import hashlib
    assert source["file"] == str((collection / "top_ranked.jsonl").resolve())
    assert source["sha256"] == hashlib.sha256((collection / "top_ranked.jsonl").read_bytes()).hexdigest()
    assert (source["format"], source["layout"], source["queries"], source["candidates"]) == ("top_ranked", "mteb", 1, 3)
    assert dimension["retriever"]["rerank_depth"] == 10 and dimension["data"]["top_ranked_used"] is True
    assert dimension["counts"]["candidates_queries_missing"] == 1
    assert "top_ranked.jsonl (FollowIR's protocol)" in results["evaluation"]["first_stage"]

    # The same collection without its candidates is retrieved over the full corpus (the old
    # behaviour): BM25 finds d4, the reranker puts it second in og, and every relevant document is on top.
    full = followir(tmp_path / "full" / "core17", top_ranked=None)
    whole = run(full, tmp_path / "out-full", tmp_path, "--reranker-endpoint", str(spec), "--rerank-depth", "10")
    assert whole["per_query"]["q1"]["nDCG@10[og]"] == pytest.approx(1.0, abs=1e-12)
    assert whole["dimensions"]["core17"]["data"]["top_ranked_used"] is False


def test_given_candidates_and_followirs_row_layout(tmp_path, reranker):
    """--candidates FILE for a collection without its own: FollowIR's one-row-per-candidate layout."""
    spec, _ = reranker
    collection = followir(tmp_path / "core17", top_ranked=None)
    candidates = tmp_path / "bm25.jsonl"
    candidates.write_text(jsonl([{"qid": "q1", "pid": "d5"}, {"qid": "q1", "pid": "d2"}, {"qid": "q2", "pid": "d3"}]))
    results = run(collection, tmp_path / "out", tmp_path, "--reranker-endpoint", str(spec), "--candidates", str(candidates))
    # og: d2 2, d5 0; q2 og: d3 ("blood pressure") alone, relevant in both modes.
    assert results["per_query"]["q1"]["nDCG@10[og]"] == pytest.approx(ndcg_at_10(["d2", "d5"], QRELS_OG["q1"]), abs=1e-12)
    assert results["per_query"]["q2"]["nDCG@10[changed]"] == pytest.approx(1.0, abs=1e-12)
    source = results["dimensions"]["core17"]["retriever"]["first_stage"]["candidates"]
    assert (source["layout"], source["queries"], source["candidates"]) == ("followir", 2, 3)


def test_options_of_a_retrieving_first_stage_are_refused(tmp_path, reranker, capsys):
    spec, _ = reranker
    collection = followir(tmp_path / "core17")
    argv = ["eval-instructions", "--dataset", str(collection), "--out", str(tmp_path / "out"),
            "--reranker-endpoint", str(spec), "--retriever", "dense"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--retriever dense does not apply here" in err and "top_ranked.jsonl" in err
    assert not (tmp_path / "out").exists()
    # top_ranked.jsonl in one dimension only: refused, naming both.
    root = tmp_path / "two"
    followir(root / "a")
    followir(root / "b", top_ranked=None)
    assert main(["eval-instructions", "--dataset", str(root), "--out", str(tmp_path / "out2"), "--reranker-endpoint", str(spec)]) == 2
    assert "top_ranked.jsonl in a but not in b" in capsys.readouterr().err


def test_top_ranked_reader(tmp_path):
    path = tmp_path / "top_ranked.jsonl"
    path.write_text(jsonl([{"qid": 7, "pid": "d2"}, {"qid": 7, "pid": "d1"}, {"qid": "8", "pid": ["d9"]}]))
    top = read_top_ranked(path)
    assert (top.candidates, top.layout) == ({"7": ["d2", "d1"], "8": ["d9"]}, "followir")
    ranking = top.rankings()["7"]
    assert ranking.doc_ids.tolist() == ["d2", "d1"] and ranking.scores.tolist() == [2.0, 1.0]   # the file's order
    for rows, message in (([{"query-id": "q", "corpus-ids": ["a", "a"]}], r"top_ranked.jsonl:1: .*'a' is a candidate of query 'q' twice"),
                          ([{"query-id": "q", "corpus-ids": ["a"]}, {"query": "q"}], r"top_ranked.jsonl:2: expected"),
                          ([{"query-id": "q", "corpus-ids": ["a"]}, {"qid": "q", "pid": "b"}], r":2: a followir line in a mteb file"),
                          ([{"query-id": "q", "corpus-ids": [None]}], r":1: `corpus-ids` of query 'q' holds null")):
        path.write_text(jsonl(rows))
        with pytest.raises(DataFormatError, match=message):
            read_top_ranked(path)


def test_an_orchestrator_job_follows_the_same_protocol(tmp_path, reranker, services_address):
    """An instruction-following job reranks the collection's candidates as the command does (the one
    builder), and refuses a retriever option at submission."""
    from irforge.orchestrator.context import ServiceAddresses
    from irforge.orchestrator.core import Orchestrator
    from irforge.orchestrator.errors import JobSpecError
    from irforge.orchestrator.spec import JobSpec

    spec, _ = reranker
    collection = followir(tmp_path / "core17")
    local = run(collection, tmp_path / "out", tmp_path, "--reranker-endpoint", str(spec))
    with pytest.raises(JobSpecError, match="--retriever dense does not apply here: the candidates"):
        JobSpec.of(dataset=str(collection), instructions=True, reranker_endpoint=str(spec), retriever="dense",
                   model="m").validate().check_paths()
    orchestrator = Orchestrator(tmp_path / "state", ServiceAddresses(corpus=services_address, evaluator=services_address),
                                cache_path=tmp_path / "cache.sqlite3", backoff_s=0.05, progress_interval_s=0.0).start()
    try:
        job_id = orchestrator.submit(JobSpec.of(dataset=str(collection), instructions=True, reranker_endpoint=str(spec)).validate())
        for _ in orchestrator.watch(job_id):
            pass
        record = orchestrator.get(job_id)
        assert record.state.value == "SUCCEEDED", record.error
        job = json.loads((orchestrator.results_dir(job_id) / "results.json").read_text())
    finally:
        orchestrator.shutdown(wait=True)
    assert job["per_query"] == local["per_query"] and job["metrics"] == local["metrics"]
    assert job["dimensions"]["core17"]["data"]["top_ranked_used"] is True
