"""A suite as one orchestrator job, over real corpus and evaluator gRPC services: its suite.json
and each dataset's run.trec equal the in-process `irforge bench`'s, a restarted orchestrator
resumes it without redoing the dataset it had finished, and GetResults hands out the whole layout."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from irforge.common.grpc_server import start_server
from irforge.orchestrator import server as orchestrator_server
from irforge.orchestrator.client import OrchestratorClient
from irforge.orchestrator.context import ServiceAddresses
from irforge.orchestrator.core import Orchestrator
from irforge.orchestrator.errors import JobSpecError
from irforge.orchestrator.spec import JobSpec, SuiteMember
from irforge.orchestrator.store import JobState

from .conftest import LABELS


@pytest.fixture()
def orchestrators(tmp_path, services_address):
    made = []

    def make() -> Orchestrator:
        services = ServiceAddresses(corpus=services_address, evaluator=services_address, call_timeout_s=30.0,
                                    long_call_timeout_s=30.0)
        made.append(Orchestrator(tmp_path / "state", services, cache_path=tmp_path / "cache.sqlite3", backoff_s=0.05,
                                 progress_interval_s=0.0).start())
        return made[-1]

    yield make
    for orchestrator in made:
        orchestrator.shutdown(wait=True)


def suite_spec(workspace, output) -> JobSpec:
    scifact, nfcorpus = workspace["datasets"]
    return JobSpec.of(dataset="", name="two-slices", output=str(output),
                   datasets=(SuiteMember(str(scifact), "scifact", "test"), SuiteMember(str(nfcorpus), "nfcorpus", "test")))


def wait_for(orchestrator, job_id, timeout=120.0):
    deadline = time.monotonic() + timeout
    list(orchestrator.watch(job_id, is_active=lambda: time.monotonic() < deadline))
    record = orchestrator.get(job_id)
    assert record.state.ended, f"job {job_id} still {record.state.value}"
    return record


def test_an_orchestrated_suite_gives_what_the_in_process_bench_gives(orchestrators, workspace, first_run, tmp_path):
    output = tmp_path / "orchestrated"
    first = orchestrators()
    stopped = threading.Event()

    def stop_after_the_first_dataset(event):   # a crash between the datasets
        if (event.step, event.state) == ("scifact/evaluate", "done"):
            first.request_stop()
            stopped.set()

    first.subscribe(stop_after_the_first_dataset)
    job_id = first.submit(suite_spec(workspace, output))
    assert stopped.wait(60)
    first.shutdown(wait=True)
    second = orchestrators()
    record = wait_for(second, job_id)
    assert record.state == JobState.SUCCEEDED, record.error

    steps = {step.name: step for step in record.steps}
    assert list(steps) == ["scifact/ingest_lexical", "scifact/retrieve", "scifact/evaluate",
                           "nfcorpus/ingest_lexical", "nfcorpus/retrieve", "nfcorpus/evaluate", "suite"]
    assert all(step.state == "done" and step.executions == 1 for step in steps.values())   # nothing redone

    expected = json.loads((first_run["out"] / "suite.json").read_text())
    for folder in (second.results_dir(job_id), output):
        got = json.loads((folder / "suite.json").read_text())
        assert [d["label"] for d in got["datasets"]] == LABELS
        for mine, theirs in zip(got["datasets"], expected["datasets"]):
            assert mine["metrics"] == pytest.approx(theirs["metrics"], abs=1e-12)
            assert (mine["path"], mine["queries"], mine["results"]) == (theirs["path"], theirs["queries"], theirs["results"])
            assert (folder / mine["label"] / "run.trec").read_bytes() == \
                   (first_run["out"] / mine["label"] / "run.trec").read_bytes()
        assert got["mean"] == pytest.approx(expected["mean"], abs=1e-12)
        assert (got["kind"], got["name"], got["measures"]) == ("suite", "two-slices", expected["measures"])
        assert (folder / "suite.md").read_text().count("| **Mean** |") == 1
    assert record.metrics == pytest.approx(expected["mean"], abs=1e-12)

    # GetResults streams the whole layout; `irforge results` writes it as one folder.
    # So does the team SDK (clients/python), keeping each dataset's files apart.
    running = start_server([orchestrator_server.binding(second)], port=0)
    try:
        with OrchestratorClient(f"127.0.0.1:{running.port}") as client:
            written = client.results(job_id, tmp_path / "fetched")
        with sdk_client(f"127.0.0.1:{running.port}") as team:
            written_by_sdk = team.results(job_id, tmp_path / "fetched-sdk")
    finally:
        running.stop(grace=0)
    layout = sorted(["suite.json", "suite.md", *(f"{label}/{name}" for label in LABELS for name in ("results.json", "run.trec"))])
    assert sorted(str(p.relative_to(tmp_path / "fetched")) for p in written) == layout
    assert sorted(str(p.relative_to(tmp_path / "fetched-sdk")) for p in written_by_sdk) == layout
    for folder in ("fetched", "fetched-sdk"):
        for label in LABELS:
            assert (tmp_path / folder / label / "run.trec").read_bytes() == (output / label / "run.trec").read_bytes()


def sdk_client(address: str):
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "clients" / "python"))
    from irforge_client import OrchestratorClient as TeamClient

    return TeamClient(address)


def test_suite_job_specs_are_checked_per_dataset(workspace, tmp_path):
    spec = suite_spec(workspace, tmp_path / "out")
    assert JobSpec.from_proto(spec.to_proto()) == spec and JobSpec.from_dict(spec.as_dict()) == spec
    twice = SuiteMember(str(workspace["datasets"][1]), "scifact", "test")
    with pytest.raises(JobSpecError, match=r"'datasets\[1\].label': 'scifact' is already used by datasets\[0\]"):
        JobSpec.of(dataset="", datasets=(spec.datasets[0], twice)).validate()
    with pytest.raises(JobSpecError, match="give `pipeline.dataset` .* or `datasets`"):
        JobSpec.of(dataset=str(workspace["datasets"][0]), datasets=spec.datasets).validate()
    dev = SuiteMember(str(workspace["datasets"][1]), "nfcorpus", "dev")
    with pytest.raises(JobSpecError, match=r"'datasets\[1\]' \(nfcorpus\): .*dev.tsv does not exist"):
        JobSpec.of(dataset="", datasets=(spec.datasets[0], dev)).validate().check_paths()
    # The YAML form: the JobSpec mapping with a `datasets:` list; relative folders are the file's.
    (tmp_path / "job.yaml").write_text(f"datasets:\n  - dataset: {workspace['datasets'][0]}\n    label: scifact\n"
                                       f"  - {{dataset: {workspace['datasets'][1]}}}\npipeline: {{evaluation: {{measures: [nDCG@10]}}}}\n")
    loaded = JobSpec.from_yaml(tmp_path / "job.yaml")
    assert [(m.label, m.split) for m in loaded.datasets] == [("scifact", "test"), ("nfcorpus", "test")]
