"""Measure names: ir_measures-style and trec_eval's own, resolved to an engine; errors a user can act on."""

import pytest

from irforge.evaluator import MeasureError, parse_measures


def only(name: str):
    (request,) = parse_measures([name])
    return request


@pytest.mark.parametrize("name, trec_spec, trec_key", [
    ("nDCG@10", "ndcg_cut.10", "ndcg_cut_10"),
    ("R@100", "recall.100", "recall_100"),
    ("AP@100", "map_cut.100", "map_cut_100"),
    ("P@5", "P.5", "P_5"),
    ("Success@3", "success.3", "success_3"),
    ("nDCG", "ndcg", "ndcg"),
    ("AP", "map", "map"),
    ("IPrec@0.5", "iprec_at_recall.0.50", "iprec_at_recall_0.50"),
])
def test_ir_measures_names(name, trec_spec, trec_key):
    request = only(name)
    assert (request.output_name, request.engine, request.trec_spec, request.trec_key) == (name, "pytrec_eval", trec_spec, trec_key)
    assert (request.truncate_to, request.relevance_level) == (0, None)


def test_rr_truncates_the_run():
    request = only("RR@10")
    assert (request.trec_spec, request.trec_key, request.truncate_to) == ("recip_rank", "recip_rank", 10)


def test_relevance_level_parameter():
    request = only("P(rel=2)@5")
    assert (request.trec_spec, request.trec_key, request.relevance_level) == ("P.5", "P_5", 2)


def test_judged_uses_its_own_engine():
    request = only("Judged@10")
    assert (request.engine, request.cutoff, request.trec_spec) == ("judged", 10, "")


@pytest.mark.parametrize("name", ["P", "map", "ndcg_cut.10", "P.5,10", "recip_rank", "all_trec"])
def test_bare_trec_eval_names(name):
    request = only(name)
    # trec_key None: keep every key trec_eval returns for it (P gives P_5, P_10, ...).
    assert (request.engine, request.trec_spec, request.trec_key) == ("pytrec_eval", name, None)


def test_official_set():
    specs = [r.trec_spec for r in parse_measures(["official"])]
    assert specs == ["runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec",
                     "bpref", "recip_rank", "iprec_at_recall", "P"]


def test_several_names_keep_order():
    assert [r.output_name for r in parse_measures([" nDCG@10 ", "map", "Judged@5"])] == ["nDCG@10", "map", "Judged@5"]


def test_unknown_name_lists_alternatives():
    with pytest.raises(MeasureError) as caught:
        parse_measures(["nDCG@10", "MRR@10"])
    message = str(caught.value)
    assert "unknown measure 'MRR@10'" in message
    assert "RR" in message and "nDCG" in message and "Judged" in message  # ir_measures families
    assert "ndcg_cut" in message and "recip_rank" in message  # trec_eval names


@pytest.mark.parametrize("name, message", [
    ("P@", "unknown measure 'P@'"),
    ("P(rel=2)", "P needs a cutoff, e.g. P@10"),
    ("R", "R needs a cutoff, e.g. R@10"),
    ("Judged", "write Judged@k"),
    ("Judged(rel=2)@10", "write Judged@k"),
    ("nDCG(rel=2)@10", "only rel=N is supported, and not for nDCG"),
    ("P(foo=2)@10", "only rel=N is supported"),
    ("IPrec@1.5", "the recall level must be within 0..1"),
    ("Rprec@5", "Rprec takes no @cutoff"),
    ("nDCG@0", "the cutoff must be a positive integer, got '0'"),
    ("nDCG@2.5", "the cutoff must be a positive integer, got '2.5'"),
    ("P.abc", "measure 'P.abc'"),
])
def test_errors(name, message):
    with pytest.raises(MeasureError) as caught:
        parse_measures([name])
    assert message in str(caught.value)


def test_no_measures():
    with pytest.raises(MeasureError, match="no measures requested"):
        parse_measures([])


def test_iprec_unparsable_level_is_a_measure_error():
    with pytest.raises(MeasureError):
        parse_measures(["IPrec@1..2"])
