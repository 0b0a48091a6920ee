"""End to end: `irforge serve` starts every service as its own process; a BM25 job on the full
SciFact goes in through the client SDK and through `irforge submit/watch/results`, and gives
exactly what the in-process `irforge eval` gives; Ctrl-C/SIGTERM stops every process.

Models need Ray and encoding SciFact takes minutes here, so the platform runs --no-models."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from irforge.cli.main import main

CLIENT_ROOT = Path(__file__).resolve().parents[2] / "clients" / "python"
sys.path.insert(0, str(CLIENT_ROOT))

from irforge_client import JobError, OrchestratorClient  # noqa: E402

SERVICE_LINE = re.compile(r"irforge serve: (\w+) at (\S+) \(pid (\d+),")


@dataclass
class Platform:
    process: subprocess.Popen
    lines: list[str] = field(default_factory=list)
    addresses: dict[str, str] = field(default_factory=dict)
    pids: dict[str, int] = field(default_factory=dict)

    @property
    def orchestrator(self) -> str:
        return self.addresses["orchestrator"]


def start_serve(*flags: str) -> Platform:
    process = subprocess.Popen([sys.executable, "-m", "irforge.cli.main", "serve", *flags],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    platform = Platform(process)
    threading.Thread(target=lambda: platform.lines.extend(iter(process.stdout.readline, "")), daemon=True).start()
    return platform


def wait_ready(platform: Platform, timeout: float = 120.0) -> Platform:
    deadline = time.monotonic() + timeout
    while not any("ready;" in line for line in platform.lines):
        assert platform.process.poll() is None, "".join(platform.lines)
        assert time.monotonic() < deadline, "irforge serve not ready:\n" + "".join(platform.lines)
        time.sleep(0.1)
    for line in platform.lines:
        if match := SERVICE_LINE.search(line):
            platform.addresses[match.group(1)] = match.group(2)
            platform.pids[match.group(1)] = int(match.group(3))
    return platform


@pytest.fixture(scope="module")
def platform(tmp_path_factory):
    platform = wait_ready(start_serve("--no-models", "--base-port", "0", "--state-dir", str(tmp_path_factory.mktemp("platform"))))
    yield platform
    if platform.process.poll() is None:  # the last test stops it and checks; this only cleans up after a failure
        platform.process.send_signal(signal.SIGTERM)
        platform.process.wait(60)


@pytest.fixture(scope="module")
def in_process_eval(beir_dir, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("eval")
    assert main(["eval", "--dataset", str(beir_dir / "scifact"), "--retriever", "bm25", "--out", str(out),
                 "--index-dir", str(tmp_path_factory.mktemp("eval-index"))]) == 0
    return out


def test_serve_starts_every_service_as_its_own_process(platform):
    assert {"corpus", "evaluator", "judge", "orchestrator"} <= set(platform.addresses)
    assert len(set(platform.pids.values())) == len(platform.pids)
    assert all(address.startswith("127.0.0.1:") for address in platform.addresses.values())


def test_a_job_through_the_client_sdk_matches_irforge_eval(platform, beir_dir, in_process_eval, tmp_path):
    with OrchestratorClient(platform.orchestrator) as client:
        job_id = client.submit(pipeline={"dataset": str(beir_dir / "scifact"), "retriever": "bm25"})
        events = list(client.watch(job_id))
        job = client.get(job_id)
        assert job.state == "SUCCEEDED", job.error
        written = client.results(job_id, tmp_path)
    assert sorted(p.name for p in written) == ["results.json", "run.trec"]

    expected = json.loads((in_process_eval / "results.json").read_text())
    got = json.loads((tmp_path / "results.json").read_text())
    assert got["metrics"] == pytest.approx(expected["metrics"], abs=1e-12)
    assert got["per_query"] == expected["per_query"]
    assert (tmp_path / "run.trec").read_bytes() == (in_process_eval / "run.trec").read_bytes()
    assert got["metrics"]["nDCG@10"] == pytest.approx(0.6762, abs=5e-4)
    assert got["counts"]["documents_ingested"] == 5183 and got["job_id"] == job_id
    assert "orchestrator job" in got["mode"] and platform.addresses["corpus"] in got["mode"]

    ingest = [e for e in events if e.step == "ingest_lexical" and e.state == "progress"]
    assert ingest[-1].done == ingest[-1].total == 5183 and ingest[-1].unit == "doc"
    assert [e.state for e in events if not e.step] == ["QUEUED", "RUNNING", "SUCCEEDED"]


def test_submit_watch_results_on_the_command_line(platform, beir_dir, in_process_eval, tmp_path, capsys):
    server = ["--server", platform.orchestrator]
    assert main(["submit", *server, "--dataset", str(beir_dir / "scifact"), "--retriever", "bm25", "--top-k", "100"]) == 0
    job_id = capsys.readouterr().out.strip()
    assert re.fullmatch(r"[0-9a-f]{12}", job_id)
    assert main(["watch", job_id, *server]) == 0
    assert f"job {job_id} SUCCEEDED" in capsys.readouterr().out
    assert main(["results", job_id, "--out", str(tmp_path), *server]) == 0
    table = capsys.readouterr().out
    assert "nDCG@10    0.6762" in table and "bm25 index reused" in table

    got = json.loads((tmp_path / "results.json").read_text())
    expected = json.loads((in_process_eval / "results.json").read_text())
    assert got["counts"]["ingest_skipped"] is True        # the index the SDK job built, shared
    assert got["metrics"]["nDCG@10"] == pytest.approx(expected["metrics"]["nDCG@10"], abs=1e-12)  # top 10 of top 100
    assert main(["jobs", *server]) == 0
    assert job_id in capsys.readouterr().out


def test_failures_on_the_command_line(platform, beir_dir, tmp_path, capsys):
    server = ["--server", platform.orchestrator]
    assert main(["submit", *server, "--dataset", str(beir_dir / "scifact"), "--split", "nope"]) == 2
    assert "qrels/nope.tsv does not exist" in capsys.readouterr().err
    assert main(["submit", *server, "--dataset", str(beir_dir / "scifact"), "--index-dir", "x"]) == 2
    assert "--index-dir" in capsys.readouterr().err

    broken = tmp_path / "broken"
    (broken / "qrels").mkdir(parents=True)
    (broken / "corpus.jsonl").write_text('{"_id": "d1", "title": "", "text": "fine"}\n{"_id": "d2", "text": \n')
    (broken / "queries.jsonl").write_text('{"_id": "q1", "text": "fine"}\n')
    (broken / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    assert main(["submit", *server, "--dataset", str(broken)]) == 0
    job_id = capsys.readouterr().out.strip()
    assert main(["watch", job_id, *server]) == 1
    error = capsys.readouterr().err
    assert f"job {job_id} FAILED: step ingest_lexical: DataFormatError" in error and "corpus.jsonl" in error
    assert main(["results", job_id, "--out", str(tmp_path / "none"), *server]) == 2
    assert "FAILED" in capsys.readouterr().err
    with OrchestratorClient(platform.orchestrator) as client, pytest.raises(JobError, match="no job 'absent'"):
        client.get("absent")


def test_sigterm_stops_every_service(platform):
    platform.process.send_signal(signal.SIGTERM)
    assert platform.process.wait(60) == 0
    for pid in platform.pids.values():
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_a_service_that_cannot_start_is_named_with_its_output(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        corpus_port = taken.getsockname()[1]
        platform = start_serve("--no-models", "--no-judge", "--base-port", str(corpus_port - 1), "--state-dir", str(tmp_path))
        assert platform.process.wait(120) == 1
    time.sleep(0.2)  # the reader thread drains the pipe
    output = "".join(platform.lines)
    assert "irforge serve: error: the corpus service exited" in output
    assert f"127.0.0.1:{corpus_port}" in output  # its own error, from its log
