"""Fixtures for instruction-following tests: the hand-made collection and its scripted endpoint
(scripted_search.py), and a real collection built from SciFact by irforge.instructions.scifact_build."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def _load(name: str):
    """Helper modules of this folder (tests are not a package under --import-mode=importlib)."""
    module_spec = importlib.util.spec_from_file_location(f"irforge_instruction_tests_{name}", HERE / f"{name}.py")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[module_spec.name] = module
    module_spec.loader.exec_module(module)
    return module


scripted_search = _load("scripted_search")


@pytest.fixture()
def scripted():
    return scripted_search


@pytest.fixture()
def scripted_server():
    server = scripted_search.ScriptedSearchServer()
    yield server
    server.close()


@pytest.fixture(scope="session")
def scifact_instructions(beir_dir, tmp_path_factory) -> Path:
    """Two dimensions (keyword, length) built from real SciFact: 12 queries each, 100 distractors."""
    from irforge.instructions.scifact_build import build

    out = tmp_path_factory.mktemp("scifact-instructions") / "collection"
    build(beir_dir / "scifact", out, max_queries=12, distractors=100)
    return out
