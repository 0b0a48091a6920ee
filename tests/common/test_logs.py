"""Structured logs: JSON lines that parse and carry service, request id and job id; no secret in
them; and `irforge service --metrics-port --log-format json` end to end in a real process."""

from __future__ import annotations

import io
import json
import logging
import os
import signal
import subprocess
import sys
import urllib.request

import pytest

from irforge.common.grpc_server import open_channel, start_server
from irforge.common.logs import configure_logging, default_log_format, make_handler
from irforge.common.request_context import bound
from irforge.evaluator import server as evaluator_server
from irforge.evaluator.client import RemoteEvaluator
from irforge.evaluator.core import Evaluator
from irforge.evaluator.measures import MeasureError
from irforge.v1 import evaluator_pb2, evaluator_pb2_grpc


def emit(log_format: str, *args, **kwargs) -> str:
    stream = io.StringIO()
    logger = logging.getLogger("irforge.test.logs")
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    handler = make_handler(log_format, service="corpus", stream=stream)
    logger.addHandler(handler)
    try:
        logger.info(*args, **kwargs)
    finally:
        logger.removeHandler(handler)
    return stream.getvalue()


def test_json_lines_carry_the_context_and_extras():
    with bound(request_id="r-1", job_id="j-1"):
        line = json.loads(emit("json", "ingested %d documents", 30, extra={"corpus_id": "scifact"}))
    assert line["message"] == "ingested 30 documents"
    assert (line["service"], line["request_id"], line["job_id"]) == ("corpus", "r-1", "j-1")
    assert (line["level"], line["logger"], line["corpus_id"]) == ("INFO", "irforge.test.logs", "scifact")
    assert line["time"].endswith("+00:00")                      # UTC, ISO 8601
    assert json.loads(emit("json", "outside a request"))["request_id"] is None


def test_json_lines_hold_tracebacks_and_stay_one_line():
    try:
        raise ValueError("qrels line 17: relevance 'x' is not an integer")
    except ValueError:
        text = emit("json", "evaluation failed\nsecond line", exc_info=True)
    assert text.count("\n") == 1                                 # one record, one line
    line = json.loads(text)
    assert "Traceback" in line["exc_info"] and "relevance 'x'" in line["exc_info"]


def test_secret_sounding_extras_are_masked():
    line = json.loads(emit("json", "calling the judge", extra={"api_key": "sk-live-123", "authorization": "Bearer x",
                                                               "prompt_tokens": 12}))
    assert line["api_key"] == line["authorization"] == "[redacted]" and line["prompt_tokens"] == 12
    assert "sk-live-123" not in json.dumps(line)


def test_text_format_names_the_request():
    with bound(request_id="r-2"):
        assert "[corpus request=r-2 job=None] hello" in emit("text", "hello")


def test_default_format_is_text_on_a_terminal_and_json_otherwise():
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    assert default_log_format(Terminal()) == "text" and default_log_format(io.StringIO()) == "json"
    with pytest.raises(ValueError, match="log format must be one of json, text"):
        make_handler("yaml")


def test_authorization_metadata_never_reaches_the_log():
    stream = io.StringIO()
    root_level = logging.getLogger().level
    handler = configure_logging("json", service="evaluator", stream=stream)
    running = start_server([evaluator_server.binding(Evaluator())], port=0)
    try:
        with open_channel(f"127.0.0.1:{running.port}") as channel:
            stub = evaluator_pb2_grpc.EvaluatorStub(channel)
            stub.ListMeasures(evaluator_pb2.ListMeasuresRequest(),
                              metadata=[("authorization", "Bearer sk-very-secret"), ("x-api-key", "sk-other-secret")])
    finally:
        running.stop(grace=0)
        logging.getLogger().removeHandler(handler)
        logging.getLogger().setLevel(root_level)
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [line["grpc_code"] for line in lines if line.get("grpc_method") == "ListMeasures"] == ["OK"]
    assert "sk-very-secret" not in stream.getvalue() and "sk-other-secret" not in stream.getvalue()


def test_service_command_exports_metrics_and_json_logs(unused_port, tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "irforge.cli.main", "service", "evaluator", "--port", "0",
         "--metrics-port", str(unused_port), "--log-format", "json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    try:
        line = process.stdout.readline()
        assert "listening on 127.0.0.1:" in line, process.stderr.read() if process.poll() is not None else line
        address = line.rsplit(" ", 1)[-1].strip()
        with bound(request_id="cli-req-1", job_id="cli-job-1"), pytest.raises(MeasureError):
            RemoteEvaluator(address).evaluate({"q": {"d": 1}}, {"q": {"d": 1.0}}, ["bogus@3"])
        with urllib.request.urlopen(f"http://127.0.0.1:{unused_port}/metrics", timeout=5) as response:
            exported = response.read().decode()
        assert ('irforge_grpc_requests_total{code="INVALID_ARGUMENT",method="Evaluate",'
                'service="irforge.v1.Evaluator"} 1.0') in exported
        assert ('irforge_grpc_request_seconds_bucket{le="0.005",method="Evaluate",'
                'service="irforge.v1.Evaluator"}') in exported
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=30)
    assert process.returncode == 0, stderr
    records = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    [request] = [r for r in records if r.get("grpc_method") == "Evaluate"]
    assert (request["service"], request["request_id"], request["job_id"], request["grpc_code"]) == (
        "evaluator", "cli-req-1", "cli-job-1", "INVALID_ARGUMENT")
    assert any(r["message"] == f"metrics at http://127.0.0.1:{unused_port}/metrics" for r in records)
