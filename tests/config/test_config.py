"""The pipeline configuration: declared once, validated once, the same through every door."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from irforge.cli.main import build_parser
from irforge.config import (ConfigError, PipelineConfig, changed, dump, from_mapping, load, to_mapping, validate,
                            with_options)
from irforge.config.options import leaves

ROOT = Path(__file__).resolve().parents[2]


def _eval_parser():
    parser = build_parser()
    return next(a for a in parser._actions if a.dest == "command").choices["eval"]


def test_every_option_has_one_flag_a_help_and_reaches_the_command_line():
    flags = [leaf.info.flag for leaf in leaves(PipelineConfig)]
    assert len(flags) == len(set(flags))
    eval_flags = {option for action in _eval_parser()._actions for option in action.option_strings}
    instruction_only = {"--instruction-template", "--robustness-k"}
    for leaf in leaves(PipelineConfig):
        assert leaf.info.help.strip(), leaf.dotted
        assert leaf.info.flag in eval_flags or leaf.info.flag in instruction_only, leaf.info.flag


def test_flags_keywords_and_files_build_the_same_configuration(tmp_path):
    argv = ["eval", "--out", str(tmp_path / "o"), "--dataset", "d", "--retriever", "hybrid", "--k1", "1.2",
            "--fusion-weights", "1,2", "-m", "nDCG@10", "-m", "R@100", "--no-normalize", "--model", "m",
            "--fill-holes", "5", "--relevant-from", "1"]
    from irforge.cli.options import config_from_args

    from_flags = config_from_args(build_parser().parse_args(argv), PipelineConfig)
    from_keywords = with_options(PipelineConfig(), {"dataset": "d", "retriever": "hybrid", "k1": 1.2,
                                                    "fusion_weights": [1, 2], "measures": ["nDCG@10", "R@100"],
                                                    "no_normalize": True, "model": "m", "fill_holes": 5,
                                                    "relevant_from": 1})
    assert from_flags == from_keywords
    assert from_flags.encoder.normalize is False and from_flags.fusion.weights == (1.0, 2.0)
    dump(from_flags, tmp_path / "c.yaml")
    dump(from_flags, tmp_path / "c.json")
    assert load(PipelineConfig, tmp_path / "c.yaml") == from_flags == load(PipelineConfig, tmp_path / "c.json")
    # A protobuf Struct carries every number as a double: whole numbers come back as ints.
    as_struct = json.loads(json.dumps(to_mapping(from_flags)).replace(": 1000", ": 1000.0"))
    assert from_mapping(PipelineConfig, as_struct) == from_flags
    validate(from_flags)


@pytest.mark.parametrize(("options", "message"), [
    ({"endpoint_batch_size": 8}, "--endpoint-batch-size 8 does not apply here: it overrides a field of --endpoint's spec"),
    ({"endpoint_batch_size": 0}, "--endpoint-batch-size must be at least 1, got 0"),
    ({"retriever": "dense", "k1": 1.2}, "--k1 1.2 does not apply here: BM25 is not part of this pipeline"),
    ({"model": "x"}, "--model x does not apply here"),
    ({"retriever": "dense", "hnsw_ef": 64}, "--hnsw-ef 64 does not apply here: HNSW settings need --search hnsw"),
    ({"rerank_depth": 50}, "--rerank-depth 50 does not apply here: nothing reranks"),
    ({"rrf_k": 10.0}, "--rrf-k 10.0 does not apply here"),
    ({"retriever": "hybrid", "fusion": "linear", "rrf_k": 10.0}, "--rrf-k needs --retriever hybrid --fusion rrf"),
    ({"relevant_from": 1}, "--relevant-from 1 does not apply here: the judge fills holes"),
    ({"qdrant_url": "http://127.0.0.1:6333", "retriever": "dense"}, "it needs --vector-backend qdrant"),
    ({"retriever": "dense", "encoder_server": "127.0.0.1:1", "query_prefix": "q: "},
     "--query-prefix q:  does not apply here: no model encodes here"),
    ({"instruction_template": "{query} {instruction}"}, "applies to instruction-following evaluation"),
    ({"retriever": "sparse"}, "--retriever sparse needs --model"),
    ({"reranker": "a", "reranker_endpoint": "b"}, "choose one of --reranker, --reranker-endpoint, --listwise-llm"),
    ({"listwise_llm": "http://127.0.0.1:1/v1"}, "--listwise-llm needs --listwise-model"),
    ({"retriever": "dense", "vector_backend": "elasticsearch"}, "holds learned sparse vectors only"),
    ({"k1": float("inf")}, "--k1 must be a finite number within 0..10, got inf"),
    ({"fusion_weights": (0, 0), "retriever": "hybrid"}, "--fusion-weights must be finite numbers >= 0, not all 0"),
    ({"retriever": "dens"}, "invalid choice: 'dens'"),
])
def test_what_cannot_run_or_does_not_apply_is_refused_naming_the_flag(options, message):
    with pytest.raises(ConfigError, match=None) as refused:
        validate(with_options(PipelineConfig(dataset="d"), options))
    assert message in str(refused.value)


def test_locations_are_never_refused():
    config = with_options(PipelineConfig(dataset="d"), {"index_dir": "i", "vector_dir": "v", "embedding_cache": "e",
                                                        "store": "s"})
    assert validate(config) is config


def test_unknown_names_are_refused_with_the_nearest(tmp_path):
    with pytest.raises(TypeError, match="has no option 'k11'; did you mean 'k1'"):
        with_options(PipelineConfig(), {"k11": 1.0})
    (tmp_path / "c.yaml").write_text("bm25: {k_1: 1.0}\n")
    with pytest.raises(ConfigError, match="unknown field 'bm25.k_1'; did you mean 'k1'"):
        load(PipelineConfig, tmp_path / "c.yaml")
    (tmp_path / "d.yaml").write_text("top_k: many\n")
    with pytest.raises(ConfigError, match="top_k: expected a whole number"):
        load(PipelineConfig, tmp_path / "d.yaml")


def test_changed_lists_exactly_the_fields_away_from_their_defaults():
    config = with_options(PipelineConfig(), {"k1": 1.2, "top_k": 10})
    assert changed(config) == {"k1": 1.2, "top_k": 10}
    assert dataclasses.replace(config, top_k=1000) != config


def test_the_documented_option_table_is_generated_from_the_fields():
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "config_reference.py"), "--check"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    table = (ROOT / "docs" / "configuration.md").read_text()
    for leaf in leaves(PipelineConfig):
        assert f"`{leaf.dotted}`" in table


def test_a_file_of_a_nested_configuration_reads_like_the_documented_example(tmp_path):
    (tmp_path / "c.yaml").write_text(yaml.safe_dump({"dataset": "d", "retriever": "hybrid", "bm25": {"k1": 0.9},
                                                    "fusion": {"method": "rrf", "rrf_k": 60}}))
    config = load(PipelineConfig, tmp_path / "c.yaml")
    assert config.retriever == "hybrid" and config.fusion.rrf_k == 60.0 and isinstance(config.fusion.rrf_k, float)


def test_the_fusion_depth_option_reaches_the_hybrid_and_its_record(scifact_tiny, tmp_path):
    """An option added in one place (config/pipeline.py) reaches every door: flag, keyword, record."""
    import irforge

    stores = {"index_dir": str(tmp_path / "i"), "vector_dir": str(tmp_path / "v"), "embedding_cache": str(tmp_path / "c")}
    shallow = irforge.evaluate(scifact_tiny, out=tmp_path / "shallow", retriever="hybrid", model="all-MiniLM-L6-v2",
                               top_k=10, fusion_depth=2, **stores)
    deep = irforge.evaluate(scifact_tiny, out=tmp_path / "deep", retriever="hybrid", model="all-MiniLM-L6-v2", top_k=10,
                            **stores)
    assert shallow["retriever"]["depth_per_run"] == 2 and shallow["config"]["fusion"]["depth"] == 2
    assert deep["retriever"]["depth_per_run"] == "top_k of each run"
    # Two runs of 2 documents fuse to at most 4 per query; the default fuses 10 + 10 into 10.
    runs = [line.split()[0] for line in (tmp_path / "shallow" / "run.trec").read_text().splitlines()]
    assert max(runs.count(q) for q in set(runs)) <= 4
    assert max(line.split()[0] for line in (tmp_path / "deep" / "run.trec").read_text().splitlines())
    with pytest.raises(ConfigError, match="--fusion-depth 2 does not apply here: fusion needs --retriever hybrid"):
        validate(with_options(PipelineConfig(dataset="d"), {"fusion_depth": 2}))


def test_the_endpoint_overrides_apply_to_a_reranker_endpoint_too():
    """--endpoint-url and the other overrides change --reranker-endpoint's spec when it is the one given."""
    config = with_options(PipelineConfig(dataset="d"), {"reranker_endpoint": "rerank.yaml",
                                                        "endpoint_url": "http://127.0.0.1:9/rerank"})
    assert validate(config) is config
