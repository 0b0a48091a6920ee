"""Job specs (flags, YAML, proto) with clear errors, and the orchestrator's gRPC door: errors keep
their type across the wire, watch streams events, results arrive whole."""

from __future__ import annotations

import argparse

import pytest
from irforge.cli import jobs_cmd
from irforge.common.grpc_server import start_server, wait_until_serving
from irforge.orchestrator import server as orchestrator_server
from irforge.orchestrator.client import OrchestratorClient
from irforge.orchestrator.errors import JobNotFound, JobSpecError, ResultsNotReady
from irforge.orchestrator.spec import JobSpec
from irforge.orchestrator.store import JobState


def submit_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    jobs_cmd.add_parsers(parser.add_subparsers(dest="command"))
    return parser.parse_args(["submit", *argv])


def test_flags_of_irforge_eval_make_a_spec(scifact_tiny):
    args = submit_args("--dataset", str(scifact_tiny), "--retriever", "hybrid", "--k1", "1.2", "--b", "0.75",
                       "--fusion", "linear", "--fusion-weights", "2,1", "-m", "nDCG@10", "--top-k", "50",
                       "--reranker-endpoint", str(scifact_tiny / "queries.jsonl"), "--rerank-depth", "20", "--fill-holes", "5")
    spec = jobs_cmd.submit_spec(args)
    config = spec.pipeline
    assert (config.retriever, config.bm25.k1, config.bm25.b, config.fusion.method, config.fusion.weights) == (
        "hybrid", 1.2, 0.75, "linear", (2.0, 1.0))
    assert (spec.measures, config.top_k, config.rerank.depth, config.holes.depth, config.holes.judge) == (
        ("nDCG@10",), 50, 20, 5, "embedded")
    assert spec.dataset == str(scifact_tiny.resolve())
    assert JobSpec.from_proto(spec.to_proto()) == spec  # the wire keeps every field


def test_service_flags_are_refused_with_their_names(scifact_tiny):
    args = submit_args("--dataset", str(scifact_tiny), "--index-dir", "/x", "--device", "cuda")
    with pytest.raises(JobSpecError, match=r"'pipeline.encoder.device' \(--device\), 'pipeline.stores.index_dir' "
                                           r"\(--index-dir\): these configure the services"):
        jobs_cmd.submit_spec(args)


def test_yaml_spec_files(tmp_path, scifact_tiny):
    good = tmp_path / "job.yaml"
    good.write_text(f"pipeline:\n  dataset: {scifact_tiny}\n  retriever: dense\n  encoder: {{model: all-MiniLM-L6-v2}}\n"
                    "  vectors: {search: hnsw, hnsw_ef: 64}\n  evaluation: {measures: [nDCG@10, R@100]}\n  top_k: 100\n"
                    "  holes: {depth: 10}\noutput: out\n")
    spec = JobSpec.from_yaml(good)
    config = spec.pipeline
    assert (config.retriever, config.encoder.model, config.vectors.search, config.vectors.hnsw_ef) == (
        "dense", "all-MiniLM-L6-v2", "hnsw", 64)
    assert (spec.measures, config.top_k, config.holes.depth) == (("nDCG@10", "R@100"), 100, 10)
    assert spec.output == str(tmp_path / "out")  # relative to the spec file

    cases = {
        "pipeline: {dataset: x}\nretriver: bm25\n": 'has no field named "retriver"',
        "dataset: x\n": "live under `pipeline:`",
        "pipeline: {dataset: x, retriver: bm25}\n": "unknown field 'retriver'; did you mean 'retriever'",
        "pipeline: {dataset: x, retriever: splade}\n": "'pipeline.retriever': --retriever: invalid choice: 'splade'",
        "pipeline: {dataset: x, evaluation: {measures: [nDCG@ten]}}\n": "'pipeline.evaluation.measures'",
        "pipeline: {dataset: x, top_k: 0}\n": "'pipeline.top_k': --top-k must be at least 1",
        "pipeline: {dataset: x, top_k: 1.5}\n": "top_k: expected a whole number",
        "pipeline: {retriever: bm25}\n": "'pipeline.dataset': required",
        "- a\n- b\n": "expected a mapping",
        "dataset: [\n": "not valid YAML",
    }
    for text, message in cases.items():
        bad = tmp_path / "bad.yaml"
        bad.write_text(text)
        with pytest.raises(JobSpecError, match=message) as error:
            JobSpec.from_yaml(bad)
        assert str(bad) in str(error.value)


@pytest.fixture()
def remote(make_orchestrator):
    orchestrator = make_orchestrator()
    running = start_server([orchestrator_server.binding(orchestrator)], port=0)
    address = f"127.0.0.1:{running.port}"
    wait_until_serving(address, "irforge.v1.Orchestrator")
    with OrchestratorClient(address) as client:
        yield client
    running.stop(grace=0)


def test_errors_keep_their_type_across_the_wire(remote, scifact_tiny, tmp_path):
    with pytest.raises(JobNotFound, match="no job 'absent'"):
        remote.get("absent")
    with pytest.raises(JobSpecError, match="'pipeline.split'"):
        remote.submit(JobSpec.of(dataset=str(scifact_tiny), split="dev"))
    with pytest.raises(JobSpecError, match="corpus.jsonl"):
        remote.submit(JobSpec.of(dataset="/nowhere"))
    broken = tmp_path / "broken"
    (broken / "qrels").mkdir(parents=True)
    (broken / "corpus.jsonl").write_text('{"_id": "d1", "text": "a"}\nnot json\n')
    (broken / "queries.jsonl").write_text('{"_id": "q1", "text": "a"}\n')
    (broken / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    job_id = remote.submit(JobSpec.of(dataset=str(broken)))
    assert list(remote.watch(job_id))[-1].state == "FAILED"
    assert "DataFormatError: " in remote.get(job_id).error and "corpus.jsonl:2: malformed JSON" in remote.get(job_id).error
    with pytest.raises(ResultsNotReady, match=f"job {job_id} is FAILED"):
        remote.results(job_id, tmp_path / "none")
    assert not (tmp_path / "none").exists() or not any((tmp_path / "none").iterdir())


def test_a_job_over_grpc(remote, scifact_tiny, tmp_path):
    job_id = remote.submit(JobSpec.of(dataset=str(scifact_tiny), name="tiny"))
    events = list(remote.watch(job_id))
    assert events[-1].state == "SUCCEEDED" and events[0].state == "QUEUED"
    record = remote.get(job_id)
    assert record.state == JobState.SUCCEEDED and record.spec["name"] == "tiny"
    assert [s.executions for s in record.steps] == [1, 1, 1] and set(record.metrics) >= {"nDCG@10", "R@100"}
    assert [job.job_id for job in remote.list()] == [job_id]
    files = remote.results(job_id, tmp_path / "results")  # tmp_path holds the orchestrator's state: not an output folder
    assert sorted(p.name for p in files) == ["results.json", "run.trec"]
    assert remote.cancel(job_id).state == JobState.SUCCEEDED  # an ended job stays as it ended
    # A watch resumed after the last event returns at once with nothing new.
    assert list(remote.watch(job_id, after=events[-1].sequence)) == []


def test_submit_from_a_spec_file_on_the_command_line(remote, scifact_tiny, tmp_path, capsys):
    from irforge.cli.main import main

    spec = tmp_path / "job.yaml"
    spec.write_text(f"pipeline: {{dataset: {scifact_tiny}, evaluation: {{measures: [nDCG@10]}}}}\nname: from a file\n")
    server = ["--server", remote.address]
    assert main(["submit", *server, "--spec", str(spec)]) == 0
    job_id = capsys.readouterr().out.strip()
    assert main(["watch", job_id, *server]) == 0
    assert remote.get(job_id).spec["name"] == "from a file" and set(remote.get(job_id).metrics) == {"nDCG@10"}
    assert main(["submit", *server, "--spec", str(spec), "--dataset", str(scifact_tiny)]) == 2
    assert "not both" in capsys.readouterr().err
    spec.write_text("pipeline: {dataset: x, retriever: splade}\n")
    assert main(["submit", *server, "--spec", str(spec)]) == 2
    assert "'pipeline.retriever': --retriever: invalid choice" in capsys.readouterr().err
