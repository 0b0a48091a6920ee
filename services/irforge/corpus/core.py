"""The corpus service's transport-free core: corpora, ingestion and search over one LexicalBackend."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from irforge.common.iterables import chunked
from irforge.corpus.lexical.base import CorpusInfo, Hit, IngestProgress, LexicalBackend
from irforge.corpus.errors import CorpusNotFound
from irforge.corpus.settings import Bm25Settings
from irforge.data.types import Document, Query

SEARCH_CHUNK = 256  # queries scored per backend call in batch search: bounds memory, keeps streaming


class CorpusService:
    def __init__(self, backend: LexicalBackend):
        self.backend = backend

    def create_corpus(self, corpus_id: str, fingerprint: str, settings: Bm25Settings) -> CorpusInfo:
        if not fingerprint:
            raise ValueError("a corpus needs a fingerprint (a hash of its source file)")
        return self.backend.create(corpus_id, fingerprint, settings)

    def get_corpus(self, corpus_id: str) -> CorpusInfo:
        info = self.backend.info(corpus_id)
        if info is None:
            raise CorpusNotFound(corpus_id)
        return info

    def find_corpus(self, corpus_id: str) -> CorpusInfo | None:
        return self.backend.info(corpus_id)

    def delete_corpus(self, corpus_id: str) -> bool:
        return self.backend.delete(corpus_id)

    def ingest(self, corpus_id: str, batches: Iterable[list[Document]]) -> Iterator[IngestProgress]:
        return self.backend.ingest(corpus_id, batches)

    def search(self, corpus_id: str, query: Query, k: int) -> list[Hit]:
        return self.backend.search(corpus_id, [query], k)[0]

    def batch_search(self, corpus_id: str, queries: Iterable[Query], k: int) -> Iterator[tuple[str, list[Hit]]]:
        """(query id, hits) per query, in the given order, scored in bounded chunks."""
        for chunk in chunked(queries, SEARCH_CHUNK):
            for query, hits in zip(chunk, self.backend.search(corpus_id, chunk, k), strict=True):
                yield query.query_id, hits

    def close(self) -> None:
        self.backend.close()
