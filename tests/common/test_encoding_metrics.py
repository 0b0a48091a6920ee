"""irforge_documents_encoded_total counts the documents the real all-MiniLM-L6-v2 encodes: cache
hits, repeated texts and queries are not documents encoded."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from prometheus_client import REGISTRY

from irforge.data import iter_corpus
from irforge.models.cache import EmbeddingCache
from irforge.models.cached_encoding import encode_with_cache
from irforge.models.encoder import EncoderCore, EncoderSpec, TextRole


@pytest.fixture(scope="module")
def model():
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)   # tiny batches: a second thread only contends with parallel work
    try:
        yield EncoderCore(EncoderSpec("all-MiniLM-L6-v2", max_seq_length=32))   # short texts: a fast test
    finally:
        torch.set_num_threads(threads)


def encoded_so_far(model: EncoderCore) -> float:
    return REGISTRY.get_sample_value("irforge_documents_encoded_total", {"model": model.identity["model"]}) or 0.0


def test_only_real_encodes_are_counted(model, tmp_path, beir_dir: Path, metrics_scraper):
    corpus = iter_corpus(beir_dir / "scifact" / "corpus.jsonl")
    documents = [(d.doc_id, d.full_text) for d in itertools.islice(corpus, 6)]
    repeated = documents + [("copy-of-first", documents[0][1])]        # same text: encoded once
    label = {"model": model.identity["model"]}
    exported_before = metrics_scraper.value("irforge_documents_encoded_total", **label)
    with EmbeddingCache(tmp_path / "embeddings.sqlite3") as cache:
        start = encoded_so_far(model)
        first = encode_with_cache(model, cache, TextRole.PASSAGE, repeated, batch_size=4)
        list(first)
        assert first.stats.encoded == 6 and encoded_so_far(model) - start == 6

        again = encode_with_cache(model, cache, TextRole.PASSAGE, documents + [("new", "A new abstract on sleep.")])
        list(again)
        assert again.stats.reused == 6 and encoded_so_far(model) - start == 7    # only the new text

        list(encode_with_cache(model, cache, TextRole.QUERY, [("q1", "does sleep matter?")]))
        assert encoded_so_far(model) - start == 7                                # queries are not documents
    assert metrics_scraper.value("irforge_documents_encoded_total", **label) - exported_before == 7
