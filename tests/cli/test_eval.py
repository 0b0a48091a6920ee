"""`irforge eval` end to end on the real BEIR collections.

Fidelity: BM25 must reproduce the published tables (BEIR paper 0.665 / 0.325; Pyserini flat
0.6789 / 0.3218) within the bounds the project promises: SciFact >= 0.655, NFCorpus >= 0.315.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from irforge.cli.main import main
from irforge.data import BeirDataset
from irforge.runs import read_run_file
from irforge.evaluator.core import EvaluationOptions, Evaluator

REQUIRED_METRICS = {"nDCG@10", "R@100", "AP@100", "RR@10", "P@10", "Judged@10"}


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("indexes")


def run_eval(dataset, out, index_dir, *extra) -> dict:
    assert main(["eval", "--dataset", str(dataset), "--retriever", "bm25", "--out", str(out), "--index-dir", str(index_dir), *extra]) == 0
    return json.loads((out / "results.json").read_text())


@pytest.fixture(scope="module")
def scifact_results(beir_dir, index_dir, tmp_path_factory):
    return run_eval(beir_dir / "scifact", tmp_path_factory.mktemp("scifact"), index_dir)


def test_scifact_bm25_reproduces_the_published_figure(scifact_results):
    assert scifact_results["metrics"]["nDCG@10"] >= 0.655
    assert scifact_results["metrics"]["nDCG@10"] == pytest.approx(0.6762, abs=5e-4)  # measured; Pyserini flat 0.6789


def test_nfcorpus_bm25_reproduces_the_published_figure(beir_dir, index_dir, tmp_path):
    results = run_eval(beir_dir / "nfcorpus", tmp_path, index_dir)
    assert results["metrics"]["nDCG@10"] >= 0.315
    assert results["evaluation"]["queries_evaluated"] == 323


def test_results_json_carries_everything_needed_to_reproduce(scifact_results, capsys):
    r = scifact_results
    assert (r["dataset"], r["split"]) == ("scifact", "test")
    assert REQUIRED_METRICS <= set(r["metrics"])
    assert len(r["per_query"]) == 300 and REQUIRED_METRICS <= set(r["per_query"]["1"])
    retriever = r["retriever"]
    for key in ("name", "backend", "top_k", "k1", "b", "tokenizer", "stemmer", "stopwords", "fields", "bm25s_version", "corpus_id"):
        assert key in retriever, key
    assert (retriever["k1"], retriever["b"], retriever["top_k"]) == (0.9, 0.4, 1000)
    assert r["evaluation"]["options"]["drop_identical_ids"] is True
    assert r["evaluation"]["identical_ids"] == "dropped"
    assert {"index_s", "retrieve_s", "evaluate_s", "total_s"} <= set(r["timings"])
    assert {"irforge", "python", "pytrec_eval-terrier", "bm25s"} <= set(r["versions"])
    assert r["data"]["qrels_problems"] == {"unknown_queries": 0, "unknown_documents": 0, "examples": []}
    assert r["data"]["corpus_fingerprint_sha256"].startswith("dec31c81")  # the checksum in data/beir/README.md
    assert r["counts"]["documents_ingested"] == 5183 or r["counts"]["ingest_skipped"]


def test_run_file_reproduces_the_metrics(scifact_results, beir_dir, tmp_path):
    """Anyone re-scoring run.trec with the qrels gets the numbers in results.json."""
    out = tmp_path / "again"
    results = run_eval(beir_dir / "scifact", out, tmp_path / "fresh-index")
    run = read_run_file(out / "run.trec")
    assert run.producer == "irforge-bm25" and len(run.run) == 300 and all(len(d) <= 1000 for d in run.run.values())
    qrels = BeirDataset.open(beir_dir / "scifact").qrels("test")
    again = Evaluator().evaluate(qrels, run.run, list(results["metrics"]), EvaluationOptions(complete=True))
    assert again.aggregate == pytest.approx(results["metrics"], abs=1e-12)
    assert results["metrics"] == scifact_results["metrics"]


def test_second_run_reuses_the_index(scifact_results, beir_dir, index_dir, tmp_path):
    again = run_eval(beir_dir / "scifact", tmp_path, index_dir)
    assert again["counts"]["ingest_skipped"] is True and again["counts"]["documents_ingested"] == 0
    assert again["metrics"] == scifact_results["metrics"]


def test_table_is_printed(beir_dir, index_dir, tmp_path, capsys, scifact_results):
    run_eval(beir_dir / "scifact", tmp_path, index_dir)
    out = capsys.readouterr().out
    assert re.search(r"^nDCG@10\s+0\.676\d$", out, re.MULTILINE)
    assert "300 queries" in out
    # The README shows this command's output: its heading and measure lines must be today's, verbatim.
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    sample = readme.split("\n```\nscifact · test · bm25", 1)[1].split("\n```", 1)[0]
    documented = ["scifact · test · bm25" + sample.splitlines()[0], *sample.splitlines()[1:8]]
    assert documented[-1].startswith("Judged@10"), documented
    printed = out.splitlines()
    assert [line for line in documented if line not in printed] == [], "README.md's sample output drifted from irforge eval's"
    # The lines after them (timings, latency, what was written) vary in their numbers only. The index
    # line is left out: the README shows a fresh index, this run reuses the module's.
    def shape(line):
        return re.sub(r"\d[\d.,]*", "N", line)
    rest = [line for line in sample.splitlines()[8:] if "documents indexed" not in line]
    assert rest and [line for line in rest if shape(line) not in map(shape, printed)] == [], "README.md's sample output drifted"


def test_in_process_and_server_give_identical_results(scifact_results, beir_dir, index_dir, tmp_path):
    """The same scenario through `irforge service all` (a real gRPC server process) and in-process."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    server = subprocess.Popen(
        [sys.executable, "-m", "irforge.cli.main", "service", "all", "--port", "0", "--index-dir", str(tmp_path / "server-index")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    try:
        line = server.stdout.readline()
        match = re.search(r"listening on (127\.0\.0\.1:\d+)", line)
        assert match, f"server did not start: {line!r} {server.stderr.read() if server.poll() is not None else ''}"
        remote = run_eval(beir_dir / "scifact", tmp_path / "remote", tmp_path / "unused", "--server", match.group(1))
    finally:
        server.terminate()
        assert server.wait(timeout=30) == 0
    assert remote["metrics"] == scifact_results["metrics"]
    assert remote["per_query"] == scifact_results["per_query"]
    assert remote["retriever"] == scifact_results["retriever"]
    assert remote["mode"].startswith("corpus=127.0.0.1:")
    run_eval(beir_dir / "scifact", tmp_path / "local", index_dir)
    assert (tmp_path / "remote" / "run.trec").read_bytes() == (tmp_path / "local" / "run.trec").read_bytes()


@pytest.mark.parametrize(("args", "message"), [
    (["--dataset", "/nonexistent/beir/x"], "dataset folder not found"),
    (["--split", "dev"], "split 'dev' not found; available: test"),
    (["--top-k", "0"], "--top-k must be at least 1, got 0"),
    (["-m", "nDCG@ten"], "unknown measure 'nDCG@ten'"),
    (["--b", "1.5"], "--b must be a finite number within 0..1, got 1.5"),
])
def test_bad_arguments_get_clear_errors(beir_dir, tmp_path, capsys, args, message):
    options = {"--dataset": str(beir_dir / "scifact"), "--split": "test", "--top-k": "10"}
    options.update(zip(args[::2], args[1::2]))
    argv = ["eval", "--out", str(tmp_path / "out"), "--index-dir", str(tmp_path / "idx")]
    for flag, value in options.items():
        argv += [flag, value]
    assert main(argv) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "results.json").exists()
