"""A real orchestrator with accounts on 127.0.0.1: a corpus service and an evaluator (in this
process, embedded BM25) for its jobs, and certificates for mutual TLS, made here."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ..certificates import certificate, new_key, write_pem


@pytest.fixture(scope="module")
def job_services(tmp_path_factory):
    """A corpus service and an evaluator on one loopback port, for one module's orchestrator."""
    from irforge.common.grpc_server import start_server
    from irforge.corpus import server as corpus_server
    from irforge.corpus.core import CorpusService
    from irforge.corpus.lexical.embedded import EmbeddedBackend
    from irforge.evaluator import server as evaluator_server
    from irforge.evaluator.core import Evaluator

    indexes = tmp_path_factory.mktemp("indexes")
    running = start_server([corpus_server.binding(CorpusService(EmbeddedBackend(indexes))),
                            evaluator_server.binding(Evaluator())], port=0)
    yield f"127.0.0.1:{running.port}"
    running.stop(grace=0)


class OrchestratorProcess:
    """`irforge service orchestrator` as its own process, its output in a log file."""

    def __init__(self, state_dir: Path, services: str, *flags: str):
        self.state_dir = state_dir
        self.log = state_dir.parent / "orchestrator.log"
        command = [sys.executable, "-m", "irforge.cli.main", "service", "orchestrator", "--port", "0",
                   "--state-dir", str(state_dir), "--corpus-server", services, "--evaluator-server", services,
                   "--log-format", "json", *flags]
        with open(self.log, "wb") as output:
            self.process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while not (match := re.search(r"listening on \S+:(\d+)", self.log.read_text())):
            assert self.process.poll() is None and time.monotonic() < deadline, self.log.read_text()
            time.sleep(0.1)
        self.address = f"127.0.0.1:{match.group(1)}"

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


@pytest.fixture(scope="session")
def orchestrator_process():
    """OrchestratorProcess(state_dir, services_address, *flags): started; stop() it."""
    return OrchestratorProcess


# -- certificates ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    """A CA, a server certificate for 127.0.0.1, and client certificates with the subject CNs
    'team-a-ci' and 'stranger' (paths: ca, server_cert, server_key, <cn>_cert, <cn>_key)."""
    folder = tmp_path_factory.mktemp("pki")
    ca_key = new_key()
    paths = {"ca": write_pem(folder / "ca.pem", certificate("accounts test CA", ca_key, "accounts test CA", ca_key, ca=True))}
    server_key = new_key()
    paths["server_cert"] = write_pem(folder / "server.pem", certificate("127.0.0.1", server_key, "accounts test CA", ca_key, server=True))
    paths["server_key"] = write_pem(folder / "server.key", key=server_key)
    for name in ("team-a-ci", "stranger"):
        key = new_key()
        paths[f"{name}_cert"] = write_pem(folder / f"{name}.pem", certificate(name, key, "accounts test CA", ca_key))
        paths[f"{name}_key"] = write_pem(folder / f"{name}.key", key=key)
    return paths
