"""Fixtures for generation tests: the suite's scripted OpenAI-compatible chat server (answering
each stage's structured request by its schema), LLM specs pointing at it, and `generate` /
`run_cli` to run `irforge generate` and `irforge eval` in process."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import yaml

HERE = Path(__file__).resolve().parent


def _load(path: Path, name: str):
    if name in sys.modules:
        return sys.modules[name]
    module_spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    module_spec.loader.exec_module(module)
    return module


scripted = _load(HERE.parent / "judge" / "scripted_chat.py", "irforge_judge_tests_scripted_chat")


@pytest.fixture()
def chat():
    server = scripted.ScriptedChat().start()
    yield server
    server.stop()


@pytest.fixture()
def spec_file(chat, tmp_path):
    def make(**overrides) -> Path:
        path = tmp_path / f"llm-{len(list(tmp_path.glob('llm-*.yaml')))}.yaml"
        data = {"kind": "openai-chat", "url": chat.url, "model": "scripted-generator", "max_concurrency": 4,
                "backoff_initial_s": 0.01, "backoff_max_s": 0.05, "timeout_s": 10.0,
                "price_per_million_prompt_tokens": 1.0, "price_per_million_completion_tokens": 4.0, **overrides}
        path.write_text(yaml.safe_dump(data))
        return path
    return make


@pytest.fixture()
def run_cli(capsys):
    from irforge.cli.main import main

    def run(*argv) -> tuple[int, str, str]:
        code = main([str(a) for a in argv])
        captured = capsys.readouterr()
        return code, captured.out, captured.err
    return run
