"""`irforge eval --run FILE` on a hand-made collection whose every figure is counted by hand or
computed by pytrec_eval on the same ranking: the tie rule's cut to --top-k, queries that do not
line up between run and split, the layouts, and what is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import pytrec_eval

from irforge.cli.main import main
from irforge.config import ConfigError, PipelineConfig, validate
from irforge.config.pipeline import RUN_FORMATS as CONFIG_FORMATS, GivenRunsConfig
from irforge.runs import RUN_FORMATS

QRELS = {"q1": {"d1": 1, "d3": 2}, "q2": {"d2": 1}, "q3": {"d4": 1}}
# q1's d2 and d3 tie: the tie rule puts d3 (the larger id) first. q9 is not a query of the split;
# q3, a query of the split, is missing from the run.
TREC = ("q1 Q0 d1 1 3.0 team-bm25\nq1 Q0 d2 2 2.0 team-bm25\nq1 Q0 d3 3 2.0 team-bm25\nq1 Q0 d4 4 1.0 team-bm25\n"
        "q2 Q0 d1 1 5.0 team-bm25\nq2 Q0 d2 2 4.0 team-bm25\nq9 Q0 d1 1 1.0 team-bm25\n")


@pytest.fixture()
def dataset(tmp_path) -> Path:
    root = tmp_path / "tiny"
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text("".join(json.dumps({"_id": f"d{n}", "title": "", "text": f"text {n}"}) + "\n"
                                               for n in range(1, 6)))
    (root / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": f"query {q}"}) + "\n"
                                                for q in ("q1", "q2", "q3", "q9")))
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{q}\t{d}\t{r}\n" for q, judged in QRELS.items() for d, r in judged.items()))
    return root


def evaluate(dataset: Path, run: Path, out: Path, *extra: str) -> dict:
    assert main(["eval", "--dataset", str(dataset), "--run", str(run), "--out", str(out), "-m", "nDCG@10",
                 "-m", "R@100", *extra]) == 0
    return json.loads((out / "results.json").read_text())


def pytrec(run: dict) -> dict:
    """nDCG@10 per query by trec_eval's own code; a split query with no ranking scores 0 (-c)."""
    found = pytrec_eval.RelevanceEvaluator(QRELS, {"ndcg_cut.10"}).evaluate(run)
    return {q: found[q]["ndcg_cut_10"] if q in found else 0.0 for q in QRELS}


def test_top_k_is_cut_by_the_tie_rule(dataset, tmp_path):
    run = tmp_path / "team.trec"
    run.write_text(TREC)
    results = evaluate(dataset, run, tmp_path / "out", "--top-k", "2")
    # By hand: q1's best two are d1 (3.0) then d3 (2.0, ties with d2 and wins on id); q2's are d1, d2.
    written = [line.split()[:3] for line in (tmp_path / "out" / "run.trec").read_text().splitlines()]
    assert written == [["q1", "Q0", "d1"], ["q1", "Q0", "d3"], ["q2", "Q0", "d1"], ["q2", "Q0", "d2"]]
    expected = pytrec({"q1": {"d1": 3.0, "d3": 2.0}, "q2": {"d1": 5.0, "d2": 4.0}})
    assert {q: v["nDCG@10"] for q, v in results["per_query"].items()} == pytest.approx(expected, abs=1e-12)


def test_queries_that_do_not_line_up_are_counted_and_said(dataset, tmp_path, capsys):
    run = tmp_path / "team.trec"
    run.write_text(TREC)
    results = evaluate(dataset, run, tmp_path / "out")
    counts = results["counts"]
    assert (counts["run_queries"], counts["run_entries"]) == (3, 7)
    assert (counts["run_queries_not_in_split"], counts["run_queries_not_in_split_examples"]) == (1, ["q9"])
    assert (counts["split_queries_not_in_run"], counts["split_queries_not_in_run_examples"]) == (1, ["q3"])
    assert results["per_query"]["q3"]["nDCG@10"] == 0.0 and "q9" not in results["per_query"]
    assert results["evaluation"]["queries_evaluated"] == 3
    printed = capsys.readouterr().out
    assert "1 of its 3 queries are not queries of the split" in printed and "(e.g. q9)" in printed
    assert "1 queries of the split have no ranking in it, each scores 0 (e.g. q3)" in printed
    assert "latency: not measured (the ranking was read from a run file" in printed
    assert results["retriever"]["producer"] == "team-bm25"


@pytest.mark.parametrize(("name", "text", "layout"), [
    ("team.json", json.dumps({"q1": {"d1": 3.0, "d2": 2.0, "d3": 2.0, "d4": 1.0}, "q2": {"d1": 5, "d2": 4}}), "json"),
    ("team.tsv.gz", "q1\td1\t3\nq1\td2\t2\nq1\td3\t2\nq1\td4\t1\nq2\td1\t5\nq2\td2\t4\n", "tsv"),
    ("team.dev.tsv", "q1\td1\t1\nq1\td3\t2\nq1\td2\t3\nq1\td4\t4\nq2\td1\t1\nq2\td2\t2\n", "msmarco"),
])
def test_every_layout_scores_as_pytrec_eval_does(dataset, tmp_path, name, text, layout):
    import gzip

    run = tmp_path / name
    if name.endswith(".gz"):
        run.write_bytes(gzip.compress(text.encode()))
    else:
        run.write_text(text)
    results = evaluate(dataset, run, tmp_path / "out")
    assert results["retriever"]["format"] == layout and results["retriever"]["producer"] is None
    expected = pytrec({"q1": {"d1": 4.0, "d3": 3.0, "d2": 2.0, "d4": 1.0}, "q2": {"d1": 2.0, "d2": 1.0}})
    assert {q: v["nDCG@10"] for q, v in results["per_query"].items()} == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("extra", [["--retriever", "dense"], ["--k1", "1.2"], ["--model", "some/model"],
                                   ["--reranker", "some/cross-encoder"], ["--fusion", "linear"],
                                   ["--endpoint", "spec.yaml"], ["--search", "hnsw"], ["--language", "fr"]])
def test_options_that_build_a_retriever_are_refused(dataset, tmp_path, capsys, extra):
    run = tmp_path / "team.trec"
    run.write_text(TREC)
    assert main(["eval", "--dataset", str(dataset), "--run", str(run), "--out", str(tmp_path / "out"), *extra]) == 2
    error = capsys.readouterr().err
    assert f"{extra[0]} {extra[1]} does not apply with --run" in error
    assert not (tmp_path / "out").exists()


def test_two_runs_wait_for_fusion_and_a_format_needs_a_run(dataset, tmp_path, capsys):
    run = tmp_path / "team.trec"
    run.write_text(TREC)
    out = str(tmp_path / "out")
    assert main(["eval", "--dataset", str(dataset), "--run", str(run), "--run", str(run), "--out", out]) == 2
    assert "--run is given 2 times: scoring several runs as one system is fusion" in capsys.readouterr().err
    assert main(["eval", "--dataset", str(dataset), "--run-format", "trec", "--out", out]) == 2
    assert "--run-format trec does not apply here: it names the layout of --run FILE" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="not available for instruction-following"):
        validate(PipelineConfig(dataset=str(dataset), given=GivenRunsConfig(runs=(str(run),))), "eval-instructions")


def test_a_bad_run_file_exits_2_naming_file_and_line_before_any_output(dataset, tmp_path, capsys):
    run = tmp_path / "team.trec"
    run.write_text("q1 Q0 d1 1 3.0 t\nq1 Q0 d2 2 nan t\n")
    assert main(["eval", "--dataset", str(dataset), "--run", str(run), "--out", str(tmp_path / "out")]) == 2
    assert f"{run}:2: score nan for query 'q1', document 'd2' is not a finite number" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_the_configuration_knows_every_layout_the_reader_reads():
    assert CONFIG_FORMATS == RUN_FORMATS   # config imports no room: the tuple is kept twice, checked here
