"""Every bad input in bad_inputs.py, through every path that reads it, ends in an error a user can
act on: the file and line (or the queries) named, exit code 2 from the CLI, a FAILED job from the
orchestrator, INVALID_ARGUMENT from the evaluator, nothing written to the output folder, and never
a traceback. Real servers on 127.0.0.1, started once per module; tiny files.

Paths: BEIR rows through `irforge eval` in-process, `irforge eval --server` (the corpus service's
Ingest and the evaluator over gRPC) and an orchestrator job submitted over its gRPC API; TREC rows
through `irforge metrics` and, where the file's lines are well-formed entries, as raw entries
streamed to the evaluator's Evaluate.
"""

from __future__ import annotations

import logging
import subprocess
import time
from pathlib import Path

import grpc
import pytest

from irforge.cli.main import main
from irforge.common.grpc_server import open_channel, start_server, wait_until_serving
from irforge.corpus import server as corpus_server
from irforge.corpus.core import CorpusService
from irforge.corpus.lexical.embedded import EmbeddedBackend
from irforge.evaluator import protocol
from irforge.evaluator import server as evaluator_server
from irforge.evaluator.core import EvaluationOptions, Evaluator
from irforge.orchestrator import server as orchestrator_server
from irforge.orchestrator.client import OrchestratorClient
from irforge.orchestrator.context import ServiceAddresses
from irforge.orchestrator.core import Orchestrator
from irforge.orchestrator.errors import JobSpecError, ResultsNotReady
from irforge.orchestrator.spec import JobSpec
from irforge.orchestrator.store import JobState
from irforge.v1 import common_pb2, evaluator_pb2, evaluator_pb2_grpc

from .bad_inputs import (
    BEIR_ACCEPTED, BEIR_CASES, GOOD_BEIR, GOOD_INSTRUCTIONS, GOOD_TREC, INSTRUCTION_CASES, TREC_ACCEPTED, TREC_CASES, Case,
)


def write_beir(root: Path, case: Case) -> Path:
    for name, data in {**GOOD_BEIR, case.file: case.data}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return root


def write_trec(folder: Path, case: Case) -> tuple[Path, Path]:
    """(qrels, run): the case's file and the good other one."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / case.file).write_bytes(case.data)
    qrels_name = case.file if case.file.startswith("qrels") else "qrels.txt"
    run_name = case.file if case.file.startswith("run") else "run.txt"
    for name in {qrels_name, run_name} - {case.file}:
        (folder / name).write_bytes(GOOD_TREC[name])
    return folder / qrels_name, folder / run_name


def expected(folder: Path, case: Case) -> str:
    """The message as a user reads it: where (absolute file path, line) then what."""
    return f"{folder / case.where}: {case.fragment}" if case.where else case.fragment


def assert_refused(code: int, captured, command: str, message: str) -> None:
    assert "Traceback" not in captured.err
    assert f"irforge {command}: error: {message}" in captured.err, captured.err
    assert code == 2


def wait_for_record(caplog, prefix: str, timeout_s: float = 10.0) -> logging.LogRecord:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = [r for r in caplog.records if r.getMessage().startswith(prefix)]
        if found:
            return found[-1]
        time.sleep(0.01)
    raise AssertionError(f"no log record {prefix!r} within {timeout_s}s")


def assert_nothing_in(out: Path) -> None:
    assert not out.exists() or not any(out.iterdir()), sorted(p.name for p in out.iterdir())


@pytest.fixture(scope="module")
def services(tmp_path_factory):
    """The corpus service (embedded BM25) and the evaluator on one loopback port."""
    indexes = tmp_path_factory.mktemp("service-indexes")
    running = start_server([corpus_server.binding(CorpusService(EmbeddedBackend(indexes))),
                            evaluator_server.binding(Evaluator())], port=0)
    yield f"127.0.0.1:{running.port}"
    running.stop(grace=0)


@pytest.fixture(scope="module")
def orchestrator(services, tmp_path_factory):
    """(orchestrator, a client of its gRPC door) over `services`."""
    state = tmp_path_factory.mktemp("orchestrator")
    addresses = ServiceAddresses(corpus=services, evaluator=services, call_timeout_s=30.0, long_call_timeout_s=30.0)
    core = Orchestrator(state / "state", addresses, cache_path=state / "cache.sqlite3", backoff_s=0.05,
                        progress_interval_s=0.0).start()
    running = start_server([orchestrator_server.binding(core)], port=0)
    address = f"127.0.0.1:{running.port}"
    wait_until_serving(address, "irforge.v1.Orchestrator")
    with OrchestratorClient(address) as client:
        yield core, client
    running.stop(grace=0)
    core.shutdown(wait=True)


# -- BEIR collections ----------------------------------------------------------------------------

def eval_argv(dataset: Path, out: Path, *more: str) -> list[str]:
    return ["eval", "--dataset", str(dataset), "--out", str(out), "-m", "nDCG@10", *more]


@pytest.mark.parametrize("case", BEIR_CASES, ids=str)
def test_irforge_eval_refuses(case, tmp_path, capsys):
    dataset = write_beir(tmp_path / "ds", case)
    code = main(eval_argv(dataset, tmp_path / "out", "--index-dir", str(tmp_path / "indexes")))
    assert_refused(code, capsys.readouterr(), "eval", expected(dataset, case))
    assert_nothing_in(tmp_path / "out")


@pytest.mark.parametrize("case", BEIR_CASES, ids=str)
def test_irforge_eval_over_grpc_services_refuses(case, services, tmp_path, capsys, caplog):
    caplog.set_level(logging.INFO, logger="irforge.grpc")
    dataset = write_beir(tmp_path / "ds", case)
    code = main(eval_argv(dataset, tmp_path / "out", "--server", services))
    assert_refused(code, capsys.readouterr(), "eval", expected(dataset, case))
    assert_nothing_in(tmp_path / "out")
    if case.file == "corpus.jsonl":
        # The client's bad corpus cancels its Ingest stream: not the server's fault, so no ERROR
        # and no traceback in the server's log (its handler finishes after the client has left).
        ingest = wait_for_record(caplog, "/irforge.v1.Corpus/Ingest")
        assert (ingest.levelname, ingest.exc_info) == ("INFO", None), ingest.getMessage()


@pytest.mark.parametrize("case", BEIR_CASES, ids=str)
def test_an_orchestrator_job_fails_with_the_readers_message(case, orchestrator, tmp_path):
    core, client = orchestrator
    dataset = write_beir(tmp_path / "ds", case)
    job_id = client.submit(JobSpec.of(dataset=str(dataset), measures=("nDCG@10",)))
    assert list(client.watch(job_id))[-1].state == "FAILED"
    record = client.get(job_id)
    assert record.state == JobState.FAILED
    assert f"DataFormatError: {expected(dataset, case)}" in record.error and "Traceback" not in record.error
    with pytest.raises(ResultsNotReady):
        client.results(job_id, tmp_path / "out")
    assert_nothing_in(tmp_path / "out")
    assert_nothing_in(core.job_dir(job_id) / "results")


@pytest.mark.parametrize("case", BEIR_ACCEPTED, ids=str)
@pytest.mark.parametrize("over_grpc", [False, True], ids=["in-process", "grpc"])
def test_irforge_eval_accepts(case, over_grpc, services, tmp_path, capsys):
    dataset = write_beir(tmp_path / "ds", case)
    where = ["--server", services] if over_grpc else ["--index-dir", str(tmp_path / "indexes")]
    assert main(eval_argv(dataset, tmp_path / "out", *where)) == 0, capsys.readouterr().err
    assert (tmp_path / "out" / "results.json").is_file()


# -- TREC run and qrels files ------------------------------------------------------------------

@pytest.mark.parametrize("case", TREC_CASES, ids=str)
def test_irforge_metrics_refuses(case, tmp_path, capsys):
    qrels, run = write_trec(tmp_path, case)
    code = main(["metrics", str(qrels), str(run), "-m", "P@1"])
    captured = capsys.readouterr()
    assert_refused(code, captured, "metrics", expected(tmp_path, case))
    assert captured.out == ""


@pytest.mark.parametrize("case", TREC_ACCEPTED, ids=str)
def test_irforge_metrics_accepts(case, tmp_path, capsys):
    qrels, run = write_trec(tmp_path, case)
    assert main(["metrics", str(qrels), str(run), "-m", "P@1"]) == 0
    assert capsys.readouterr().out == "P@1                   \tall\t1.0000\n"


def loose_entries(data: bytes, is_run: bool) -> list | None:
    """The file's lines as the protobuf entries a client could send, with none of the readers'
    checks; None where the lines are not entries at all (bad fields, bytes, an empty file)."""
    try:
        rows = [line.split() for line in data.decode("utf-8").splitlines()]
        if any(len(fields) != (6 if is_run else 4) for fields in rows):
            return None
        if is_run:
            return [common_pb2.RunEntry(query_id=f[0], doc_id=f[2], score=float(f[4])) for f in rows] or None
        return [common_pb2.Judgement(query_id=f[0], doc_id=f[2], relevance=int(f[3])) for f in rows] or None
    except (UnicodeDecodeError, ValueError):
        return None


def grpc_request(case: Case) -> list | None:
    files = {**GOOD_TREC, case.file: case.data}
    run, qrels = loose_entries(files.get("run.txt", b""), True), loose_entries(files.get("qrels.txt", b""), False)
    if run is None or qrels is None or not case.file.endswith(".txt") or case.data.startswith(b"\xef\xbb\xbf"):
        return None
    options = protocol.options_to_proto(["P@1"], EvaluationOptions(), per_query=False)
    return [evaluator_pb2.EvaluateRequest(options=options),
            evaluator_pb2.EvaluateRequest(qrels=evaluator_pb2.QrelsChunk(judgements=qrels)),
            evaluator_pb2.EvaluateRequest(run=evaluator_pb2.RunChunk(entries=run))]


GRPC_CASES = [case for case in TREC_CASES if grpc_request(case) is not None]


def test_the_grpc_leg_gets_every_entry_level_case():
    # A guard on loose_entries: these rows are exactly what only the entries themselves can show.
    assert {c.name for c in GRPC_CASES} == {"run-score-nan", "run-score-inf", "run-score-huge-overflows-to-inf",
                                            "run-duplicate-entry", "qrels-conflict", "run-and-qrels-disjoint"}


@pytest.mark.parametrize("case", GRPC_CASES, ids=str)
def test_the_grpc_evaluator_refuses_the_same_entries(case, services):
    with open_channel(services) as channel:
        with pytest.raises(grpc.RpcError) as error:
            evaluator_pb2_grpc.EvaluatorStub(channel).Evaluate(iter(grpc_request(case)), timeout=30)
    assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert error.value.details().startswith("EvaluationError: ")
    assert case.fragment in error.value.details()


# -- the installed command, as a user runs it --------------------------------------------------

@pytest.mark.parametrize("command, case", [("eval", BEIR_CASES[0]), ("metrics", TREC_CASES[2])], ids=["eval", "metrics"])
def test_the_command_exits_2_without_a_traceback(command, case, tmp_path, irforge_command):
    if command == "eval":
        folder = write_beir(tmp_path / "ds", case)
        argv = eval_argv(folder, tmp_path / "out", "--index-dir", str(tmp_path / "indexes"))
    else:
        folder = tmp_path
        argv = ["metrics", *map(str, write_trec(tmp_path, case))]
    # Its own process (forked from the pre-imported irforge, tests/conftest.py: irforge_command).
    done = subprocess.run([*irforge_command, *argv], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith(f"irforge {command}: error: {expected(folder, case)}")
    assert "Traceback" not in done.stderr
    assert_nothing_in(tmp_path / "out")


# -- instruction-following collections ------------------------------------------------------------

def write_instructions(root: Path, case: Case) -> Path:
    for name, data in {**GOOD_INSTRUCTIONS, case.file: case.data}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return root


def instructions_argv(dataset: Path, out: Path, *more: str) -> list[str]:
    return ["eval-instructions", "--dataset", str(dataset), "--out", str(out), *more]


def test_the_good_instruction_folder_evaluates(tmp_path, services, capsys):
    """The rows' baseline: without the row's change, every path succeeds."""
    dataset = tmp_path / "ds"
    for name, data in GOOD_INSTRUCTIONS.items():
        (dataset / name).parent.mkdir(parents=True, exist_ok=True)
        (dataset / name).write_bytes(data)
    assert main(instructions_argv(dataset, tmp_path / "out", "--index-dir", str(tmp_path / "indexes"))) == 0
    assert main(instructions_argv(dataset, tmp_path / "out2", "--server", services)) == 0


@pytest.mark.parametrize("case", INSTRUCTION_CASES, ids=str)
@pytest.mark.parametrize("over_grpc", [False, True], ids=["in-process", "grpc"])
def test_irforge_eval_instructions_refuses(case, over_grpc, services, tmp_path, capsys):
    dataset = write_instructions(tmp_path / "ds", case)
    where = ["--server", services] if over_grpc else ["--index-dir", str(tmp_path / "indexes")]
    code = main(instructions_argv(dataset, tmp_path / "out", *where))
    assert_refused(code, capsys.readouterr(), "eval-instructions", expected(dataset, case))
    assert_nothing_in(tmp_path / "out")


@pytest.mark.parametrize("case", INSTRUCTION_CASES, ids=str)
def test_an_instruction_job_is_refused_or_fails_with_the_readers_message(case, orchestrator, tmp_path):
    """A folder whose layout is wrong is refused at submission; a bad line fails the job: both with
    the reader's message, and no results."""
    core, client = orchestrator
    dataset = write_instructions(tmp_path / "ds", case)
    try:
        job_id = client.submit(JobSpec.of(dataset=str(dataset), instructions=True, measures=("nDCG@10",)))
    except JobSpecError as error:
        assert f"job spec field 'pipeline.dataset': {expected(dataset, case)}" in str(error)
        return
    assert list(client.watch(job_id))[-1].state == "FAILED"
    record = client.get(job_id)
    assert f"DataFormatError: {expected(dataset, case)}" in record.error and "Traceback" not in record.error
    assert_nothing_in(core.job_dir(job_id) / "results")
