"""`irforge eval-instructions` end to end: a search endpoint answering scripted rankings per mode
gives metrics equal to values computed by hand; real retrievers run on a collection built from
SciFact; the instruction reaches each kind of retriever the way its users expect."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from irforge.cli.main import main
from irforge.runs import read_run_file

CLIENT_ROOT = Path(__file__).resolve().parents[2] / "clients" / "python"


def write_spec(path: Path, kind: str, url: str) -> Path:
    path.write_text(f"kind: {kind}\nurl: {url}\nmax_concurrency: 2\n")
    return path


def check_expected(results: dict, scripted) -> None:
    assert results["metrics"] == pytest.approx(scripted.EXPECTED, abs=1e-12)
    assert set(results["metrics"]) == set(scripted.EXPECTED)
    for query_id, expected in scripted.EXPECTED_PER_QUERY.items():
        got = {name: results["per_query"][query_id][name] for name in expected}
        assert got == pytest.approx(expected, abs=1e-12), query_id


def test_scripted_http_endpoint_gives_the_hand_computed_metrics(tmp_path, scripted, scripted_server, capsys):
    collection = scripted.write_collection(tmp_path / "if-tiny")
    spec = write_spec(tmp_path / "search.yaml", "search-http", scripted_server.url)
    out = tmp_path / "out"
    assert main(["eval-instructions", "--dataset", str(collection), "--endpoint", str(spec), "--out", str(out)]) == 0
    results = json.loads((out / "results.json").read_text())
    check_expected(results, scripted)
    assert results["kind"] == "instructions" and results["layout"] == "infosearch"
    # One run per mode, each the scripted ranking, ranked by irforge's tie rule.
    assert results["files"]["runs"] == {"if-tiny": {m: f"if-tiny.{m}.trec" for m in ("og", "changed", "reversed")}}
    for mode in ("og", "changed", "reversed"):
        run = read_run_file(out / f"if-tiny.{mode}.trec").run
        assert run["q1"] == dict(scripted.RANKINGS[("q1", mode)])
    # The endpoint got the query without the instruction, and the instruction as its own field.
    asked = [r for r in scripted_server.requests if r["query_id"] != "irforge-probe"]
    assert len(asked) == 6
    assert {(r["query"], r["instruction"]) for r in asked if r["query_id"] == "q1"} == {
        ("alpha", ""), ("alpha", "documents mentioning one"), ("alpha", "documents not mentioning one")}
    printed = capsys.readouterr().out
    assert "SICR" in printed and "0.7500" in printed and "x 100" in printed
    # Latency: each request timed (probe excluded); each mode's retrieval its own pass, so a query
    # id's three modes are three end-to-end samples, not one sum.
    latency = results["latency"]
    assert latency["stages"]["search-http requests"]["count"] == latency["end_to_end"]["count"] == len(asked) == 6
    assert "per query, end to end" in printed and "search-http requests" in printed


def test_scripted_grpc_endpoint_through_the_sdk(tmp_path, scripted):
    sys.path.insert(0, str(CLIENT_ROOT))
    from irforge_client import serve_retriever

    server = serve_retriever(scripted.scripted_grpc_search)
    try:
        collection = scripted.write_collection(tmp_path / "if-tiny")
        spec = write_spec(tmp_path / "search.yaml", "search-grpc", f"127.0.0.1:{server.port}")
        out = tmp_path / "out"
        assert main(["eval-instructions", "--dataset", str(collection), "--endpoint", str(spec), "--out", str(out)]) == 0
    finally:
        server.stop()
    check_expected(json.loads((out / "results.json").read_text()), scripted)


def test_followir_layout_gives_p_mrr_only(tmp_path, scripted, scripted_server):
    collection = scripted.write_collection(tmp_path / "followir-tiny", modes=("og", "changed"))
    spec = write_spec(tmp_path / "search.yaml", "search-http", scripted_server.url)
    out = tmp_path / "out"
    assert main(["eval-instructions", "--dataset", str(collection), "--endpoint", str(spec), "--out", str(out)]) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["layout"] == "followir"
    expected = {name: scripted.EXPECTED[name] for name in ("nDCG@10[og]", "nDCG@10[changed]", "p-MRR")}
    assert results["metrics"] == pytest.approx(expected, abs=1e-12)
    assert sorted(p.name for p in out.iterdir()) == ["followir-tiny.changed.trec", "followir-tiny.og.trec", "results.json"]


def test_a_bad_folder_fails_before_any_work(tmp_path, capsys):
    folder = tmp_path / "half"
    (folder / "qrels_og").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text('{"_id": "d1", "text": "x"}\n')
    (folder / "queries.jsonl").write_text('{"_id": "q1", "text": "x", "instruction_og": ""}\n')
    (folder / "qrels_og" / "test.tsv").write_text("q1\td1\t1\n")
    out = tmp_path / "out"
    assert main(["eval-instructions", "--dataset", str(folder), "--out", str(out)]) == 2
    error = capsys.readouterr().err
    assert "qrels_changed/ missing" in error
    assert not out.exists()


def test_a_template_missing_its_placeholders_is_refused(tmp_path, scripted, capsys):
    collection = scripted.write_collection(tmp_path / "if-tiny")
    assert main(["eval-instructions", "--dataset", str(collection), "--out", str(tmp_path / "out"),
                 "--instruction-template", "Instruct: {instruction}"]) == 2
    assert "{query}" in capsys.readouterr().err


@pytest.mark.slow
def test_bm25_on_scifact_dimensions(tmp_path, scifact_instructions, capsys):
    out = tmp_path / "out"
    assert main(["eval-instructions", "--dataset", str(scifact_instructions), "--index-dir", str(tmp_path / "idx"),
                 "--out", str(out)]) == 0
    results = json.loads((out / "results.json").read_text())
    assert set(results["dimensions"]) == {"keyword", "length"}
    names = ["nDCG@10[og]", "nDCG@10[changed]", "nDCG@10[reversed]", "p-MRR", "p-MRR[InfoSearch]", "WISE", "SICR"]
    assert list(results["metrics"]) == names
    for name in names:   # the headline is the mean over dimensions
        per_dimension = [d["metrics"][name] for d in results["dimensions"].values()]
        assert results["metrics"][name] == pytest.approx(sum(per_dimension) / 2)
    # Per-query values of every metric, keyed dimension/query id, for compare and significance tests.
    keys = list(results["per_query"])
    assert all(key.split("/")[0] in ("keyword", "length") for key in keys)
    assert all(set(names) - {"p-MRR[InfoSearch]"} <= set(values) | {"p-MRR"} for values in results["per_query"].values())
    # `irforge metrics` on a written run reproduces that mode's nDCG@10 (the one evaluator path).
    dimension = results["dimensions"]["keyword"]
    qrels = scifact_instructions / "keyword" / "qrels_changed" / "test.tsv"
    capsys.readouterr()
    assert main(["metrics", str(qrels), str(out / dimension["files"]["changed"]), "-m", "nDCG@10"]) == 0
    printed = capsys.readouterr().out
    assert f"{dimension['metrics']['nDCG@10[changed]']:.4f}" in printed


@pytest.mark.slow
def test_bm25_reads_query_plus_instruction_and_a_template(tmp_path, scifact_instructions):
    """BM25 gets query + " " + instruction: the keyword instruction names a term of the gold
    document, so the instructed mode must rank the gold documents higher than the plain query does."""
    out = tmp_path / "out"
    assert main(["eval-instructions", "--dataset", str(scifact_instructions / "keyword"), "--index-dir", str(tmp_path / "idx"),
                 "--out", str(out)]) == 0
    plain = json.loads((out / "results.json").read_text())
    assert plain["retriever"]["instruction"]["text_models_see"].startswith("query + ' ' + instruction")
    # The instructed run, judged by the instructed qrels, beats the plain query's run judged by the
    # same qrels: the term reached BM25 (were the instruction lost, the two runs would be equal).
    from irforge.data import read_beir_qrels
    from irforge.evaluator.core import EvaluationOptions, Evaluator

    changed_qrels = read_beir_qrels(scifact_instructions / "keyword" / "qrels_changed" / "test.tsv")
    def ndcg(mode):
        run = read_run_file(out / f"keyword.{mode}.trec").run
        return Evaluator().evaluate(changed_qrels, run, ["nDCG@10"], EvaluationOptions(complete=True)).aggregate["nDCG@10"]
    assert ndcg("changed") == pytest.approx(plain["metrics"]["nDCG@10[changed]"])
    assert ndcg("changed") > ndcg("og") + 0.02
    # BM25 cannot read "do not mention": the reversed instruction names the same term, so it also
    # lifts the gold documents, and no gold document is ranked as SICR asks (InfoSearch: BM25 SICR 0).
    assert plain["metrics"]["SICR"] == 0.0
    out2 = tmp_path / "out2"
    assert main(["eval-instructions", "--dataset", str(scifact_instructions / "keyword"), "--index-dir", str(tmp_path / "idx"),
                 "--instruction-template", "{query}", "--out", str(out2)]) == 2  # lacks {instruction}
    assert main(["eval-instructions", "--dataset", str(scifact_instructions / "keyword"), "--index-dir", str(tmp_path / "idx"),
                 "--instruction-template", "{instruction}\\n{query}", "--out", str(out2)]) == 0
    templated = json.loads((out2 / "results.json").read_text())
    assert templated["retriever"]["instruction"]["text_models_see"] == "{instruction}\n{query}"
    # For BM25 word order does not matter: the same scores, so the same metrics.
    assert templated["metrics"] == pytest.approx(plain["metrics"])


def test_instructir_layout_reports_robustness_over_each_base_query(tmp_path):
    """InstructIR: query ids <base>_<n>, each with its own instruction; Robustness@10 is the mean
    over base queries of the worst variant's nDCG@10 (computed here from the per-query values)."""
    folder = tmp_path / "instructir-tiny"
    (folder / "qrels").mkdir(parents=True)
    docs = {"d1": "solar panels on roofs", "d2": "wind turbines offshore", "d3": "solar panel prices",
            "d4": "wind farm noise", "d5": "hydro dams"}
    (folder / "corpus.jsonl").write_text("".join(json.dumps({"_id": d, "text": t}) + "\n" for d, t in docs.items()))
    queries = [("energy_0", "renewable energy", "about solar panels"), ("energy_1", "renewable energy", "about wind turbines"),
               ("dams_0", "water power", "about hydro dams")]
    (folder / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": t, "instruction": i}) + "\n" for q, t, i in queries))
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nenergy_0\td1\t1\nenergy_0\td3\t1\n"
                                               "energy_1\td2\t1\nenergy_1\td4\t1\ndams_0\td5\t1\n")
    out = tmp_path / "out"
    assert main(["eval-instructions", "--dataset", str(folder), "--index-dir", str(tmp_path / "idx"), "--out", str(out)]) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["layout"] == "instructir" and list(results["metrics"]) == ["nDCG@10", "Robustness@10"]
    ndcg = {q: v["nDCG@10"] for q, v in results["per_query"].items()}
    worst = {"energy": min(ndcg["energy_0"], ndcg["energy_1"]), "dams": ndcg["dams_0"]}
    assert results["dimensions"]["instructir-tiny"]["robustness_per_base_query"] == pytest.approx(worst)
    assert results["metrics"]["Robustness@10"] == pytest.approx((worst["energy"] + worst["dams"]) / 2)
    assert results["files"]["runs"] == {"instructir-tiny": {"instructed": "instructir-tiny.instructed.trec"}}


def test_python_api_returns_what_the_command_writes(tmp_path, scripted, scripted_server):
    import irforge

    collection = scripted.write_collection(tmp_path / "if-tiny")
    spec = write_spec(tmp_path / "search.yaml", "search-http", scripted_server.url)
    results = irforge.evaluate_instructions(collection, endpoint=spec, out=tmp_path / "out")
    assert results == json.loads((tmp_path / "out" / "results.json").read_text())
    assert results.metrics == pytest.approx(scripted.EXPECTED, abs=1e-12)
    assert set(results.run_paths) == {"if-tiny.og.trec", "if-tiny.changed.trec", "if-tiny.reversed.trec"}
    assert results.run_path is None and "SICR" in results.table()
    with pytest.raises(ValueError, match="instruction-template"):
        irforge.evaluate_instructions(collection, instruction_template="{query}", out=tmp_path / "bad")
