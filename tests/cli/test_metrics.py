"""`irforge metrics` meets the files users have: BEIR qrels (header, 3 tab-separated columns) as
well as TREC's, a run missing some qrels queries (said, with what -c does), and the two files
given in the wrong order. Real files: trec_eval's fixtures and NFCorpus's qrels, sliced in tmp_path."""

from __future__ import annotations

from pathlib import Path

import pytest

from irforge.cli.main import main

BEIR_HEADER = "query-id\tcorpus-id\tscore\n"


def as_beir(trec_qrels: Path, path: Path) -> Path:
    """The same judgements in BEIR's layout: header, then query-id, corpus-id, score."""
    rows = (line.split() for line in trec_qrels.read_text().splitlines() if line.strip())
    path.write_text(BEIR_HEADER + "".join(f"{q}\t{d}\t{rel}\n" for q, _, d, rel in rows))
    return path


def metrics(capsys, *argv) -> tuple[int, str, str]:
    code = main(["metrics", *map(str, argv)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("name", ["test.tsv", "qrels.judged.tsv"])
def test_beir_qrels_give_the_same_output_as_the_trec_file_they_came_from(name, conformance_dir, tmp_path, capsys):
    trec = conformance_dir / "qrels.test"
    beir = as_beir(trec, tmp_path / name)
    run = conformance_dir / "results.test"
    code, from_trec, trec_err = metrics(capsys, "-q", "-m", "all_trec", trec, run)
    assert code == 0
    code, from_beir, beir_err = metrics(capsys, "-q", "-m", "all_trec", beir, run)
    assert code == 0, beir_err
    assert from_beir == from_trec
    assert f"irforge metrics: read {beir} as BEIR qrels (header query-id corpus-id score)" in beir_err
    assert f"irforge metrics: read {trec} as TREC qrels (qid iter docno rel)" in trec_err


def test_a_real_beir_qrels_file_is_read(beir_dir, tmp_path, capsys):
    # The first 200 lines of NFCorpus's test qrels as shipped (header included); a run ranking
    # each query's judged documents in file order.
    lines = (beir_dir / "nfcorpus" / "qrels" / "test.tsv").read_text().splitlines(keepends=True)[:200]
    qrels = tmp_path / "test.tsv"
    qrels.write_text("".join(lines))
    rows = [line.split("\t") for line in lines[1:]]
    run = tmp_path / "run.trec"
    run.write_text("".join(f"{q} Q0 {d} {n} {-n} bm25\n" for n, (q, d, _) in enumerate(rows, start=1)))
    code, out, err = metrics(capsys, "-m", "num_q", "-m", "num_rel", qrels, run)
    assert code == 0, err
    assert out.splitlines()[-2:] == [f"num_q                 \tall\t{len({r[0] for r in rows})}",
                                     f"num_rel               \tall\t{sum(int(r[2]) >= 1 for r in rows)}"]
    assert "as BEIR qrels" in err


def test_three_tab_columns_without_the_header_are_refused_naming_the_header(conformance_dir, tmp_path, capsys):
    qrels = as_beir(conformance_dir / "qrels.test", tmp_path / "test.tsv")
    qrels.write_text(qrels.read_text().removeprefix(BEIR_HEADER))
    code, out, err = metrics(capsys, qrels, conformance_dir / "results.test")
    assert code == 2 and out == ""
    assert (f"irforge metrics: error: {qrels}:1: expected 4 fields (qid iter docno rel), got 3; a BEIR qrels "
            "(query-id corpus-id score) must start with the header line 'query-id<TAB>corpus-id<TAB>score'") in err


@pytest.fixture()
def run_without_302(conformance_dir, tmp_path) -> Path:
    """trec_eval's results.test without query 302: 1 of the 3 qrels queries has no ranking."""
    lines = (conformance_dir / "results.test").read_text().splitlines(keepends=True)
    path = tmp_path / "results.no302"
    path.write_text("".join(line for line in lines if line.split()[0] != "302"))
    return path


def test_qrels_queries_missing_from_the_run_are_counted_and_c_explained(conformance_dir, run_without_302, capsys):
    qrels = conformance_dir / "qrels.test"
    code, out, err = metrics(capsys, "-m", "num_q", qrels, run_without_302)
    assert code == 0 and out.endswith("num_q                 \tall\t2\n")
    assert ("irforge metrics: 1 of 3 qrels queries has no ranking in the run ('302'); it is left out of the "
            "averages (trec_eval's default); -c counts it as 0, as irforge eval does") in err

    code, out, err = metrics(capsys, "-c", "-m", "num_q", qrels, run_without_302)
    assert code == 0 and out.endswith("num_q                 \tall\t3\n")
    assert "irforge metrics: 1 of 3 qrels queries has no ranking in the run ('302'); -c counts it as 0" in err
    assert "left out" not in err


def test_several_missing_queries_are_counted_in_the_plural(conformance_dir, tmp_path, capsys):
    lines = (conformance_dir / "results.test").read_text().splitlines(keepends=True)
    run = tmp_path / "results.301"
    run.write_text("".join(line for line in lines if line.split()[0] == "301"))
    code, _, err = metrics(capsys, "-m", "P@10", conformance_dir / "qrels.test", run)
    assert code == 0
    assert ("irforge metrics: 2 of 3 qrels queries have no ranking in the run (e.g. '302', '303'); they are left out "
            "of the averages (trec_eval's default); -c counts them as 0, as irforge eval does") in err


def test_a_run_covering_every_qrels_query_gets_no_note(conformance_dir, capsys):
    code, _, err = metrics(capsys, "-m", "P@10", conformance_dir / "qrels.test", conformance_dir / "results.test")
    assert code == 0 and "no ranking" not in err


@pytest.mark.parametrize("beir", [False, True], ids=["trec-qrels", "beir-qrels"])
def test_run_and_qrels_in_the_wrong_order_get_a_hint(beir, conformance_dir, tmp_path, capsys):
    qrels = as_beir(conformance_dir / "qrels.test", tmp_path / "test.tsv") if beir else conformance_dir / "qrels.test"
    run = conformance_dir / "results.test"
    code, out, err = metrics(capsys, run, qrels)
    assert code == 2 and out == ""
    assert f"irforge metrics: error: {run}:1: expected 4 fields (qid iter docno rel), got 6" in err
    assert (f"{run} looks like a run and {qrels} like qrels: were they given in the wrong order? "
            "The order is: irforge metrics QRELS RUN") in err


def test_two_runs_get_no_swap_hint(conformance_dir, capsys):
    run = conformance_dir / "results.test"
    code, _, err = metrics(capsys, run, run)
    assert code == 2 and "expected 4 fields" in err and "wrong order" not in err


def test_without_m_it_shows_evals_measures_and_with_trec_eval_trec_evals_set(conformance_dir, capsys):
    """Issue 29: `irforge metrics` on eval's run shows eval's numbers; trec_eval's default set is a flag away."""
    qrels, run = conformance_dir / "qrels.test", conformance_dir / "results.test"
    code, out, err = metrics(capsys, qrels, run)
    assert code == 0, err
    shown = [line.split("\t")[0].strip() for line in out.splitlines()]
    assert shown == ["nDCG@10", "R@100", "AP@100", "RR@10", "P@10", "Judged@10"]
    # nDCG@10 of trec_eval's own fixture, computed by pytrec_eval directly (ndcg_cut_10, mean over the queries).
    import pytrec_eval

    from irforge.data.qrels_layout import read_qrels_file
    from irforge.runs import read_run_file
    judged = read_qrels_file(qrels).qrels
    ranked = read_run_file(run).run
    per_query = pytrec_eval.RelevanceEvaluator(
        {q: dict(v) for q, v in judged.items()}, {"ndcg_cut.10"}).evaluate(
        {q: {d: float(s) for d, s in v.items()} for q, v in ranked.items() if q in judged})
    expected = sum(v["ndcg_cut_10"] for v in per_query.values()) / len(per_query)
    assert float(out.splitlines()[0].split("\t")[2]) == pytest.approx(expected, abs=1e-4)
    code, trec_out, _ = metrics(capsys, "--trec-eval", qrels, run)
    assert code == 0
    trec_names = [line.split("\t")[0].strip() for line in trec_out.splitlines()]
    assert trec_names[:3] == ["runid", "num_q", "num_ret"] and "map" in trec_names and "nDCG@10" not in trec_names


@pytest.mark.parametrize("typed, shown", [("ndcg@10", "nDCG@10"), ("r@100", "R@100"), ("judged@10", "Judged@10")])
def test_measure_names_are_matched_whatever_their_case(conformance_dir, capsys, typed, shown):
    code, out, err = metrics(capsys, "-m", typed, conformance_dir / "qrels.test", conformance_dir / "results.test")
    assert code == 0, err
    assert out.split("\t")[0].strip() == shown


@pytest.mark.parametrize("typed, suggestion", [("MRR@10", "RR@10"), ("ndcg@ten", "nDCG@10"), ("recal@100", "R@100"),
                                               ("mapp", "map"), ("judge@10", "Judged@10")])
def test_an_unknown_measure_says_which_was_meant(conformance_dir, capsys, typed, suggestion):
    code, _, err = metrics(capsys, "-m", typed, conformance_dir / "qrels.test", conformance_dir / "results.test")
    assert code == 2
    assert f"unknown measure {typed!r} (did you mean {suggestion}?)" in err
