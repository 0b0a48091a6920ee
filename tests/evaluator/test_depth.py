"""The evaluator reads only each query's top D (D: the deepest rank a requested measure reads).

Every value must equal the one computed the way irforge did before the cut, on the whole run:
pytrec_eval called directly on every document, RR@k on the run cut with `ranking.top_k`, Judged@k
counted by hand on `top_k`. Exactly (==), per query, for every measure family measures.py
declares, on runs with ties at every cutoff, on the real SciFact BM25 run and on trec_eval's own
conformance fixtures, whether the run's values are dicts or Rankings.
"""

from __future__ import annotations

import random

import pytest
import pytrec_eval

from irforge.corpus.lexical.embedded import EmbeddedBackend
from irforge.corpus.settings import Bm25Settings
from irforge.data import BeirDataset
from irforge.data.trec import read_trec_qrels
from irforge.runs import read_run_file
from irforge.evaluator import EvaluationOptions, Evaluator
from irforge.evaluator.core import EvaluationError
from irforge.evaluator.depth import top_ranking
from irforge.evaluator.measures import DEFAULT_MEASURES, IR_MEASURES, parse_measures, reading_depth
from irforge.ranking import Ranking, ranked, top_k

# Every family with a cutoff trec_eval reads as ranks [0, k): together they read the top 100.
BOUNDED = ["nDCG@10", "nDCG@20", "P@5", "P@10", "P(rel=2)@10", "R@10", "R@100", "R(rel=2)@100", "AP@10", "AP@100",
           "RR@1", "RR@10", "RR@100", "RR(rel=2)@10", "Success@1", "Success@10", "Judged@1", "Judged@10", "Judged@100"]
# The families that read the whole ranking (depth 0): with any of them nothing is cut.
WHOLE = ["nDCG", "AP", "Rprec", "Bpref", "infAP", "NumRet", "NumRet(rel=1)", "NumRel", "NumQ", "SetP", "SetR", "SetF",
         "IPrec@0.5", "map", "ndcg_cut.10", "recip_rank"]


def test_every_family_is_covered():
    families = {name.split("@")[0].split("(")[0] for name in BOUNDED + WHOLE}
    assert set(IR_MEASURES) | {"Judged"} <= families


def test_depth_declared_per_request():
    depths = {r.output_name: r.depth for r in parse_measures(BOUNDED + WHOLE)}
    assert depths["nDCG@20"] == 20 and depths["RR@1"] == 1 and depths["Judged@100"] == 100 and depths["R(rel=2)@100"] == 100
    assert all(depths[name] == 0 for name in WHOLE)  # trec_eval-named ones too (ndcg_cut.10): conservative
    assert reading_depth(parse_measures(list(DEFAULT_MEASURES))) == 100
    assert reading_depth(parse_measures(BOUNDED)) == 100
    assert reading_depth(parse_measures([*DEFAULT_MEASURES, "map"])) == 0


# -- the cut itself --------------------------------------------------------------------------

def coarse_run(seed: int, queries: int = 40, docs: int = 300) -> dict[str, dict[str, float]]:
    """Scores on a grid of 41 values: about 7 documents share each score, so every cutoff
    (1, 5, 10, 20, 100) falls inside a group of tied documents for most queries."""
    rng = random.Random(seed)
    return {f"q{q}": {f"d{rng.randrange(10**6)}": rng.randint(0, 40) / 8 for _ in range(docs)} for q in range(queries)}


@pytest.mark.parametrize("k", [1, 5, 10, 99, 100, 101, 299, 300, 301, 0])
def test_top_ranking_is_top_k_by_the_tie_rule(k):
    for scores in coarse_run(3).values():
        expected = ranked(scores)[:k] if k else ranked(scores)
        assert top_ranking(scores, k).pairs() == expected
        assert top_ranking(Ranking.of(scores), k).pairs() == expected


def test_top_ranking_of_small_and_empty_mappings():
    assert top_ranking({}, 10).pairs() == []
    assert top_ranking({"a": 1.0}, 1).pairs() == [("a", 1.0)]
    assert top_ranking({"a": 1.0, "b": 1.0, "c": 2.0}, 2).pairs() == [("c", 2.0), ("b", 1.0)]


# -- values: the cut against the whole run ----------------------------------------------------

def qrels_for(run: dict, seed: int) -> dict[str, dict[str, int]]:
    """30 judged retrieved documents per query (grades 0-3) and 10 never retrieved."""
    rng = random.Random(seed)
    qrels = {}
    for query_id, scores in run.items():
        judged = {doc_id: rng.choice([0, 1, 1, 2, 3]) for doc_id in rng.sample(sorted(scores), 30)}
        judged.update({f"unretrieved{n}": rng.choice([1, 2]) for n in range(10)})
        qrels[query_id] = judged
    return qrels


def whole_run_values(qrels, run, measures) -> dict[str, dict[str, float]]:
    """Each measure computed on the whole run, as the evaluator did before it cut rankings."""
    evaluated = {q: run[q] for q in run if q in qrels}
    values = {q: {} for q in evaluated}
    direct = {}  # (relevance level, truncation) -> pytrec_eval's values on the whole run, cut only for RR@k
    requests = parse_measures(measures)
    trec_requests = [r for r in requests if r.engine == "pytrec_eval"]
    for level, k in {(r.relevance_level or 1, r.truncate_to) for r in trec_requests}:
        specs = {r.trec_spec for r in trec_requests if (r.relevance_level or 1, r.truncate_to) == (level, k)}
        source = {q: top_k(scores, k) for q, scores in evaluated.items()} if k else evaluated
        direct[level, k] = pytrec_eval.RelevanceEvaluator(qrels, specs, relevance_level=level).evaluate(source)
    for request in requests:
        for q, scores in evaluated.items():
            if request.engine == "judged":
                top = top_k(scores, request.cutoff)
                values[q][request.output_name] = sum(d in qrels[q] for d in top) / min(request.cutoff, len(top)) if top else 0.0
            elif request.trec_key is None:  # a trec_eval-named request: every key trec_eval returns for it
                keys = pytrec_eval.RelevanceEvaluator({"q": {"d": 1}}, {request.trec_spec}).evaluate({"q": {"d": 1.0}})["q"]
                values[q].update((key, direct[request.relevance_level or 1, 0][q][key]) for key in keys)
            else:
                values[q][request.output_name] = direct[request.relevance_level or 1, request.truncate_to][q][request.trec_key]
    return values


def irforge_values(qrels, run, measures, as_rankings: bool) -> dict[str, dict[str, float]]:
    given = {q: Ranking.of(scores) for q, scores in run.items()} if as_rankings else run
    result = Evaluator().evaluate(qrels, given, measures, EvaluationOptions(drop_identical_ids=False))
    return result.per_query


@pytest.mark.parametrize("as_rankings", [False, True], ids=["dicts", "Rankings"])
@pytest.mark.parametrize("measures", [BOUNDED, BOUNDED + WHOLE, list(DEFAULT_MEASURES)], ids=["cut at 100", "whole run", "defaults"])
def test_ties_at_every_cutoff(measures, as_rankings):
    run = coarse_run(7)
    qrels = qrels_for(run, 8)
    tied = [sum(ranked(s)[k - 1][1] == ranked(s)[k][1] for s in run.values()) for k in (1, 10, 100)]
    assert min(tied) >= 30, tied  # most of the 40 queries have a tie across each boundary
    assert irforge_values(qrels, run, measures, as_rankings) == whole_run_values(qrels, run, measures)


def test_the_tie_data_would_catch_a_wrong_cut():
    """Cutting with the tie rule reversed (doc id ascending) changes values: the test above can fail."""
    run = coarse_run(7)
    qrels = qrels_for(run, 8)
    wrong = {q: dict(sorted(s.items(), key=lambda item: (-item[1], item[0]))[:10]) for q, s in run.items()}
    right = whole_run_values(qrels, run, ["RR@10", "P@10", "nDCG@10", "Judged@10"])
    assert whole_run_values(qrels, wrong, ["RR@10", "P@10", "nDCG@10", "Judged@10"]) != right


def test_identical_ids_dropped_before_the_cut():
    """BEIR's rule removes the query's own id wherever it is ranked, and the documents below move
    up: the top D is taken after dropping. The count covers every rank, below D too."""
    run = coarse_run(11, queries=8)
    for position, (query_id, scores) in zip([0, 9, 10, 99, 100, 150, 299, None], run.items()):
        if position is not None:  # give the query's own id the score of the document at `position`
            scores[query_id] = ranked(scores)[position][1] + 1e-9
    qrels = qrels_for(run, 12)
    cleaned = {q: {d: s for d, s in scores.items() if d != q} for q, scores in run.items()}
    expected = whole_run_values(qrels, cleaned, BOUNDED)
    for given in (run, {q: Ranking.of(s) for q, s in run.items()}):
        result = Evaluator().evaluate(qrels, given, BOUNDED, EvaluationOptions(drop_identical_ids=True))
        assert result.per_query == expected
        assert result.identical_ids_dropped == 7


@pytest.mark.parametrize("max_docs", [5, 10, 50, 100, 200])
def test_max_docs_per_query_with_the_cut(max_docs):
    run = coarse_run(13, queries=10)
    qrels = qrels_for(run, 14)
    cut = {q: top_k(scores, max_docs) for q, scores in run.items()}
    for given in (run, {q: Ranking.of(s) for q, s in run.items()}):
        result = Evaluator().evaluate(qrels, given, BOUNDED, EvaluationOptions(drop_identical_ids=False, max_docs_per_query=max_docs))
        assert result.per_query == whole_run_values(qrels, cut, BOUNDED)


# -- real runs ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def scifact_bm25(beir_dir, tmp_path_factory):
    """irforge's embedded BM25 on the whole SciFact corpus, 100 of its test queries at k = 1,000."""
    dataset = BeirDataset.open(beir_dir / "scifact")
    qrels = dataset.qrels("test")
    queries = [q for q in dataset.queries() if q.query_id in qrels][:100]
    backend = EmbeddedBackend(tmp_path_factory.mktemp("scifact-bm25"))
    backend.create("scifact", "fp", Bm25Settings())
    list(backend.ingest("scifact", iter([list(dataset.corpus())])))
    hits = backend.search("scifact", queries, 1000)
    run = {query.query_id: dict(found.pairs()) for query, found in zip(queries, hits)}
    return qrels, run


@pytest.mark.parametrize("as_rankings", [False, True], ids=["dicts", "Rankings"])
def test_scifact_bm25_run(scifact_bm25, as_rankings):
    qrels, run = scifact_bm25
    assert sum(len(scores) > 100 for scores in run.values()) > 90  # the cut at 100 really cuts
    assert set(DEFAULT_MEASURES) <= set(BOUNDED)
    assert irforge_values(qrels, run, BOUNDED, as_rankings) == whole_run_values(qrels, run, BOUNDED)


@pytest.mark.parametrize("qrels_file", ["qrels.test", "qrels.rel_level"])
@pytest.mark.parametrize("as_rankings", [False, True], ids=["dicts", "Rankings"])
def test_trec_eval_conformance_fixtures(conformance_dir, qrels_file, as_rankings):
    qrels = read_trec_qrels(conformance_dir / qrels_file)
    run = read_run_file(conformance_dir / "results.test").run
    assert all(len(scores) == 500 for scores in run.values())
    for measures in (BOUNDED, BOUNDED + WHOLE):
        assert irforge_values(qrels, run, measures, as_rankings) == whole_run_values(qrels, run, measures)


def test_a_nan_score_is_refused_naming_the_query():
    run = {"q1": {**{f"d{n}": float(n) for n in range(200)}, "dnan": float("nan")}}
    with pytest.raises(EvaluationError, match="the run's query 'q1': a score is NaN, which ranks nowhere"):
        Evaluator().evaluate({"q1": {"d1": 1}}, run, list(DEFAULT_MEASURES))
