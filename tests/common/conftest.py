"""Fixtures for the telemetry tests: the request log as parsed JSON lines, and /metrics scraped
over HTTP from 127.0.0.1 (metrics are process-wide, so tests compare before and after)."""

from __future__ import annotations

import io
import json
import logging
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from irforge.common.logs import make_handler
from irforge.common.metrics import start_metrics_server


class LogCapture:
    def __init__(self):
        self.stream = io.StringIO()

    def text(self) -> str:
        return self.stream.getvalue()

    def lines(self) -> list[dict]:
        return [json.loads(line) for line in self.text().splitlines()]

    def requests(self, method: str) -> list[dict]:
        """The request log lines of gRPC method `method` (e.g. "GetCorpus")."""
        return [line for line in self.lines() if line.get("grpc_method") == method]


@pytest.fixture()
def request_log():
    """JSON lines of the irforge.grpc logger (one per request) while the test runs."""
    capture = LogCapture()
    handler = make_handler("json", service="test", stream=capture.stream)
    logger = logging.getLogger("irforge.grpc")
    level = logger.level
    logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    yield capture
    logger.removeHandler(handler)
    logger.setLevel(level)


class Scraper:
    def __init__(self, port: int):
        self.url = f"http://127.0.0.1:{port}/metrics"

    def samples(self) -> dict[tuple[str, tuple], float]:
        with urllib.request.urlopen(self.url, timeout=5) as response:
            text = response.read().decode()
        return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
                for family in text_string_to_metric_families(text) for sample in family.samples}

    def value(self, name: str, **labels) -> float:
        return self.samples().get((name, tuple(sorted(labels.items()))), 0.0)


@pytest.fixture(scope="session")
def metrics_scraper():
    server, port = start_metrics_server("127.0.0.1", 0)
    yield Scraper(port)
    server.shutdown()
    server.server_close()
