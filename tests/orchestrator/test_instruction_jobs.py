"""Instruction-following jobs through the orchestrator: the same runs and metrics as
`irforge eval-instructions` in-process, for BM25 on the corpus service and for a team's search
endpoint; results come back as one set of results.json and one run per dimension and mode."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
from irforge.cli import jobs_cmd
from irforge.cli.main import build_parser, main
from irforge.common.grpc_server import start_server, wait_until_serving
from irforge.orchestrator import server as orchestrator_server
from irforge.orchestrator.errors import JobSpecError
from irforge.orchestrator.spec import JobSpec
from irforge.orchestrator.store import JobState

from .conftest import wait_for

INSTRUCTION_TESTS = Path(__file__).resolve().parents[1] / "instructions"


def _scripted():
    spec = importlib.util.spec_from_file_location("irforge_instruction_tests_scripted_search_orch",
                                                  INSTRUCTION_TESTS / "scripted_search.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


scripted = _scripted()


def test_bm25_job_equals_the_in_process_command(tmp_path, make_orchestrator, beir_dir):
    from irforge.instructions.scifact_build import build

    collection = tmp_path / "scifact-if"
    build(beir_dir / "scifact", collection, max_queries=8, distractors=60)
    orchestrator = make_orchestrator()
    job_id = orchestrator.submit(JobSpec.of(dataset=str(collection), instructions=True, measures=("nDCG@10",)).validate())
    record, _ = wait_for(orchestrator, job_id)
    assert record.state == JobState.SUCCEEDED, record.error
    assert [step.name for step in record.steps] == ["evaluate"]
    folder = orchestrator.results_dir(job_id)
    job_results = json.loads((folder / "results.json").read_text())

    out = tmp_path / "local"
    assert main(["eval-instructions", "--dataset", str(collection), "--index-dir", str(tmp_path / "idx"), "--out", str(out)]) == 0
    local = json.loads((out / "results.json").read_text())
    assert job_results["metrics"] == local["metrics"]
    assert job_results["per_query"] == local["per_query"]
    for dimension, files in local["files"]["runs"].items():
        for name in files.values():
            assert (folder / name).read_text() == (out / name).read_text(), name
    assert job_results["job_id"] == job_id and job_results["mode"].startswith(f"orchestrator job {job_id}")
    assert record.metrics == pytest.approx(local["metrics"])


def test_endpoint_job_gives_the_hand_computed_metrics_and_results_come_back_whole(tmp_path, make_orchestrator, services_address):
    server = scripted.ScriptedSearchServer()
    try:
        collection = scripted.write_collection(tmp_path / "if-tiny")
        endpoint = tmp_path / "search.yaml"
        endpoint.write_text(f"kind: search-http\nurl: {server.url}\n")
        orchestrator = make_orchestrator()
        spec = JobSpec.of(dataset=str(collection), endpoint=str(endpoint), instructions=True, measures=("nDCG@10",),
                       output=str(tmp_path / "copied")).validate()
        job_id = orchestrator.submit(spec)
        record, _ = wait_for(orchestrator, job_id)
    finally:
        server.close()
    assert record.state == JobState.SUCCEEDED, record.error
    results = json.loads((tmp_path / "copied" / "results.json").read_text())
    assert results["metrics"] == pytest.approx(scripted.EXPECTED, abs=1e-12)
    assert sorted(p.name for p in (tmp_path / "copied").iterdir()) == [
        "if-tiny.changed.trec", "if-tiny.og.trec", "if-tiny.reversed.trec", "results.json"]


def test_submit_watch_and_results_over_grpc(tmp_path, make_orchestrator, capsys):
    """The command line end to end: `submit --instructions`, `watch`, `results` (every run file
    comes back with results.json, and the instruction table is printed)."""
    server = scripted.ScriptedSearchServer()
    orchestrator = make_orchestrator()
    running = start_server([orchestrator_server.binding(orchestrator)], port=0)
    address = f"127.0.0.1:{running.port}"
    try:
        wait_until_serving(address, "irforge.v1.Orchestrator")
        collection = scripted.write_collection(tmp_path / "if-tiny")
        endpoint = tmp_path / "search.yaml"
        endpoint.write_text(f"kind: search-http\nurl: {server.url}\n")
        flags = ["--server", address]
        assert main(["submit", "--instructions", "--dataset", str(collection), "--endpoint", str(endpoint), *flags]) == 0
        job_id = capsys.readouterr().out.strip()
        assert main(["watch", job_id, *flags]) == 0
        capsys.readouterr()
        assert main(["results", job_id, "--out", str(tmp_path / "results"), *flags]) == 0
    finally:
        running.stop(grace=0)
        server.close()
    printed = capsys.readouterr().out
    assert "infosearch layout" in printed and "SICR" in printed
    assert sorted(p.name for p in (tmp_path / "results").iterdir()) == [
        "if-tiny.changed.trec", "if-tiny.og.trec", "if-tiny.reversed.trec", "results.json"]
    results = json.loads((tmp_path / "results" / "results.json").read_text())
    assert results["metrics"] == pytest.approx(scripted.EXPECTED, abs=1e-12)


def test_submit_flags_and_spec_files_ask_for_instruction_jobs(tmp_path):
    collection = scripted.write_collection(tmp_path / "if-tiny")
    args = build_parser().parse_args(["submit", "--instructions", "--dataset", str(collection),
                                      "--instruction-template", "Instruct: {instruction}\\nQuery: {query}"])
    spec = jobs_cmd.submit_spec(args)
    assert spec.instructions and spec.pipeline.instructions.template == "Instruct: {instruction}\nQuery: {query}"
    assert spec.measures == ("nDCG@10",)
    assert JobSpec.from_proto(spec.to_proto()) == spec
    spec.check_paths()
    mapping = {"pipeline": {"dataset": str(collection), "instructions": {"robustness_k": 5}}, "instructions": {"enabled": True}}
    assert JobSpec.from_mapping(mapping).pipeline.instructions.robustness_k == 5
    with pytest.raises(JobSpecError, match="instructions.template"):
        JobSpec.of(dataset=str(collection), instructions=True, instruction_template="{query} only").validate()
    with pytest.raises(JobSpecError, match="holes.depth"):
        JobSpec.of(dataset=str(collection), instructions=True, fill_holes=10).validate()
    with pytest.raises(JobSpecError, match="'pipeline.instructions.robustness_k': applies to instruction-following jobs"):
        JobSpec.of(dataset=str(collection), robustness_k=5).validate()
    (tmp_path / "empty").mkdir()
    with pytest.raises(JobSpecError, match="job spec field 'pipeline.dataset': .*no instruction-following collection"):
        JobSpec.of(dataset=str(tmp_path / "empty"), instructions=True).check_paths()


def test_followir_layout_with_a_reranker_job_equals_the_command(tmp_path, make_orchestrator, beir_dir):
    """FollowIR's two-mode layout, BM25 reranked by a rerank-http endpoint, through the orchestrator
    and in-process: the same metrics (nDCG per mode and p-MRR), and the reranker saw instructed queries."""
    from irforge.instructions.scifact_build import build

    spec = importlib.util.spec_from_file_location("irforge_docs_rerank_server_orch", Path(__file__).resolve().parents[1] / "docs" / "rerank_server.py")
    rerank_server = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rerank_server)
    collection = tmp_path / "followir"
    build(beir_dir / "scifact", collection, max_queries=6, distractors=60, layout="followir")
    server = rerank_server.RerankServer()
    try:
        reranker = tmp_path / "rerank.yaml"
        reranker.write_text(f"kind: rerank-http\nurl: {server.url}\nmodel: bm25-reranker\n")
        orchestrator = make_orchestrator()
        job_id = orchestrator.submit(JobSpec.of(dataset=str(collection), instructions=True, measures=("nDCG@10",),
                                             reranker_endpoint=str(reranker), rerank_depth=20).validate())
        record, _ = wait_for(orchestrator, job_id)
        assert record.state == JobState.SUCCEEDED, record.error
        out = tmp_path / "local"
        assert main(["eval-instructions", "--dataset", str(collection), "--index-dir", str(tmp_path / "idx"),
                     "--reranker-endpoint", str(reranker), "--rerank-depth", "20", "--out", str(out)]) == 0
    finally:
        server.close()
    job = json.loads((orchestrator.results_dir(job_id) / "results.json").read_text())
    local = json.loads((out / "results.json").read_text())
    assert job["layout"] == local["layout"] == "followir"
    assert list(local["metrics"]) == ["nDCG@10[og]", "nDCG@10[changed]", "p-MRR"]
    assert job["metrics"] == pytest.approx(local["metrics"])
    assert job["retriever"]["name"] == "bm25-rerank"
    assert any("Only documents" in request["query"] for request in server.requests)
