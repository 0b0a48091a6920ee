"""A job embeds the pipeline configuration whole: every option of PipelineConfig is either taken by
a job and reaches its builder unchanged, or refused by name as the services' configuration, so a
new option can never be silently dropped by jobs. And a spec survives the proto, the job store
and a YAML file."""

from __future__ import annotations

import dataclasses
import json
import threading
from contextlib import nullcontext
from pathlib import Path

import pytest
from irforge.config import PipelineConfig, with_options
from irforge.config.options import leaves
from irforge.orchestrator.context import ServiceAddresses, StepContext
from irforge.orchestrator.errors import JobSpecError
from irforge.orchestrator.spec import JOB_REFUSED, SERVICES_REASON, JobSpec, SuiteMember
from irforge.common.progress import tqdm_progress

# The options a job refuses, documented (docs/orchestrator.md): the services' configuration.
DOCUMENTED_REFUSED = {
    "--backend", "--vector-backend", "--store", "--model-revision", "--query-prefix", "--passage-prefix",
    "--max-seq-length", "--no-normalize", "--encode-batch-size", "--device", "--precision", "--max-active-dims", "--ray",
    "--encoder-backend", "--encoder-precision",
    "--index-dir", "--vector-dir", "--embedding-cache", "--elasticsearch-url", "--qdrant-url", "--exact-precision",
    "--server", "--corpus-server", "--evaluator-server", "--encoder-server",
}


def _files(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "endpoint.yaml").write_text("kind: openai-embeddings\nurl: http://127.0.0.1:9/v1\nmodel: m\n")
    (tmp_path / "rerank.yaml").write_text("kind: rerank-http\nurl: http://127.0.0.1:9\n")
    (tmp_path / "judge.yaml").write_text("kind: openai-chat\nurl: http://127.0.0.1:9/v1\nmodel: m\n")
    (tmp_path / "thresholds.json").write_text("{}\n")
    return {name: str(tmp_path / name) for name in ("endpoint.yaml", "rerank.yaml", "judge.yaml", "thresholds.json")}


def _job_using(name: str, dataset: str, files: dict[str, str]) -> JobSpec:
    """A job whose configuration sets option `name` to a non-default value, with what it needs to apply."""
    base = {"dataset": dataset}
    cases = {
        "dataset": {"dataset": dataset + "-other"},
        "split": {"split": "dev"},
        "retriever": {"retriever": "dense"},
        "top_k": {"top_k": 10},
        "measures": {"measures": ("nDCG@10", "R@100")},
        "keep_identical_ids": {"keep_identical_ids": True},
        "k1": {"k1": 1.2}, "b": {"b": 0.75}, "language": {"language": "zh"},
        "model": {"retriever": "dense", "model": "all-MiniLM-L6-v2"},
        "search": {"retriever": "dense", "search": "hnsw"},
        "hnsw_m": {"retriever": "dense", "search": "hnsw", "hnsw_m": 8},
        "hnsw_ef_construct": {"retriever": "dense", "search": "hnsw", "hnsw_ef_construct": 50},
        "hnsw_ef": {"retriever": "dense", "search": "hnsw", "hnsw_ef": 64},
        "fusion": {"retriever": "hybrid", "fusion": "linear"},
        "rrf_k": {"retriever": "hybrid", "rrf_k": 30.0},
        "fusion_weights": {"retriever": "hybrid", "fusion_weights": (2.0, 1.0)},
        "fusion_depth": {"retriever": "hybrid", "fusion_depth": 20},
        "fusion_norm": {"retriever": "hybrid", "fusion": "wsum", "fusion_norm": "zmuv"},
        "fusion_optimize_on": {"retriever": "hybrid", "fusion_optimize_on": "dev"},
        "fusion_optimize_measure": {"retriever": "hybrid", "fusion_optimize_on": "dev", "fusion_optimize_measure": "R@100"},
        "fusion_grid_step": {"retriever": "hybrid", "fusion_optimize_on": "dev", "fusion_grid_step": 0.25},
        "hybrid_with": {"retriever": "hybrid", "hybrid_with": "sparse", "model": "splade"},
        "endpoint": {"endpoint": files["endpoint.yaml"]},
        "endpoint_url": {"endpoint": files["endpoint.yaml"], "endpoint_url": "http://127.0.0.1:8/v1"},
        "endpoint_model": {"endpoint": files["endpoint.yaml"], "endpoint_model": "other"},
        "endpoint_batch_size": {"endpoint": files["endpoint.yaml"], "endpoint_batch_size": 8},
        "endpoint_max_concurrency": {"endpoint": files["endpoint.yaml"], "endpoint_max_concurrency": 2},
        "endpoint_request_budget": {"endpoint": files["endpoint.yaml"], "endpoint_request_budget": 100},
        "reranker": {"reranker": "cross-encoder"},
        "reranker_endpoint": {"reranker_endpoint": files["rerank.yaml"]},
        "listwise_llm": {"listwise_llm": "http://127.0.0.1:9/v1", "listwise_model": "m"},
        "listwise_model": {"listwise_llm": "http://127.0.0.1:9/v1", "listwise_model": "m"},
        "listwise_api_key_env": {"listwise_llm": "http://127.0.0.1:9/v1", "listwise_model": "m",
                                 "listwise_api_key_env": "MY_KEY"},
        "rerank_depth": {"reranker": "cross-encoder", "rerank_depth": 20},
        "candidates": {"reranker": "cross-encoder", "candidates": dataset + ".candidates.trec"},
        "candidates_format": {"reranker": "cross-encoder", "candidates": dataset + ".top_ranked.jsonl",
                              "candidates_format": "top_ranked"},
        "fill_holes": {"fill_holes": 5},
        "judge": {"fill_holes": 5, "judge": files["judge.yaml"]},
        "thresholds": {"fill_holes": 5, "thresholds": files["thresholds.json"]},
        "relevant_from": {"fill_holes": 5, "relevant_from": 3},
        "flagged": {"fill_holes": 5, "flagged": "label"},
        "instruction_template": {"instruction_template": "{instruction} {query}"},
        "robustness_k": {"robustness_k": 5},
        "runs": {"runs": (dataset + ".run.trec",)},
        "run_format": {"runs": (dataset + ".run.trec",), "run_format": "trec"},
    }
    instructions = name in ("instruction_template", "robustness_k")
    return JobSpec.of(instructions=instructions, **{**base, **cases[name]})


def _builder_config(spec: JobSpec, tmp_path: Path) -> PipelineConfig:
    context = StepContext(job_id="j", spec=spec, job_dir=tmp_path, services=ServiceAddresses(), progress=tqdm_progress,
                          lock=lambda key: nullcontext(), outputs={}, durations={}, cache_path=tmp_path / "cache.sqlite3",
                          cancel_event=threading.Event())
    try:
        return context.builder.config
    finally:
        context.close()


@pytest.mark.parametrize("leaf", list(leaves(PipelineConfig)), ids=lambda leaf: leaf.info.name)
def test_every_option_is_taken_by_a_job_or_refused_as_the_services(leaf, tmp_path):
    dataset = str(tmp_path / "data")
    files = _files(tmp_path)
    name = leaf.info.name
    if name in JOB_REFUSED:
        assert leaf.info.flag in DOCUMENTED_REFUSED, f"{leaf.info.flag} is refused by jobs but not documented as refused"
        value = {"bm25.backend": "elasticsearch", "vectors.backend": "qdrant", "encoder.normalize": False,
                 "encoder.ray": True, "encoder.precision": "float16", "encoder.batch_size": 8,
                 "encoder.max_seq_length": 128, "encoder.max_active_dims": 64,
                 "vectors.exact_precision": "float16", "encoder.backend": "onnx",
                 "encoder.backend_precision": "int8"}.get(leaf.dotted, "x")
        spec = JobSpec.of(dataset=dataset, retriever="dense", **{name: value if not leaf.info.inverted else True})
        with pytest.raises(JobSpecError) as error:
            spec.validate()
        assert f"'pipeline.{leaf.dotted}' ({leaf.info.flag})" in str(error.value) and SERVICES_REASON in str(error.value)
        return
    assert leaf.info.flag not in DOCUMENTED_REFUSED
    if name == "second_judge":   # a second judge for flagged holes runs from judge-holes and eval only, so far
        with pytest.raises(JobSpecError, match="not available for orchestrator jobs"):
            JobSpec.of(dataset=dataset, fill_holes=5, flagged="second-judge", second_judge=files["judge.yaml"]).validate()
        return
    if name in ("sample", "sample_seed"):   # irforge eval only: a job's figures stand for its dataset
        with pytest.raises(JobSpecError, match="applies to irforge eval only"):
            JobSpec.of(dataset=dataset, sample=10, **({"sample_seed": 3} if name == "sample_seed" else {})).validate()
        return
    if name in ("recall_queries", "target_recall"):   # a job's HNSW search (the corpus service's) is not measured yet
        value = {"recall_queries": 10, "target_recall": 0.99}[name]
        with pytest.raises(JobSpecError, match="not available for orchestrator jobs yet"):
            JobSpec.of(dataset=dataset, retriever="dense", search="hnsw", **{name: value}).validate()
        return
    spec = _job_using(name, dataset, files).validate()
    assert name in _changed_names(spec.pipeline), f"the case for {name} does not set it"
    assert JobSpec.from_proto(spec.to_proto()) == spec
    assert _builder_config(spec, tmp_path) == spec.pipeline   # what was submitted is what the job builds


def _changed_names(config: PipelineConfig) -> set[str]:
    from irforge.config import changed

    return set(changed(config))


def test_the_refused_list_is_the_services_configuration():
    assert set(JOB_REFUSED.values()) == DOCUMENTED_REFUSED


def test_round_trips(tmp_path):
    files = _files(tmp_path)
    spec = JobSpec.of(dataset=str(tmp_path / "data"), split="dev", retriever="hybrid", k1=1.1, b=0.5, model="m",
                      fusion="linear", fusion_weights=(3.0, 1.0), reranker_endpoint=files["rerank.yaml"], rerank_depth=7,
                      measures=("nDCG@10",), top_k=70, keep_identical_ids=True, fill_holes=4, judge=files["judge.yaml"],
                      relevant_from=1, output=str(tmp_path / "out"), shards=3, name="n").validate()
    assert JobSpec.from_proto(spec.to_proto()) == spec
    assert JobSpec.from_dict(spec.as_dict()) == spec
    suite = JobSpec.of(dataset="", datasets=(SuiteMember(str(tmp_path / "a"), "a", "test"),
                                              SuiteMember(str(tmp_path / "b"), "b", "dev")), retriever="dense", name="s")
    assert JobSpec.from_proto(suite.validate().to_proto()) == suite
    assert suite.member_spec(suite.datasets[1]).pipeline == dataclasses.replace(
        suite.pipeline, dataset=str(tmp_path / "b"), split="dev")


def test_a_yaml_file_with_relative_paths(tmp_path):
    (tmp_path / "specs").mkdir()
    files = _files(tmp_path / "specs")
    del files
    path = tmp_path / "specs" / "job.yaml"
    path.write_text("pipeline:\n  dataset: data\n  retriever: bm25\n"
                    "  endpoint: {spec: endpoint.yaml, batch_size: 8}\n  rerank: {endpoint: rerank.yaml, depth: 20}\n"
                    "  holes: {depth: 5, thresholds: thresholds.json, relevant_from: 3}\n"
                    "  evaluation: {measures: [nDCG@10]}\noutput: out\nname: from a file\n")
    spec = JobSpec.from_yaml(path)
    base = tmp_path / "specs"
    expected = JobSpec.of(dataset=str(base / "data"), endpoint=str(base / "endpoint.yaml"), endpoint_batch_size=8,
                          reranker_endpoint=str(base / "rerank.yaml"), rerank_depth=20, fill_holes=5,
                          thresholds=str(base / "thresholds.json"), relevant_from=3, measures=("nDCG@10",),
                          output=str(base / "out"), name="from a file")
    assert spec == expected


def test_a_stored_spec_from_before_the_pipeline_config_still_reads(tmp_path):
    old = {"dataset": "/d", "split": "test", "retriever": "hybrid", "k1": 1.2, "b": 0.4, "model": "", "search": "exact",
           "hnsw_m": 16, "hnsw_ef_construct": 100, "hnsw_ef": 128, "fusion": "rrf", "rrf_k": 60.0,
           "fusion_weights": [1.0, 1.0], "hybrid_with": "dense", "endpoint": "", "reranker_model": "ce",
           "reranker_endpoint": "", "rerank_depth": 50, "measures": ["nDCG@10"], "top_k": 1000,
           "keep_identical_ids": False, "holes_depth": 0, "judge": "", "output": "", "shards": 0, "name": "",
           "instructions": False, "instruction_template": "", "robustness_k": 10, "datasets": []}
    spec = JobSpec.from_dict(old)
    assert spec == JobSpec.of(dataset="/d", retriever="hybrid", k1=1.2, reranker="ce", rerank_depth=50, measures=("nDCG@10",))


@pytest.mark.parametrize("doc", ["docs/orchestrator.md", "docs/bench.md"])
def test_the_documented_job_spec_files_read(doc):
    import re

    import yaml

    text = (Path(__file__).resolve().parents[2] / doc).read_text(encoding="utf-8")
    blocks = [block for block in re.findall(r"```yaml\n(.*?)```", text, re.S) if "pipeline:" in block]
    assert blocks, f"{doc} shows no job spec file"
    for block in blocks:
        spec = JobSpec.from_mapping(yaml.safe_load(block), source=doc)
        assert spec.is_suite or spec.dataset


def test_a_url_carrying_credentials_is_refused_in_a_job_and_redacted_in_results(tmp_path):
    from irforge.config import recorded

    files = _files(tmp_path)
    secret = "http://alice:s3cret@127.0.0.1:9/v1?api_key=K3Y"
    with pytest.raises(JobSpecError, match=r"pipeline.endpoint.url.*carries credentials") as refused:
        JobSpec.of(dataset=str(tmp_path), endpoint=files["endpoint.yaml"], endpoint_url=secret).validate()
    assert "s3cret" not in str(refused.value) and "K3Y" not in str(refused.value)
    config = with_options(PipelineConfig(dataset="d"), {"endpoint": files["endpoint.yaml"], "endpoint_url": secret,
                                                        "listwise_llm": secret, "listwise_model": "m"})
    written = json.dumps(recorded(config))
    assert "s3cret" not in written and "K3Y" not in written and "127.0.0.1:9" in written
