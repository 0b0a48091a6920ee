"""`irforge eval --retriever bm25 --reranker MODEL --rerank-depth N`, end to end through the CLI."""

from __future__ import annotations

import json

from irforge.cli.main import main


def test_bm25_reranked_by_a_cross_encoder(scifact_tiny, cross_encoder_dir, tmp_path, capsys):
    out = tmp_path / "out"
    argv = ["eval", "--dataset", str(scifact_tiny), "--retriever", "bm25", "--reranker", str(cross_encoder_dir),
            "--rerank-depth", "3", "--out", str(out), "--index-dir", str(tmp_path / "index")]
    assert main(argv) == 0
    assert "reranked (depth 3)" in capsys.readouterr().out
    results = json.loads((out / "results.json").read_text())
    assert results["retriever"]["name"] == "bm25-rerank" and results["retriever"]["rerank_depth"] == 3
    assert results["retriever"]["first_stage"]["name"] == "bm25"
    assert results["counts"]["rerank_pairs_scored"] == 9  # 3 queries x depth 3

    # Reranking only reorders the top 3: the rest of the run is the first stage's, unchanged.
    plain = tmp_path / "plain"
    assert main(["eval", "--dataset", str(scifact_tiny), "--out", str(plain), "--index-dir", str(tmp_path / "index")]) == 0
    reranked_lines = (out / "run.trec").read_text().splitlines()
    plain_lines = (plain / "run.trec").read_text().splitlines()
    by_query = {}
    for line in plain_lines:
        by_query.setdefault(line.split()[0], []).append(line.split()[2])
    reranked = {}
    for line in reranked_lines:
        reranked.setdefault(line.split()[0], []).append(line.split()[2])
    for query_id, docs in by_query.items():
        assert set(reranked[query_id][:3]) == set(docs[:3]) and reranked[query_id][3:] == docs[3:]
