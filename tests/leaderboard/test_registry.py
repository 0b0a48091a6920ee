"""Registering a closed-book dataset: the copy the server keeps, the main metric per task, who may
register, and the reranking category's fixed BM25 top 100 against bm25s called here directly."""

from __future__ import annotations

import bm25s
import pytest
import Stemmer

from irforge.accounts.identity import Forbidden, acting_as
from irforge.data import BeirDataset
from irforge.leaderboard.errors import DatasetExists, LeaderboardError
from irforge.runs import read_run_file

from .conftest import OPERATOR_ID, TEAM_A


def test_registration_copies_corpus_queries_and_the_split_qrels_only(platform, scifact_subset):
    _, leaderboard = platform
    data = leaderboard.registry.data_dir("scifact")
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"):
        assert (data / name).read_bytes() == (scifact_subset / name).read_bytes()
    assert sorted(p.name for p in (data / "qrels").iterdir()) == ["test.tsv"]
    [record] = leaderboard.list_datasets()
    qrels = BeirDataset.open(scifact_subset).qrels("test")
    corpus_lines = (scifact_subset / "corpus.jsonl").read_text().count("\n")
    assert (record.name, record.task, record.main_metric, record.closed, record.per_query) == \
        ("scifact", "qa", "nDCG@10", True, "withheld")
    assert (record.queries, record.documents) == (len(qrels), corpus_lines)
    # Nothing of the BM25 evaluation (it scored the qrels) stays beside the candidates.
    assert sorted(p.name for p in leaderboard.registry.folder("scifact").iterdir()) == ["candidates.trec", "scifact"]


def test_candidates_are_bm25s_top_100_with_irforges_defaults(platform, scifact_subset):
    """The same BM25 as irforge's embedded backend, built here from bm25s itself: Lucene's variant,
    k1 0.9, b 0.4, English stopwords and Snowball stems, title + text."""
    _, leaderboard = platform
    dataset = BeirDataset.open(scifact_subset)
    documents = list(dataset.corpus())
    queries = [q for q in dataset.queries() if q.query_id in dataset.qrels("test")]
    stemmer = Stemmer.Stemmer("english")
    index = bm25s.BM25(method="lucene", k1=0.9, b=0.4)
    index.index(bm25s.tokenize([f"{d.title} {d.text}".strip() for d in documents], stopwords="en", stemmer=stemmer,
                               show_progress=False), show_progress=False)
    found, scores = index.retrieve(bm25s.tokenize([q.text for q in queries], stopwords="en", stemmer=stemmer,
                                                  show_progress=False), k=100, show_progress=False)
    candidates = read_run_file(leaderboard.candidates("scifact")).run
    assert set(candidates) == {q.query_id for q in queries}
    for query, rows, values in zip(queries, found, scores):
        expected = {documents[i].doc_id: float(s) for i, s in zip(rows, values) if s > 0}
        got = candidates[query.query_id]
        assert len(got) <= 100
        # The same documents with the same scores; where the 100th place is tied, either tied document may fill it.
        cutoff = min(expected.values())
        assert {d for d, s in expected.items() if s > cutoff + 1e-4} <= set(got)
        for doc_id, score in got.items():
            assert score == pytest.approx(expected.get(doc_id, cutoff), abs=1e-4)


def test_main_metric_follows_the_task_or_the_operator(platform, scifact_tiny):
    _, leaderboard = platform
    with acting_as(OPERATOR_ID):
        long_doc = leaderboard.register_dataset("tiny-long", scifact_tiny, task="long-doc", closed=False)
        named = leaderboard.register_dataset("tiny-named", scifact_tiny, task="qa", main_metric="RR@10", per_query="coarsened")
        with pytest.raises(LeaderboardError, match="long-essay"):
            leaderboard.register_dataset("tiny-bad", scifact_tiny, task="long-essay")
    assert (long_doc.main_metric, long_doc.closed, long_doc.per_query) == ("R@10", False, "shown")
    assert (named.main_metric, named.per_query) == ("RR@10", "coarsened")


def test_only_an_operator_registers_and_a_refusal_leaves_nothing(platform, scifact_tiny, tmp_path):
    _, leaderboard = platform
    with acting_as(TEAM_A), pytest.raises(Forbidden, match="operator"):
        leaderboard.register_dataset("mine", scifact_tiny)
    with acting_as(OPERATOR_ID):
        with pytest.raises(DatasetExists):
            leaderboard.register_dataset("scifact", scifact_tiny)
        with pytest.raises(LeaderboardError, match="dataset name 'Sci Fact'"):
            leaderboard.register_dataset("Sci Fact", scifact_tiny)
        with pytest.raises(LeaderboardError, match="split 'dev' not found"):
            leaderboard.register_dataset("tiny", scifact_tiny, split="dev")
        with pytest.raises(LeaderboardError, match="not found"):
            leaderboard.register_dataset("tiny", tmp_path / "absent")
    assert [d.name for d in leaderboard.list_datasets()] == ["scifact"]
    assert sorted(p.name for p in (leaderboard.root / "datasets").iterdir()) == ["scifact"]
