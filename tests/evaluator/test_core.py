"""Evaluator: hand-checkable qrels and runs, and agreement with pytrec_eval called directly."""

import math
import random

import pytest
import pytrec_eval

from irforge.evaluator import EvaluationOptions, Evaluator
from irforge.evaluator.core import EvaluationError


def evaluate(qrels, run, measures, **options):
    return Evaluator().evaluate(qrels, run, measures, EvaluationOptions(**options))


# (a) ties: score descending, then doc id descending -------------------------------------------

def test_constant_scorer_is_not_perfect():
    # Equal scores: "d2" > "d1", so d2 is ranked first and the relevant d1 second.
    result = evaluate({"q1": {"d1": 1}}, {"q1": {"d1": 0.0, "d2": 0.0}}, ["RR@10", "RR@1"])
    assert result.aggregate == {"RR@10": 0.5, "RR@1": 0.0}  # RR@1 truncates to d2 alone


def test_tie_swapped_ids():
    result = evaluate({"q1": {"d2": 1}}, {"q1": {"d1": 0.0, "d2": 0.0}}, ["RR@10"])
    assert result.aggregate["RR@10"] == 1.0


def test_tie_compares_ids_as_strings():
    # "d9" > "d10" as strings: the relevant d10 comes second.
    result = evaluate({"q1": {"d10": 1}}, {"q1": {"d10": 1.0, "d9": 1.0}}, ["RR@10", "Judged@1"])
    assert result.aggregate == {"RR@10": 0.5, "Judged@1": 0.0}


# (b) identical ids ---------------------------------------------------------------------------

QRELS_B = {"q1": {"d1": 1}}
RUN_B = {"q1": {"q1": 2.0, "d1": 1.0}}


def test_identical_ids_dropped_by_default():
    result = evaluate(QRELS_B, RUN_B, ["RR@10", "num_ret"])
    assert result.per_query["q1"] == {"RR@10": 1.0, "num_ret": 1.0}
    assert result.identical_ids_dropped == 1
    assert result.options.drop_identical_ids is True
    assert RUN_B == {"q1": {"q1": 2.0, "d1": 1.0}}  # the caller's run is untouched


def test_identical_ids_kept_when_off():
    result = evaluate(QRELS_B, RUN_B, ["RR@10", "num_ret"], drop_identical_ids=False)
    assert result.per_query["q1"] == {"RR@10": 0.5, "num_ret": 2.0}
    assert result.identical_ids_dropped == 0
    assert result.options.as_dict()["drop_identical_ids"] is False


# (c) complete ------------------------------------------------------------------------------

QRELS_C = {"q1": {"a": 1}, "q2": {"b": 1}}
RUN_C = {"q1": {"a": 1.0}, "q9": {"b": 1.0}}  # q2 unanswered; q9 has no judgements


def test_incomplete_run_ignores_missing_query():
    result = evaluate(QRELS_C, RUN_C, ["nDCG@10", "P@10"])
    assert result.queries_evaluated == 1
    assert set(result.per_query) == {"q1"}
    assert result.aggregate == {"nDCG@10": 1.0, "P@10": 0.1}


def test_complete_scores_missing_query_zero():
    result = evaluate(QRELS_C, RUN_C, ["nDCG@10", "P@10", "Judged@10"], complete=True)
    assert result.queries_evaluated == 2
    assert result.per_query["q2"] == {"nDCG@10": 0.0, "P@10": 0.0, "Judged@10": 0.0}
    assert result.aggregate == {"nDCG@10": 0.5, "P@10": 0.05, "Judged@10": 0.5}


# (d) max_docs_per_query --------------------------------------------------------------------

@pytest.mark.parametrize("max_docs, num_ret, recall", [(0, 3, 1.0), (1, 1, 0.0), (2, 2, 0.0), (3, 3, 1.0)])
def test_max_docs_truncates_by_tie_rule(max_docs, num_ret, recall):
    # Ranking: c (2.0), then b before a (tie, "b" > "a"). Only a is relevant.
    run = {"q1": {"a": 1.0, "b": 1.0, "c": 2.0}}
    result = evaluate({"q1": {"a": 1}}, run, ["R@100", "num_ret"], max_docs_per_query=max_docs)
    assert result.per_query["q1"] == {"R@100": recall, "num_ret": num_ret}


# (e) Judged@k ------------------------------------------------------------------------------

def test_judged_at_k():
    qrels = {"q1": {"a": 1, "b": 0}, "q2": {"a": 1}, "q3": {"a": 1}}
    run = {
        "q1": {"a": 4.0, "x": 3.0, "b": 2.0, "y": 1.0},  # judged: a, b (b's label 0 still counts)
        "q2": {"a": 1.0, "x": 0.5, "y": 0.2},            # only 3 retrieved: divided by 3
    }                                                     # q3: empty ranking (complete) -> 0
    result = evaluate(qrels, run, ["Judged@2", "Judged@3", "Judged@10"], complete=True)
    assert result.per_query["q1"] == {"Judged@2": 1 / 2, "Judged@3": 2 / 3, "Judged@10": 2 / 4}
    assert result.per_query["q2"] == {"Judged@2": 1 / 2, "Judged@3": 1 / 3, "Judged@10": 1 / 3}
    assert result.per_query["q3"] == {"Judged@2": 0.0, "Judged@3": 0.0, "Judged@10": 0.0}
    assert result.aggregate["Judged@10"] == pytest.approx((2 / 4 + 1 / 3 + 0) / 3, abs=1e-15)


# (f) relevance level -----------------------------------------------------------------------

QRELS_F = {"q1": {"a": 2, "b": 1, "c": 0}}
RUN_F = {"q1": {"a": 5.0, "b": 4.0, "c": 3.0, "d": 2.0, "e": 1.0}}


def test_relevance_level_changes_precision():
    assert evaluate(QRELS_F, RUN_F, ["P@5"]).aggregate["P@5"] == 2 / 5
    assert evaluate(QRELS_F, RUN_F, ["P@5"], relevance_level=2).aggregate["P@5"] == 1 / 5


def test_rel_parameter_beside_default_level():
    result = evaluate(QRELS_F, RUN_F, ["P@5", "P(rel=2)@5"])
    assert result.aggregate == {"P@5": 2 / 5, "P(rel=2)@5": 1 / 5}


# (g) nDCG ----------------------------------------------------------------------------------

def test_ndcg_graded_by_hand():
    # DCG@k = sum_{i<=k} rel_i / log2(i + 1), gains = labels (trec_eval's ndcg_cut).
    # Ranking c(0), a(2), b(1):   DCG  = 0/log2(2) + 2/log2(3) + 1/log2(4)
    # Ideal from the qrels 2,1,1: IDCG = 2/log2(2) + 1/log2(3) + 1/log2(4)   (d is judged, not retrieved)
    qrels = {"q1": {"a": 2, "b": 1, "c": 0, "d": 1}}
    run = {"q1": {"c": 3.0, "a": 2.0, "b": 1.0}}
    dcg = 0 / math.log2(2) + 2 / math.log2(3) + 1 / math.log2(4)
    idcg = 2 / math.log2(2) + 1 / math.log2(3) + 1 / math.log2(4)
    result = evaluate(qrels, run, ["nDCG@10"])
    assert result.aggregate["nDCG@10"] == pytest.approx(dcg / idcg, abs=1e-12)
    assert round(result.aggregate["nDCG@10"], 4) == 0.5627  # (1.2619 + 0.5) / (2 + 0.6309 + 0.5)


# (h) RR@k ----------------------------------------------------------------------------------

def test_rr_ignores_relevant_below_k():
    run = {"q1": {"x": 4.0, "y": 3.0, "z": 2.0, "r": 1.0}}  # the relevant r is 4th
    result = evaluate({"q1": {"r": 1}}, run, ["RR@3", "RR@4", "RR@10", "recip_rank"])
    assert result.aggregate == {"RR@3": 0.0, "RR@4": 0.25, "RR@10": 0.25, "recip_rank": 0.25}


# (i) nothing in common ---------------------------------------------------------------------

def test_no_common_query_raises():
    with pytest.raises(EvaluationError, match="no query of the run has judgements") as error:
        evaluate({"q1": {"a": 1}}, {"q2": {"a": 1.0}}, ["nDCG@10"])
    # What happened, so a mismatch of id styles shows at a glance.
    assert "(run: 1 query, e.g. 'q2'; qrels: 1 query, e.g. 'q1')" in str(error.value)
    with pytest.raises(EvaluationError) as error:
        evaluate({"Q1": {"a": 1}}, {f"q{n}": {"a": 1.0} for n in range(5)}, ["nDCG@10"])
    assert "(run: 5 queries, e.g. 'q0', 'q1', 'q2', ...; qrels: 1 query, e.g. 'Q1')" in str(error.value)


def test_empty_qrels_raises():
    with pytest.raises(EvaluationError, match="the qrels are empty"):
        evaluate({}, {"q1": {"a": 1.0}}, ["nDCG@10"])


# (j, k) agreement with pytrec_eval --------------------------------------------------------

def random_qrels_and_run(seed=7, queries=50, docs=100):
    rng = random.Random(seed)
    run, qrels = {}, {}
    for q in range(queries):
        # Scores on a coarse grid of 21 values: ~5 documents share each score (ties on purpose).
        run[f"q{q}"] = {f"d{d}": rng.randint(0, 20) / 4 for d in range(docs)}
        judged = rng.sample(range(docs + 50), 20)  # some judged documents were never retrieved
        qrels[f"q{q}"] = {f"d{d}": rng.choice([0, 0, 1, 1, 2, 3]) for d in judged}
    return qrels, run


def test_random_run_agrees_with_pytrec_eval():
    qrels, run = random_qrels_and_run()
    assert sum(len(set(s.values())) < len(s) for s in run.values()) == 50  # every query has ties
    result = evaluate(qrels, run, ["nDCG@10", "R@100", "P@10"])
    direct = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.100", "P.10"}).evaluate(run)
    assert result.queries_evaluated == 50 and result.identical_ids_dropped == 0
    for name, key in [("nDCG@10", "ndcg_cut_10"), ("R@100", "recall_100"), ("P@10", "P_10")]:
        for query_id in run:
            assert result.per_query[query_id][name] == pytest.approx(direct[query_id][key], abs=1e-12)
        mean = sum(direct[q][key] for q in direct) / len(direct)
        assert result.aggregate[name] == pytest.approx(mean, abs=1e-12)
    assert 0.0 < result.aggregate["nDCG@10"] < 1.0  # not a degenerate example


def test_ap_at_100_is_map_cut_100():
    qrels, run = random_qrels_and_run(seed=11)
    result = evaluate(qrels, run, ["AP@100"])
    direct = pytrec_eval.RelevanceEvaluator(qrels, {"map_cut.100"}).evaluate(run)
    for query_id in run:
        assert result.per_query[query_id]["AP@100"] == pytest.approx(direct[query_id]["map_cut_100"], abs=1e-12)
    assert result.aggregate["AP@100"] > 0.0
