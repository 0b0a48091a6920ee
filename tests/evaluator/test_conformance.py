"""`irforge metrics` against trec_eval's own test fixtures (expected outputs of trec_eval 9.0.8).

Every numeric value must equal trec_eval's within 1e-4, for every measure pytrec_eval supports.
`relstring` is the one line not compared: it is a string pytrec_eval does not produce.
"""

from __future__ import annotations

import pytest

from irforge.cli.main import main

TOLERANCE = 1e-4
NOT_PRODUCED = ("relstring",)  # relstring, relstring_20, ...

CASES = {
    "default set (out.test)": (["--trec-eval"], "qrels.test", "results.test", "out.test"),
    "all_trec (out.test.a)": (["-m", "all_trec"], "qrels.test", "results.test", "out.test.a"),
    "all_trec per query (out.test.aq)": (["-m", "all_trec", "-q"], "qrels.test", "results.test", "out.test.aq"),
    "-c on a truncated run (out.test.aqc)": (["-m", "all_trec", "-q", "-c"], "qrels.test", "results.trunc", "out.test.aqc"),
    "-c -M100 (out.test.aqcM)": (["-m", "all_trec", "-q", "-c", "-M100"], "qrels.test", "results.trunc", "out.test.aqcM"),
    "-l2 graded (out.test.aql)": (["-m", "all_trec", "-mrelstring.20", "-q", "-l2"], "qrels.rel_level", "results.test", "out.test.aql"),
}
# out.test.meas_params, restricted to the parameter forms pytrec_eval parses correctly; the
# others are refused with a clear error (test_parameter_forms_pytrec_eval_mishandles_are_refused).
MEASURE_PARAMETERS = ["-q", "-m", "P.5,7,3", "-m", "recall.20,2000", "-m", "Rprec_mult.5.0,0.2,0.35",
                      "-mndcg_cut.10,20,23.4", "-msuccess.2,5,20"]
REFUSED_PARAMETERS = ["iprec_at_recall..10,.20,.25,.75,.50", "utility.2,-1,0,0", "11pt_avg..25,.5,.75", "ndcg.1=3,2=9,4=4.5"]


def parse(text: str) -> dict[tuple[str, str], str]:
    lines = {}
    for line in text.splitlines():
        measure, query_id, value = line.split("\t")
        lines[measure.strip(), query_id] = value.strip()
    return lines


def run_metrics(capsys, conformance_dir, args, qrels, run) -> str:
    assert main(["metrics", *args, str(conformance_dir / qrels), str(conformance_dir / run)]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("case", list(CASES))
def test_values_equal_trec_eval_9(case, capsys, conformance_dir):
    args, qrels, run, expected_file = CASES[case]
    expected = parse((conformance_dir / "v9.0.8" / expected_file).read_text())
    ours = parse(run_metrics(capsys, conformance_dir, args, qrels, run))

    compared = 0
    for key, value in expected.items():
        if key[0].startswith(NOT_PRODUCED):
            continue
        assert key in ours, f"{case}: missing line {key}"
        if key[0] == "runid":
            assert ours[key] == value
        else:
            assert float(ours[key]) == pytest.approx(float(value), abs=TOLERANCE), f"{case}: {key}"
        compared += 1
    assert compared == sum(1 for k in expected if not k[0].startswith(NOT_PRODUCED))

    # Lines trec_eval 9.0.8 does not print: with -c, the qrels query missing from the run (302).
    # trec_eval 10.0 prints them; they must match 10.0's values (all zero but num_rel).
    extra = set(ours) - set(expected)
    if "-c" in args:
        assert extra and {query_id for _, query_id in extra} == {"302"}
        newer = parse((conformance_dir / expected_file).read_text())
        for key in extra:
            assert float(ours[key]) == pytest.approx(float(newer[key]), abs=TOLERANCE), key
    else:
        assert not extra, f"{case}: lines trec_eval does not print: {sorted(extra)[:5]}"


def test_trec_eval_set_output_is_byte_identical_to_trec_eval(capsys, conformance_dir):
    ours = run_metrics(capsys, conformance_dir, ["--trec-eval"], "qrels.test", "results.test")
    assert ours == (conformance_dir / "v9.0.8" / "out.test").read_text()


def test_ir_measures_names_agree_with_trec_eval_names(capsys, conformance_dir):
    """nDCG@10 / P@10 / R@100 / AP@100 are the trec_eval measures ndcg_cut_10 / P_10 / recall_100 / map_cut_100."""
    expected = parse((conformance_dir / "v9.0.8" / "out.test.aq").read_text())
    ours = parse(run_metrics(capsys, conformance_dir, ["-q", "-m", "nDCG@10", "-m", "P@10", "-m", "R@100", "-m", "AP@100"],
                             "qrels.test", "results.test"))
    for ir_name, trec_name in [("nDCG@10", "ndcg_cut_10"), ("P@10", "P_10"), ("R@100", "recall_100"), ("AP@100", "map_cut_100")]:
        for query_id in ("301", "302", "303", "all"):
            assert float(ours[ir_name, query_id]) == pytest.approx(float(expected[trec_name, query_id]), abs=TOLERANCE)


def test_rr_at_k_ignores_relevant_documents_below_k(capsys, conformance_dir):
    """RR@k truncates the ranking by the tie rule before trec_eval's recip_rank."""
    expected = parse((conformance_dir / "v9.0.8" / "out.test.aq").read_text())
    ours = parse(run_metrics(capsys, conformance_dir, ["-q", "-m", "RR@1000", "-m", "RR@1"], "qrels.test", "results.test"))
    for query_id in ("301", "302", "303"):
        assert float(ours["RR@1000", query_id]) == pytest.approx(float(expected["recip_rank", query_id]), abs=TOLERANCE)
        success_1 = float(expected["success_1", query_id])
        assert float(ours["RR@1", query_id]) == pytest.approx(success_1, abs=TOLERANCE)


def test_measure_parameters_equal_trec_eval_9(capsys, conformance_dir):
    expected = parse((conformance_dir / "v9.0.8" / "out.test.meas_params").read_text())
    ours = parse(run_metrics(capsys, conformance_dir, MEASURE_PARAMETERS, "qrels.test", "results.test"))
    wanted = {k: v for k, v in expected.items() if not k[0].startswith(("iprec", "utility", "11pt", "ndcg_1"))}
    assert set(ours) == set(wanted)
    for key, value in wanted.items():
        assert float(ours[key]) == pytest.approx(float(value), abs=TOLERANCE), key


@pytest.mark.parametrize("measure", REFUSED_PARAMETERS)
def test_parameter_forms_pytrec_eval_mishandles_are_refused(measure, capsys, conformance_dir):
    code = main(["metrics", "-m", measure, str(conformance_dir / "qrels.test"), str(conformance_dir / "results.test")])
    assert code == 2
    assert measure in capsys.readouterr().err
