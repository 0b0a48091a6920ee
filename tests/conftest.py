"""Shared fixtures: paths to the real data beside the project (../shared/data)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("IRFORGE_SHARED_DATA", ROOT.parent / "shared" / "data"))
BEIR = SHARED_DATA / "beir"
CONFORMANCE = SHARED_DATA / "trec_eval_conformance"


@pytest.fixture(scope="session")
def beir_dir() -> Path:
    if not BEIR.is_dir():
        pytest.fail(f"real BEIR data not found at {BEIR} (set IRFORGE_SHARED_DATA)")
    return BEIR


@pytest.fixture(scope="session")
def conformance_dir() -> Path:
    if not CONFORMANCE.is_dir():
        pytest.fail(f"trec_eval conformance fixtures not found at {CONFORMANCE} (set IRFORGE_SHARED_DATA)")
    return CONFORMANCE


@pytest.fixture()
def unused_port() -> int:
    """A loopback port with nothing listening (bound, then released)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
