"""`irforge eval --endpoint`: a team's gRPC Retriever, served with the client SDK, evaluated end to end."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from irforge.cli.main import main
from irforge.corpus.lexical.embedded import EmbeddedBackend
from irforge.corpus.settings import Bm25Settings
from irforge.data import BeirDataset
from irforge.data.types import Query

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "clients" / "python"))
from irforge_client import serve_retriever  # noqa: E402


@pytest.fixture(scope="module")
def team_retriever(scifact_subset, tmp_path_factory):
    """A team's service: irforge's own BM25 behind the SDK's serve_retriever (a real retriever over gRPC)."""
    backend = EmbeddedBackend(tmp_path_factory.mktemp("team-index"))
    backend.create("team", "fp", Bm25Settings())
    list(backend.ingest("team", iter([list(BeirDataset.open(scifact_subset).corpus())])))

    def search(query_id: str, query: str, k: int):
        return backend.search("team", [Query(query_id, query)], k)[0].pairs()

    server = serve_retriever(search)
    yield f"127.0.0.1:{server.port}"
    server.stop()


def write_spec(path: Path, **fields) -> Path:
    path.write_text("\n".join(f"{key}: {json.dumps(value)}" for key, value in fields.items()) + "\n")
    return path


def test_search_grpc_endpoint_scores_like_the_same_retriever_in_process(team_retriever, scifact_subset, tmp_path, monkeypatch):
    monkeypatch.setenv("TEAM_KEY", "s3cr3t-value-never-logged")
    spec = write_spec(tmp_path / "team.yaml", kind="search-grpc", url=team_retriever, api_key_env="TEAM_KEY", max_concurrency=2)
    assert main(["eval", "--dataset", str(scifact_subset), "--endpoint", str(spec), "--out", str(tmp_path / "team")]) == 0
    assert main(["eval", "--dataset", str(scifact_subset), "--retriever", "bm25", "--out", str(tmp_path / "own"),
                 "--index-dir", str(tmp_path / "own-index")]) == 0
    team = json.loads((tmp_path / "team" / "results.json").read_text())
    own = json.loads((tmp_path / "own" / "results.json").read_text())
    assert team["metrics"] == own["metrics"]
    endpoint = team["retriever"]["endpoint"]
    assert endpoint["host"] == team_retriever and endpoint["api_key_env"] == "TEAM_KEY"
    assert len(team["retriever"]["probe"]["sha256"]) == 64
    assert "s3cr3t-value-never-logged" not in (tmp_path / "team" / "results.json").read_text()


@pytest.mark.parametrize(("spec_fields", "flags", "message"), [
    ({"kind": "rerank-http", "url": "http://127.0.0.1:9/v1"}, [], "pass it with --reranker-endpoint"),
    ({"kind": "search-grpc", "url": "127.0.0.1:9", "bogus": 1}, [], "unknown key(s) bogus"),
    ({"kind": "search-grpc", "url": "127.0.0.1:9"}, ["--endpoint-max-concurrency", "0"], "--endpoint-max-concurrency must be at least 1"),
])
def test_bad_endpoint_specs_are_refused_before_any_work(spec_fields, flags, message, scifact_subset, tmp_path, capsys):
    spec = write_spec(tmp_path / "spec.yaml", **spec_fields)
    assert main(["eval", "--dataset", str(scifact_subset), "--endpoint", str(spec), "--out", str(tmp_path / "out"), *flags]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out" / "results.json").exists()
