"""Instruction-following metrics against values worked out by hand (the arithmetic sits beside each)."""

from __future__ import annotations

import math

import pytest

from irforge.instructions.metrics import (
    FOLLOWIR,
    INFOSEARCH,
    P_MRR,
    P_MRR_INFOSEARCH,
    SICR,
    WISE,
    Placement,
    base_query_id,
    changed_documents,
    gold_documents,
    instruction_metrics,
    mean_of,
    p_mrr_document,
    p_mrr_query,
    placement,
    robustness_at_k,
    sicr_document,
    sicr_query,
    sicr_query_reference,
    wise_document,
    wise_query,
)

# ---------------------------------------------------------------------------------------------
# placement


def test_placement_follows_score_then_doc_id_descending():
    scores = {"a": 0.5, "b": 0.9, "c": 0.5}
    assert placement(scores, "b") == Placement(1, 0.9)
    assert placement(scores, "c") == Placement(2, 0.5)  # tie with "a": "c" > "a", so "c" first
    assert placement(scores, "a") == Placement(3, 0.5)


def test_a_missing_document_ranks_just_below_the_list_with_score_zero():
    assert placement({"a": 1.0, "b": 0.5}, "z") == Placement(3, 0.0)  # len 2 + 1
    assert placement({}, "z") == Placement(1, 0.0)  # empty list: len 0 + 1


# ---------------------------------------------------------------------------------------------
# document sets

OG_QRELS = {"a": 0, "b": 2, "c": 1, "d": 1, "g": 1}
CHANGED_QRELS = {"a": 1, "b": 1, "c": 0, "g": 1, "e": 1}  # d missing = 0; e judged only here


def test_gold_documents_are_relevant_in_og_and_changed():
    assert gold_documents(OG_QRELS, CHANGED_QRELS) == ["b", "g"]  # b 2->1 still relevant, g 1->1


def test_followir_changed_documents_are_every_judged_label_that_moves():
    # a 0->1, b 2->1, c 1->0, d 1->(missing)0; e was not judged in og, g did not move
    assert changed_documents(OG_QRELS, CHANGED_QRELS, FOLLOWIR) == ["a", "b", "c", "d"]


def test_infosearch_changed_documents_are_relevant_then_not():
    # a 0->1 and b 2->1 differ in label but do not lose relevance
    assert changed_documents(OG_QRELS, CHANGED_QRELS, INFOSEARCH) == ["c", "d"]


def test_unknown_changed_definition_is_refused():
    with pytest.raises(ValueError, match="definition"):
        changed_documents(OG_QRELS, CHANGED_QRELS, "mteb")


# ---------------------------------------------------------------------------------------------
# p-MRR


def test_p_mrr_document_up_down_unchanged():
    assert p_mrr_document(4, 2) == pytest.approx(-0.5)  # moved up: 2/4 - 1
    assert p_mrr_document(2, 4) == pytest.approx(0.5)  # moved down: 1 - 2/4
    assert p_mrr_document(3, 3) == pytest.approx(0.0)  # stayed: 1 - 3/3


def test_p_mrr_query_means_over_documents_and_reads_missing_as_len_plus_one():
    ori = {"x": 0.9, "y": 0.8, "z": 0.1}  # x 1, y 2, z 3
    ins = {"y": 0.9, "x": 0.5}  # y 1, x 2, z missing -> 3
    # x: 1 - 1/2 = 0.5; y: 1/2 - 1 = -0.5; z: 1 - 3/3 = 0 -> mean 0
    assert p_mrr_query(ori, ins, ["x", "y", "z"]) == pytest.approx(0.0)
    assert p_mrr_query(ori, ins, ["x"]) == pytest.approx(0.5)
    assert p_mrr_query(ori, ins, []) is None


def test_p_mrr_definitions_differ_on_documents_that_stay_relevant_or_become_relevant():
    ori = {"a": 0.9, "b": 0.8, "c": 0.7, "d": 0.6}  # a 1, b 2, c 3, d 4
    ins = {"d": 0.9, "c": 0.8, "b": 0.7, "a": 0.6}  # d 1, c 2, b 3, a 4
    followir = changed_documents(OG_QRELS, CHANGED_QRELS, FOLLOWIR)  # a b c d
    infosearch = changed_documents(OG_QRELS, CHANGED_QRELS, INFOSEARCH)  # c d
    # a: 1 - 1/4 = 0.75; b: 1 - 2/3 = 1/3; c: 2/3 - 1 = -1/3; d: 1/4 - 1 = -0.75 -> mean 0
    assert p_mrr_query(ori, ins, followir) == pytest.approx(0.0)
    # c: -1/3; d: -0.75 -> mean (-1/3 - 3/4) / 2 = -13/24
    assert p_mrr_query(ori, ins, infosearch) == pytest.approx(-13 / 24)


# ---------------------------------------------------------------------------------------------
# WISE, one branch per test line (r_ori, r_ins, r_rev, n)


def test_wise_reward_one_at_the_top_when_ori_within_n():
    assert wise_document(3, 1, 5, n=3) == 1.0  # R_ori == N: still within the positives
    assert wise_document(1, 1, 2, n=1) == 1.0  # already first and stays first


def test_wise_reward_sqrt_formula():
    assert wise_document(4, 1, 5, n=3) == pytest.approx(1 - math.sqrt(3) / 20)  # R_ori = N+1: (1 - √3/20)/√1
    assert wise_document(5, 2, 9, n=1) == pytest.approx((1 - math.sqrt(3) / 20) / math.sqrt(2))  # ≈ 0.6459
    assert wise_document(20, 4, 21, n=1) == pytest.approx(0.4)  # R_ori == K: (1 - √16/20)/√4 = 0.8/2
    assert wise_document(4, 4, 5, n=1) == pytest.approx(0.5)  # R_ins == R_ori: (1 - √0/20)/√4


def test_wise_reward_token_beyond_k():
    assert wise_document(21, 4, 30, n=1) == 0.01  # R_ori = K+1
    assert wise_document(21, 1, 30, n=1) == 0.01  # even when it reaches rank 1, if R_ori > N
    assert wise_document(11, 4, 30, n=1, k=10) == 0.01  # K is a parameter


def test_wise_penalty_minus_one_when_both_modes_go_the_wrong_way():
    assert wise_document(5, 8, 2, n=1) == -1.0  # R_rev 2 < R_ori 5 < R_ins 8


def test_wise_penalty_when_the_instruction_pushes_it_down():
    assert wise_document(2, 8, 9, n=1) == pytest.approx(-0.75)  # (R_ori - R_ins)/R_ins = (2 - 8)/8
    assert wise_document(4, 4, 3, n=1) == pytest.approx(0.0)  # R_ins == R_ori, reversal up: (4 - 4)/4
    assert wise_document(3, 6, 3, n=1) == pytest.approx(-0.5)  # R_rev == R_ori: not -1, (3 - 6)/6


def test_wise_penalty_when_the_reversed_instruction_pulls_it_up():
    assert wise_document(8, 2, 6, n=1) == pytest.approx(-0.25)  # (R_rev - R_ori)/R_ori = (6 - 8)/8
    assert wise_document(4, 2, 4, n=1) == pytest.approx(0.0)  # R_rev == R_ori: (4 - 4)/4


def test_wise_query_means_over_gold_with_missing_documents():
    ori = {"g": 0.9, "h": 0.5}  # g 1, h 2
    ins = {"g": 0.9, "x": 0.95}  # x 1, g 2, h missing -> 3
    rev = {"g": 0.1, "h": 0.2, "x": 0.3}  # x 1, h 2, g 3
    # g (1, 2, 3): R_ori <= R_ins -> (1 - 2)/2 = -0.5; h (2, 3, 2): (2 - 3)/3 = -1/3; mean -5/12
    assert wise_query(ori, ins, rev, ["g", "h"], n=2) == pytest.approx(-5 / 12)
    assert wise_query(ori, ins, rev, [], n=2) is None


# ---------------------------------------------------------------------------------------------
# SICR


def test_sicr_complies_when_up_in_rank_and_score_and_down_when_reversed():
    ori = {"a": 0.6, "g": 0.5}  # g 2 (0.5)
    ins = {"a": 0.6, "g": 0.9}  # g 1 (0.9)
    rev = {"a": 0.6, "b": 0.4, "g": 0.2}  # g 3 (0.2)
    assert sicr_query(ori, ins, rev, ["g"]) == 1.0


def test_sicr_equal_scores_do_not_comply():
    ori = Placement(2, 0.5)
    assert not sicr_document(ori, Placement(1, 0.5), Placement(3, 0.2))  # S_ins == S_ori though rank rose
    assert not sicr_document(ori, Placement(1, 0.9), Placement(3, 0.5))  # S_rev == S_ori though rank fell
    assert not sicr_document(ori, Placement(2, 0.9), Placement(3, 0.2))  # R_ins == R_ori though score rose
    assert not sicr_document(ori, Placement(1, 0.9), Placement(2, 0.2))  # R_rev == R_ori though score fell


def test_sicr_score_ties_are_broken_by_doc_id_descending():
    ori = {"a": 0.7, "g": 0.6}  # g 2 (0.6)
    rev = {"a": 0.7, "b": 0.3, "g": 0.1}  # g 3 (0.1)
    # tied at 0.8 with "h": "h" > "g" so h ranks first and g stays at 2 = R_ori -> not compliant
    assert sicr_query(ori, {"g": 0.8, "h": 0.8}, rev, ["g"]) == 0.0
    # tied at 0.8 with "f": "g" > "f" so g ranks first -> compliant
    assert sicr_query(ori, {"g": 0.8, "f": 0.8}, rev, ["g"]) == 1.0


def test_sicr_rank_one_rule():
    top = Placement(1, 0.7)
    assert sicr_document(top, Placement(1, 0.7), Placement(2, 0.3))  # stays first, S_ins >= S_ori
    assert sicr_document(top, Placement(1, 0.8), Placement(5, 0.3))
    assert not sicr_document(top, Placement(1, 0.6), Placement(2, 0.3))  # lost score
    assert not sicr_document(top, Placement(2, 0.9), Placement(2, 0.3))  # fell under the instruction
    assert not sicr_document(top, Placement(1, 0.7), Placement(1, 0.3))  # still first when reversed
    assert not sicr_document(top, Placement(1, 0.7), Placement(2, 0.7))  # reversed score not lower


# ori ranks g1 2, g2 4; the instructed run lifts whichever is named, the reversed run drops both.
ORI = {"a": 0.9, "g1": 0.8, "b": 0.7, "g2": 0.6}
REV = {"a": 0.9, "b": 0.7, "c": 0.65, "g1": 0.1, "g2": 0.05}  # g1 4 (> 2), g2 5 (> 4)


def test_sicr_counts_every_gold_document_when_only_the_first_complies():
    ins = {"g1": 0.95, "a": 0.9, "b": 0.7, "g2": 0.6}  # g1 2 -> 1 complies; g2 4 -> 4 does not
    assert sicr_query(ORI, ins, REV, ["g1", "g2"]) == pytest.approx(0.5)  # 1 of 2
    assert sicr_query_reference(ORI, ins, REV, ["g1", "g2"]) == 0.0  # only the last (g2: 0) counts, / 2


def test_sicr_when_only_the_last_complies_both_agree():
    ins = {"g2": 0.95, "a": 0.9, "g1": 0.8, "b": 0.7}  # g1 2 -> 3 does not; g2 4 -> 1 complies
    assert sicr_query(ORI, ins, REV, ["g1", "g2"]) == pytest.approx(0.5)  # 1 of 2
    assert sicr_query_reference(ORI, ins, REV, ["g1", "g2"]) == pytest.approx(0.5)  # last (g2: 1) / 2


def test_sicr_without_gold_is_none():
    assert sicr_query(ORI, ORI, REV, []) is None
    assert sicr_query_reference(ORI, ORI, REV, []) is None


# ---------------------------------------------------------------------------------------------
# Robustness@k


def test_base_query_id_is_the_part_before_the_last_underscore():
    assert base_query_id("q1_0") == "q1"
    assert base_query_id("q_2_0") == "q_2"
    assert base_query_id("q3") == "q3"


def test_robustness_takes_the_worst_variant_per_core_query():
    ndcg = {"q1_0": 0.5, "q1_1": 0.3, "q_2_0": 0.9, "q_2_1": 0.95, "q3": 0.4}
    assert robustness_at_k(ndcg) == {"q1": 0.3, "q_2": 0.9, "q3": 0.4}
    assert robustness_at_k(ndcg, group_of=lambda q: q[:1]) == {"q": 0.3}


def test_mean_of():
    assert mean_of({"q1": 1.0, "q2": -0.5}) == pytest.approx(0.25)  # (1 - 0.5)/2
    assert mean_of({}) is None


# ---------------------------------------------------------------------------------------------
# instruction_metrics end to end

QRELS = {
    "og": {"q1": {"g": 1, "x": 1, "y": 0}, "q2": {"a": 1, "b": 1, "c": 0}},
    "changed": {"q1": {"g": 1, "x": 0, "y": 0}, "q2": {"a": 1, "b": 1, "c": 1}},
    "reversed": {"q1": {"g": 0, "x": 1}, "q2": {"a": 0, "b": 0}},
}
RUNS = {
    "og": {"q1": {"x": 0.9, "g": 0.8, "y": 0.1}, "q2": {"a": 0.5, "b": 0.4, "c": 0.3}},
    "changed": {"q1": {"g": 0.95, "y": 0.6, "x": 0.5}, "q2": {"c": 0.9, "a": 0.6}},  # q2: b missing -> 3
    "reversed": {"q1": {"x": 0.9, "y": 0.7, "g": 0.3}, "q2": {"b": 0.45, "a": 0.1}},
}
# q1: gold [g], changed [x] in both definitions, N = 2 (g, x)
#   g: R_ori 2 (0.8), R_ins 1 (0.95), R_rev 3 (0.3)  -> WISE 1 (R_ori <= N, R_ins 1); SICR complies
#   x: o 1, n 3 -> p-MRR 1 - 1/3 = 2/3
# q2: gold [a, b], FollowIR changed [c] (0->1), InfoSearch changed [] (nothing lost relevance), N = 2
#   a: (1, 2, 2) -> (1 - 2)/2 = -0.5; b: (2, 3 missing, 1) -> R_rev < R_ori < R_ins: -1; WISE -0.75
#   a at rank 1 is not first when instructed, b falls: SICR 0
#   c: o 3, n 1 -> p-MRR 1/3 - 1 = -2/3


def test_instruction_metrics_infosearch_layout():
    got = instruction_metrics(QRELS, RUNS, queries=["q1", "q2", "q3"])  # q3: no qrels, no lists
    assert set(got) == {P_MRR, P_MRR_INFOSEARCH, WISE, SICR}
    assert got[P_MRR] == pytest.approx({"q1": 2 / 3, "q2": -2 / 3})
    assert got[P_MRR_INFOSEARCH] == pytest.approx({"q1": 2 / 3})  # q2 has no InfoSearch changed doc
    assert got[WISE] == pytest.approx({"q1": 1.0, "q2": -0.75})
    assert got[SICR] == pytest.approx({"q1": 1.0, "q2": 0.0})
    assert mean_of(got[WISE]) == pytest.approx(0.125)  # (1 - 0.75)/2


def test_instruction_metrics_followir_layout_has_only_p_mrr():
    qrels = {mode: QRELS[mode] for mode in ("og", "changed")}
    runs = {mode: RUNS[mode] for mode in ("og", "changed")}
    got = instruction_metrics(qrels, runs, queries=["q1", "q2"])
    assert set(got) == {P_MRR}
    assert got[P_MRR] == pytest.approx({"q1": 2 / 3, "q2": -2 / 3})


def test_instruction_metrics_reads_a_query_missing_from_a_run_as_an_empty_list():
    runs = {**RUNS, "changed": {"q2": RUNS["changed"]["q2"]}}  # q1 returned nothing when instructed
    # q1: x o 1, n 0 + 1 = 1 -> p-MRR 0; g (2, 1, 3) with S_ins 0 < S_ori 0.8 -> WISE still 1, SICR 0
    got = instruction_metrics(QRELS, runs, queries=["q1"])
    assert got[P_MRR] == pytest.approx({"q1": 0.0})
    assert got[WISE] == pytest.approx({"q1": 1.0})
    assert got[SICR] == pytest.approx({"q1": 0.0})


def test_instruction_metrics_refuses_a_reversed_collection_without_its_run():
    runs = {mode: RUNS[mode] for mode in ("og", "changed")}
    with pytest.raises(ValueError, match="reversed"):
        instruction_metrics(QRELS, runs, queries=["q1"])
