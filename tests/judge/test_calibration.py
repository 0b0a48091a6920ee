"""Calibration: Cohen's kappa against hand-computed values, threshold fitting, stratified sampling,
and `irforge judge-calibrate` for real on SciFact (all-MiniLM-L6-v2, BM25 negatives)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from irforge.cli.main import main
from irforge.judge.backends.embedded import EmbeddedJudge, Thresholds
from irforge.judge.calibration import (
    CalibrationError, LabelledPair, agreement, cohen_kappa, confusion_matrix, fit_thresholds, human_to_judge_scale,
    labelled_strata, split_by_query, stratified_sample,
)

# --- kappa, by hand ------------------------------------------------------------------------------


def test_kappa_two_categories_by_hand():
    # po = (20 + 15) / 50 = 0.7; row sums 25, 25; column sums 30, 20; pe = (25*30 + 25*20) / 2500 = 0.5
    # kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4
    assert cohen_kappa([[20, 5], [10, 15]]) == pytest.approx(0.4)


def test_kappa_three_categories_by_hand():
    matrix = [[10, 2, 0],
              [3, 8, 1],
              [0, 2, 4]]
    # n = 30; po = 22/30; rows 12, 12, 6; columns 13, 12, 5; pe = (156 + 144 + 30) / 900 = 330/900
    po, pe = 22 / 30, 330 / 900
    assert cohen_kappa(matrix) == pytest.approx((po - pe) / (1 - pe))
    # quadratic weights w = ((i-j)/2)^2: observed disagreement = (2*.25 + 3*.25 + 1*.25 + 2*.25) / 30 = 2/30;
    # expected = sum w_ij r_i c_j / n^2 = (.25*(12*12 + 12*13 + 12*5 + 6*12) + 1*(12*5 + 6*13)) / 900 = 246/900
    assert cohen_kappa(matrix, "quadratic") == pytest.approx(1 - (2 / 30) / (246 / 900))


def test_kappa_edges():
    assert cohen_kappa([[5, 0], [0, 5]]) == pytest.approx(1.0)
    assert cohen_kappa([[0, 5], [5, 0]]) == pytest.approx(-1.0)
    assert cohen_kappa([[7, 0], [0, 0]]) is None           # both raters said one category: undefined, not 1 or 0
    assert cohen_kappa([[0, 0], [0, 0]]) is None
    with pytest.raises(ValueError):
        cohen_kappa([[1, 2, 3]])


def test_agreement_binary_and_graded_by_hand():
    human = [1, 1, 1, 0, 0, 0]
    judge = [3, 2, 1, 0, 1, 2]
    result = agreement(human, judge, [0, 1], relevant_from=2)
    # binary: human 1,1,1,0,0,0 vs judge>=2 1,1,0,0,0,1 -> [[2,1],[1,2]]: po 4/6, pe 0.5, kappa 1/3
    assert result["confusion_binary"] == [[2, 1], [1, 2]]
    assert result["accuracy"] == pytest.approx(4 / 6)
    assert result["kappa_binary"] == pytest.approx(1 / 3)
    # graded on 0-3 with SciFact's 1 -> 3: only (3,3) and (0,0) agree
    assert result["accuracy_graded"] == pytest.approx(2 / 6)
    assert result["confusion"] == [[1, 1, 1, 0], [0, 1, 1, 1]]   # human levels x judge labels 0-3


def test_human_levels_map_onto_the_judge_scale():
    assert human_to_judge_scale([0, 1], 2) == {0: 0, 1: 3}
    assert human_to_judge_scale([0, 1, 2], 2) == {0: 0, 1: 2, 2: 3}
    assert human_to_judge_scale([0, 1, 2], 1) == {0: 0, 1: 1, 2: 3}


def test_confusion_matrix_counts():
    assert confusion_matrix([0, 1, 1], [3, 3, 0], (0, 1), (0, 1, 2, 3)).tolist() == [[0, 0, 0, 1], [1, 0, 0, 1]]


# --- fitting -------------------------------------------------------------------------------------


def test_fitted_boundary_separates_the_classes_and_cuts_ascend():
    scores = [0.1, 0.15, 0.2, 0.25, 0.3, 0.55, 0.6, 0.7, 0.8]
    relevant = [False] * 5 + [True] * 4
    t1, t2, t3 = fit_thresholds(scores, relevant, relevant_from=2)
    assert 0.3 < t2 <= 0.55 and t1 < t2 < t3
    assert t1 == pytest.approx(np.median([0.1, 0.15, 0.2, 0.25, 0.3]))
    assert t3 == pytest.approx(np.median([0.55, 0.6, 0.7, 0.8]))
    labels = [Thresholds((t1, t2, t3)).label(s) for s in scores]
    assert [label >= 2 for label in labels] == relevant
    assert fit_thresholds(scores, relevant) == (t1, t2, t3)     # deterministic


def test_fitting_maximises_kappa_when_classes_overlap():
    scores = [0.1, 0.2, 0.3, 0.4, 0.35, 0.5, 0.6, 0.7]
    relevant = [False, False, False, False, True, True, True, True]
    _, t2, _ = fit_thresholds(scores, relevant)
    best = max(cohen_kappa(confusion_matrix(relevant, [s >= c for s in scores], (False, True), (False, True)))
               for c in np.linspace(0, 1, 1001))
    achieved = cohen_kappa(confusion_matrix(relevant, [s >= t2 for s in scores], (False, True), (False, True)))
    assert achieved == pytest.approx(best)


def test_fitting_needs_both_classes():
    with pytest.raises(CalibrationError, match="both relevant and non-relevant"):
        fit_thresholds([0.1, 0.2, 0.3], [True, True, True])


# --- sampling ------------------------------------------------------------------------------------


def _strata():
    return {0: [LabelledPair(f"q{i % 7}", f"n{i}", 0, "bm25-unlabelled") for i in range(50)],
            1: [LabelledPair(f"q{i % 7}", f"p{i}", 1, "qrels") for i in range(30)],
            2: [LabelledPair(f"q{i % 7}", f"h{i}", 2, "qrels") for i in range(4)]}


def test_stratified_sample_shares_and_shortfall():
    sample = stratified_sample(_strata(), 30, seed=1)
    by_level = {level: sum(p.human == level for p in sample) for level in (0, 1, 2)}
    assert by_level == {0: 13, 1: 13, 2: 4}      # level 2 has only 4: its shortfall goes to the others
    assert sample == stratified_sample(_strata(), 30, seed=1)
    assert sample != stratified_sample(_strata(), 30, seed=2)
    assert len(stratified_sample(_strata(), 1000, seed=1)) == 84     # never more than exists


def test_strata_take_judged_zeros_and_unlabelled_bm25_documents():
    qrels = {"q1": {"a": 2, "b": 0, "c": 1}, "q2": {"d": 1}}
    run = {"q1": {"a": 3.0, "b": 2.0, "x": 1.0, "q1": 9.0}, "q2": {"y": 1.0, "d": 0.5}}
    strata = labelled_strata(qrels, run)
    assert {(p.query_id, p.doc_id, p.source) for p in strata[0]} == {
        ("q1", "b", "qrels"), ("q1", "x", "bm25-unlabelled"), ("q2", "y", "bm25-unlabelled")}   # never the query's own id
    assert {(p.query_id, p.doc_id) for p in strata[1]} == {("q1", "c"), ("q2", "d")}
    assert [(p.doc_id, p.human) for p in strata[2]] == [("a", 2)]
    assert [p.doc_id for p in labelled_strata(qrels, None)[0]] == ["b"]


def test_split_by_query_never_shares_a_query():
    fit, held = split_by_query(stratified_sample(_strata(), 40, seed=3), seed=3)
    assert fit and held and not {p.query_id for p in fit} & {p.query_id for p in held}


# --- judge-calibrate, for real -------------------------------------------------------------------


@pytest.fixture()
def judge_env(monkeypatch, tmp_path, tmp_path_factory):
    # One embedding cache for the session's judge tests (documents encoded once), private thresholds and store.
    monkeypatch.setenv("IRFORGE_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "judge-embedding-cache"))
    monkeypatch.setenv("IRFORGE_JUDGE_THRESHOLDS", str(tmp_path / "default-thresholds.json"))
    monkeypatch.setenv("IRFORGE_JUDGE_STORE", str(tmp_path / "judgements.sqlite3"))
    return tmp_path


def test_judge_calibrate_on_scifact(scifact_subset, judge_env, tmp_path_factory, capsys):
    out = judge_env / "calibration"
    index_dir = tmp_path_factory.getbasetemp() / "judge-bm25-indexes"
    argv = ["judge-calibrate", "--dataset", str(scifact_subset), "--sample", "40", "--seed", "5", "--out", str(out),
            "--index-dir", str(index_dir)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    report = json.loads((out / "calibration.json").read_text())
    for key in ("accuracy", "kappa_binary", "kappa_graded", "confusion", "held_out", "fit", "thresholds", "judge",
                "relevant_from", "sample", "human_to_judge_scale"):
        assert key in report, key
    sample = report["sample"]
    assert sample["drawn"] == 40 and sample["by_level"] == {"0": 20, "1": 20}
    assert sample["by_source"] == {"qrels": 20, "bm25-unlabelled": 20}       # SciFact's qrels hold positives only
    assert sample["fit_pairs"] + sample["held_out_pairs"] == 40
    held = report["held_out"]
    assert np.sum(held["confusion"]) == held["pairs"] == sample["held_out_pairs"]
    assert len(held["confusion"]) == 2 and len(held["confusion"][0]) == 4
    assert report["kappa_binary"] == held["kappa_binary"]
    # The real encoder must agree with human labels well beyond chance on held-out queries.
    assert report["kappa_binary"] > 0.3 and report["accuracy"] > 0.65

    # Saved to OUT only, and said so: the user-wide default changes only when asked for.
    saved = Thresholds.from_file(out / "embedded-thresholds.json")
    assert list(saved.cuts) == report["thresholds"]["thresholds"]
    assert not (judge_env / "default-thresholds.json").exists() and "default_thresholds" not in report["files"]
    assert f"wrote {out / 'embedded-thresholds.json'}" in printed
    assert (f"not saved as the default ({judge_env / 'default-thresholds.json'}): pass --save-default, "
            f"or --thresholds {out / 'embedded-thresholds.json'} to use them") in printed
    assert EmbeddedJudge.load().thresholds.cuts != saved.cuts      # the built-ins still apply

    # Again with the same seed and --save-default: the same sample, the same fit, every pair from
    # the store; now saved to the default location too, which the embedded judge then loads.
    again_out = judge_env / "again"
    assert main(argv[:-4] + ["--out", str(again_out), "--index-dir", str(index_dir), "--save-default"]) == 0
    printed = capsys.readouterr().out
    again = json.loads((again_out / "calibration.json").read_text())
    assert again["thresholds"]["thresholds"] == report["thresholds"]["thresholds"]
    assert again["held_out"] == report["held_out"]
    assert again["stats"]["from_store"] == 40
    assert again["files"]["default_thresholds"] == str(judge_env / "default-thresholds.json")
    assert f"wrote {judge_env / 'default-thresholds.json'} (the default: the embedded judge now uses them)" in printed
    assert Thresholds.from_file(judge_env / "default-thresholds.json").cuts == saved.cuts
    judge = EmbeddedJudge.load()
    assert judge.thresholds.cuts == saved.cuts
    assert judge.identity()["template_sha256"] == report["judge"]["template_sha256"] == saved.sha256


def test_judge_calibrate_refuses_a_bad_sample(scifact_subset, judge_env, capsys):
    assert main(["judge-calibrate", "--dataset", str(scifact_subset), "--sample", "0", "--out", str(judge_env / "x")]) == 2
    assert "--sample" in capsys.readouterr().err
    assert not (judge_env / "x").exists()


def test_judge_calibrate_use_case_refuses_bad_options_before_judging(scifact_subset, judge_env, llm_spec_file):
    from irforge.app.calibration import judge_calibrate
    from irforge.app.errors import UsageError
    from irforge.app.holes import JudgeChoice

    with pytest.raises(UsageError, match="--sample must be a whole number of at least 4 pairs, got 2"):
        judge_calibrate(scifact_subset, sample=2, out=judge_env / "x")
    with pytest.raises(UsageError, match="--cross-encoder applies to the embedded judge only"):
        judge_calibrate(scifact_subset, sample=8, out=judge_env / "x", cross_encoder="some-model",
                        choice=JudgeChoice(judge=str(llm_spec_file())))
    with pytest.raises(UsageError, match="neither 'embedded' nor an existing judge spec file"):
        judge_calibrate(scifact_subset, sample=8, out=judge_env / "x", choice=JudgeChoice(judge=str(judge_env / "no.yaml")))
    assert not (judge_env / "x").exists()


def test_judge_calibrate_refuses_save_and_no_save_together(scifact_subset, judge_env, capsys):
    assert main(["judge-calibrate", "--dataset", str(scifact_subset), "--sample", "4", "--out", str(judge_env / "x"),
                 "--save-default", "--no-save-default"]) == 2
    assert "argument --no-save-default: not allowed with argument --save-default" in capsys.readouterr().err
    assert not (judge_env / "x").exists()


def test_judge_calibrate_an_llm_judge_fits_nothing(scifact_subset, judge_env, scripted_chat, llm_spec_file,
                                                  tmp_path_factory):
    # A judge that labels a pair 3 when the prompt holds a query and the title of one of its human positives.
    qrels = [line.split("\t")[:2] for line in (scifact_subset / "qrels" / "test.tsv").read_text().splitlines()[1:]]
    titles = {}
    for line in (scifact_subset / "corpus.jsonl").read_text().splitlines():
        document = json.loads(line)
        titles[document["_id"]] = document["title"]
    queries = {}
    for line in (scifact_subset / "queries.jsonl").read_text().splitlines():
        query = json.loads(line)
        queries[query["_id"]] = query["text"]
    positives = [(queries[q], titles[d]) for q, d in qrels]
    scripted_chat.responder = lambda prompt: "3" if any(q in prompt and t in prompt for q, t in positives) else "0"
    out = judge_env / "llm"
    assert main(["judge-calibrate", "--dataset", str(scifact_subset), "--sample", "12", "--out", str(out),
                 "--judge", str(llm_spec_file()), "--index-dir", str(tmp_path_factory.getbasetemp() / "judge-bm25-indexes")]) == 0
    report = json.loads((out / "calibration.json").read_text())
    assert report["fit"] is None and report["thresholds"] is None and report["sample"]["held_out_pairs"] == 12
    assert report["judge"]["backend"] == "openai-chat" and report["stats"]["calls"] == 12
    assert report["accuracy"] == 1.0 and report["kappa_binary"] == pytest.approx(1.0)
    assert report["kappa_graded"] == pytest.approx(1.0)                 # SciFact's 1 sits on the judge's 3
    assert not (out / "embedded-thresholds.json").exists() and not (judge_env / "default-thresholds.json").exists()
