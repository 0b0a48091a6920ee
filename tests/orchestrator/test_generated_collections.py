"""Collections `irforge generate` writes (all three recipes, against the scripted chat server)
evaluated through the orchestrator: each job's metrics and runs equal the in-process command's,
and a generated BEIR collection's manifest reaches the job's results.json as in `irforge eval`."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
import yaml
from irforge.cli.main import main
from irforge.orchestrator.spec import JobSpec
from irforge.orchestrator.store import JobState

from .conftest import wait_for

JUDGE_TESTS = Path(__file__).resolve().parents[1] / "judge"


def _scripted_chat():
    name = "irforge_judge_tests_scripted_chat"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, JUDGE_TESTS / "scripted_chat.py")
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


@pytest.fixture(scope="module")
def generated(scifact_subset, tmp_path_factory) -> dict[str, Path]:
    """recipe -> the collection it generated from the SciFact subset (no QC: the QC wiring has its own tests)."""
    root = tmp_path_factory.mktemp("generated")
    chat = _scripted_chat().ScriptedChat().start()
    try:
        spec = root / "llm.yaml"
        spec.write_text(yaml.safe_dump({"kind": "openai-chat", "url": chat.url, "model": "scripted-generator",
                                        "max_concurrency": 4, "timeout_s": 10.0}))
        out = {}
        for recipe, extra in (("airbench-qa", []), ("airbench-longdoc", []), ("infosearch", ["--dimension", "length"])):
            out[recipe] = root / recipe
            argv = ["generate", recipe, "--corpus", str(scifact_subset), "--llm", str(spec), "--out", str(out[recipe]),
                    "--docs", "5", "--no-qc", "--cache", str(root / "cache.sqlite3"), *extra]
            assert main(argv) == 0, argv
    finally:
        chat.stop()
    return out


@pytest.mark.parametrize("recipe", ["airbench-qa", "airbench-longdoc"])
def test_a_generated_beir_collection_evaluates_the_same_through_the_orchestrator(recipe, generated, make_orchestrator, tmp_path):
    collection = generated[recipe]
    orchestrator = make_orchestrator()
    job_id = orchestrator.submit(JobSpec.of(dataset=str(collection), measures=("nDCG@10", "R@100")).validate())
    record, _ = wait_for(orchestrator, job_id)
    assert record.state == JobState.SUCCEEDED, record.error
    job = json.loads((orchestrator.results_dir(job_id) / "results.json").read_text())

    out = tmp_path / "local"
    assert main(["eval", "--dataset", str(collection), "-m", "nDCG@10", "-m", "R@100", "--index-dir", str(tmp_path / "idx"),
                 "--out", str(out)]) == 0
    local = json.loads((out / "results.json").read_text())
    assert job["metrics"] == local["metrics"] and job["per_query"] == local["per_query"]
    assert (orchestrator.results_dir(job_id) / "run.trec").read_text() == (out / "run.trec").read_text()
    manifest = json.loads((collection / "generation.json").read_text())
    assert job["data"]["generation"] == local["data"]["generation"]
    assert job["data"]["generation"]["recipe"] == manifest["recipe"] == recipe


def test_a_generated_instruction_collection_evaluates_the_same_through_the_orchestrator(generated, make_orchestrator, tmp_path):
    collection = generated["infosearch"]
    orchestrator = make_orchestrator()
    job_id = orchestrator.submit(JobSpec.of(dataset=str(collection), instructions=True, measures=("nDCG@10",)).validate())
    record, _ = wait_for(orchestrator, job_id)
    assert record.state == JobState.SUCCEEDED, record.error
    job = json.loads((orchestrator.results_dir(job_id) / "results.json").read_text())
    out = tmp_path / "local"
    assert main(["eval-instructions", "--dataset", str(collection), "--index-dir", str(tmp_path / "idx"), "--out", str(out)]) == 0
    local = json.loads((out / "results.json").read_text())
    assert job["metrics"] == local["metrics"] and job["per_query"] == local["per_query"]
    assert {"p-MRR", "WISE", "SICR"} <= set(local["metrics"]) and local["layout"] == "infosearch"
