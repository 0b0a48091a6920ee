"""Every LexicalBackend operation, run on every backend available, with the same expectations.

The embedded leg always runs. The Elasticsearch leg runs when IRFORGE_TEST_ELASTICSEARCH_URL
points at a server (none can be installed on the development machines) and is skipped, with the
reason printed, otherwise. Scores differ between engines (analyzers, field layout); behaviour
must not.
"""

from __future__ import annotations

import itertools
import os
import uuid

import numpy as np
import pytest

from irforge.corpus.lexical.base import CorpusState, LexicalBackend
from irforge.corpus.errors import CorpusConflict, CorpusNotFound, CorpusNotReady
from irforge.corpus.settings import Bm25Settings
from irforge.data import iter_corpus
from irforge.data.types import Document, Query
from irforge.ranking import Ranking, ranked

ES_URL = os.environ.get("IRFORGE_TEST_ELASTICSEARCH_URL")


@pytest.fixture(params=["embedded", "elasticsearch"])
def backend(request, tmp_path) -> LexicalBackend:
    if request.param == "embedded":
        from irforge.corpus.lexical.embedded import EmbeddedBackend

        instance = EmbeddedBackend(tmp_path / "indexes")
    else:
        if not ES_URL:
            pytest.skip("IRFORGE_TEST_ELASTICSEARCH_URL is not set: no Elasticsearch server to test against")
        from irforge.corpus.lexical.elasticsearch import ElasticsearchBackend

        instance = ElasticsearchBackend(ES_URL, index_prefix=f"irforge-test-{uuid.uuid4().hex[:8]}-")
    created: list[str] = []
    original_create = instance.create

    def tracking_create(corpus_id, *args, **kwargs):
        created.append(corpus_id)
        return original_create(corpus_id, *args, **kwargs)

    instance.create = tracking_create
    yield instance
    for corpus_id in created:
        instance.delete(corpus_id)
    instance.close()


@pytest.fixture(scope="module")
def scifact_docs(beir_dir) -> list[Document]:
    return list(itertools.islice(iter_corpus(beir_dir / "scifact" / "corpus.jsonl"), 200))


SMALL = [
    Document("d1", "Vitamin D", "Vitamin D deficiency is linked to bone loss in older adults."),
    Document("d2", "Aspirin", "Low dose aspirin reduces the risk of heart attack."),
    Document("d3", "Exercise", "Aerobic exercise improves endothelial function."),
    Document("d4", "Sleep", "Sleep deprivation impairs memory consolidation."),
]
TWINS = [Document("twin-a", "", "identical text about zebrafish fins"), Document("twin-b", "", "identical text about zebrafish fins")]


def ingest_all(backend, corpus_id, batches):
    return list(backend.ingest(corpus_id, iter(batches)))


def make_ready(backend, corpus_id, documents, batch_size=2):
    backend.create(corpus_id, "fp-1", Bm25Settings())
    batches = [documents[i:i + batch_size] for i in range(0, len(documents), batch_size)]
    return ingest_all(backend, corpus_id, batches)


def test_create_is_idempotent_and_detects_conflicts(backend):
    info = backend.create("c1", "fp-1", Bm25Settings())
    assert (info.corpus_id, info.state, info.document_count, info.backend) == ("c1", CorpusState.EMPTY, 0, backend.name)
    assert info.config["k1"] == 0.9 and info.config["b"] == 0.4
    assert backend.create("c1", "fp-1", Bm25Settings()) == info
    with pytest.raises(CorpusConflict):
        backend.create("c1", "fp-2", Bm25Settings())
    with pytest.raises(CorpusConflict):
        backend.create("c1", "fp-1", Bm25Settings(k1=1.2, b=0.75))


def test_missing_and_deleted_corpora(backend):
    assert backend.info("absent") is None
    assert backend.delete("absent") is False
    with pytest.raises(CorpusNotFound):
        list(backend.ingest("absent", iter([SMALL])))
    with pytest.raises(CorpusNotFound):
        backend.search("absent", [Query("q", "vitamin")], 10)
    backend.create("c2", "fp-1", Bm25Settings())
    assert backend.delete("c2") is True
    assert backend.info("c2") is None


def test_search_before_commit_is_refused(backend):
    backend.create("c3", "fp-1", Bm25Settings())
    with pytest.raises(CorpusNotReady):
        backend.search("c3", [Query("q", "vitamin")], 10)


def test_ingest_reports_progress_per_batch_then_commits(backend):
    progress = make_ready(backend, "c4", SMALL, batch_size=3)
    assert [(p.received, p.indexed, p.failed, p.committed) for p in progress] == [
        (3, 3, 0, False), (4, 4, 0, False), (4, 4, 0, True),
    ]
    info = backend.info("c4")
    assert info.state == CorpusState.READY and info.document_count == 4


def test_bad_documents_are_reported_and_the_rest_indexed(backend):
    backend.create("c5", "fp-1", Bm25Settings())
    bad = Document("has space", "x", "vitamin")
    progress = ingest_all(backend, "c5", [[SMALL[0], bad, SMALL[1]]])
    assert progress[0].failed == 1 and [e.doc_id for e in progress[0].errors] == ["has space"]
    assert progress[-1].committed and backend.info("c5").document_count == 2


def test_reingest_is_idempotent_and_upserts_by_id(backend):
    make_ready(backend, "c6", SMALL)
    before = backend.search("c6", [Query("q", "aspirin heart attack")], 10)[0].pairs()
    make_ready(backend, "c6", SMALL)
    assert backend.info("c6").document_count == 4
    assert backend.search("c6", [Query("q", "aspirin heart attack")], 10)[0].pairs() == before

    changed = Document("d4", "Sleep", "Aspirin after a heart attack, and sleep.")
    ingest_all(backend, "c6", [[changed, Document("d5", "New", "brand new zebrafish document")]])
    assert backend.info("c6").document_count == 5
    hits = backend.search("c6", [Query("q", "aspirin heart attack"), Query("z", "zebrafish")], 10)
    assert set(hits[0]) == {"d2", "d4"}
    assert list(hits[1]) == ["d5"]


def test_search_ranks_by_score_then_doc_id_descending(backend):
    make_ready(backend, "c7", SMALL + TWINS)
    hits = backend.search("c7", [Query("q", "zebrafish fins")], 10)[0]
    assert list(hits) == ["twin-b", "twin-a"]
    assert hits.scores[0] == hits.scores[1] > 0


def test_search_contract(backend, scifact_docs):
    make_ready(backend, "c8", scifact_docs, batch_size=50)
    target = scifact_docs[17]
    queries = [Query("by-title", target.title), Query("stop", "the of and"), Query("unknown", "qqqzzzx"), Query("broad", "cell")]
    results = backend.search("c8", queries, 5)
    assert len(results) == 4
    assert all(isinstance(ranking, Ranking) for ranking in results)
    assert results[0].doc_ids[0] == target.doc_id
    assert len(results[1]) == 0 and len(results[2]) == 0
    assert 0 < len(results[3]) <= 5
    for ranking in results:
        assert ranking.doc_ids.dtype == object and ranking.scores.dtype == np.float64
        assert ranking.pairs() == ranked(dict(ranking.pairs()))  # the tie rule, whatever the backend
        assert all(ranking.scores > 0)
    one_by_one = [backend.search("c8", [q], 5)[0] for q in queries]
    assert [ranking.pairs() for ranking in one_by_one] == [ranking.pairs() for ranking in results]
    with pytest.raises(ValueError):
        backend.search("c8", queries, 0)


def test_interrupted_ingest_leaves_the_corpus_unsearchable_not_half_indexed(backend):
    backend.create("c9", "fp-1", Bm25Settings())

    def failing_batches():
        yield SMALL[:2]
        raise RuntimeError("source went away")

    with pytest.raises(RuntimeError, match="source went away"):
        list(backend.ingest("c9", failing_batches()))
    assert backend.info("c9").state == CorpusState.EMPTY
    with pytest.raises(CorpusNotReady):
        backend.search("c9", [Query("q", "vitamin")], 10)
    make_ready(backend, "c9", SMALL)
    assert backend.info("c9").document_count == 4
