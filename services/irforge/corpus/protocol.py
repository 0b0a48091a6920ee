"""Conversions between the corpus service's plain types and its protobuf messages."""

from __future__ import annotations

import json

from irforge.corpus.lexical.base import CorpusInfo, CorpusState, DocumentError, IngestProgress
from irforge.corpus.settings import Bm25Settings
from irforge.common.packing import pack_sparse, unpack_sparse
from irforge.corpus.vectors.base import HnswSettings, SparseVector, VectorCollectionInfo
from irforge.data.types import Document, Query
from irforge.ranking import Ranking
from irforge.v1 import common_pb2, corpus_pb2

_STATES = {CorpusState.EMPTY: corpus_pb2.CORPUS_STATE_EMPTY, CorpusState.READY: corpus_pb2.CORPUS_STATE_READY}
_STATES_BACK = {v: k for k, v in _STATES.items()}


def info_to_proto(info: CorpusInfo) -> corpus_pb2.CorpusInfo:
    return corpus_pb2.CorpusInfo(
        corpus_id=info.corpus_id, fingerprint=info.fingerprint, state=_STATES[info.state],
        document_count=info.document_count, backend=info.backend, config_json=json.dumps(info.config),
    )


def info_from_proto(message: corpus_pb2.CorpusInfo) -> CorpusInfo:
    return CorpusInfo(
        corpus_id=message.corpus_id, fingerprint=message.fingerprint, state=_STATES_BACK[message.state],
        document_count=message.document_count, backend=message.backend, config=json.loads(message.config_json or "{}"),
    )


def settings_to_proto(settings: Bm25Settings) -> corpus_pb2.Bm25Settings:
    return corpus_pb2.Bm25Settings(k1=settings.k1, b=settings.b, language=settings.language)


def settings_from_proto(message: corpus_pb2.Bm25Settings, has_field: bool) -> Bm25Settings:
    """A client from before languages sends none: its corpora are English, as they always were."""
    return Bm25Settings(k1=message.k1, b=message.b, language=message.language) if has_field else Bm25Settings()


def document_to_proto(document: Document) -> common_pb2.Document:
    return common_pb2.Document(
        doc_id=document.doc_id, title=document.title, text=document.text,
        metadata_json=json.dumps(document.metadata) if document.metadata else "",
    )


def document_from_proto(message: common_pb2.Document) -> Document:
    """Raises ValueError naming the document when its metadata_json is not a JSON object."""
    metadata = {}
    if message.metadata_json:
        try:
            metadata = json.loads(message.metadata_json)
        except ValueError as error:
            raise ValueError(f"document {message.doc_id!r}: metadata_json is not valid JSON ({error})") from None
        if not isinstance(metadata, dict):
            raise ValueError(f"document {message.doc_id!r}: metadata_json must be a JSON object, got {type(metadata).__name__}")
    return Document(doc_id=message.doc_id, title=message.title, text=message.text, metadata=metadata)


def documents_from_proto(messages) -> tuple[list[Document], list[DocumentError]]:
    """The decodable documents of a batch, and a per-document error for each one that is not:
    one bad document is reported by id and the rest of the batch goes on, as in the backends."""
    documents, errors = [], []
    for message in messages:
        try:
            documents.append(document_from_proto(message))
        except ValueError as error:
            errors.append(DocumentError(message.doc_id, str(error)))
    return documents, errors


def query_to_proto(query: Query) -> common_pb2.Query:
    return common_pb2.Query(query_id=query.query_id, text=query.text)


def query_from_proto(message: common_pb2.Query) -> Query:
    return Query(query_id=message.query_id, text=message.text)


# The wire keeps one ScoredDocument per hit (what installed irforge_client versions read); the
# ends convert to and from a Ranking in one pass each.

def ranking_to_proto(query_id: str, ranking: Ranking) -> corpus_pb2.SearchResponse:
    return corpus_pb2.SearchResponse(
        query_id=query_id,
        hits=[common_pb2.ScoredDocument(doc_id=d, score=s) for d, s in zip(ranking.doc_ids.tolist(), ranking.scores.tolist())],
    )


def ranking_from_proto(message: corpus_pb2.SearchResponse) -> Ranking:
    """The hits as sent: the corpus service sends them in its backend's (tie-rule) order."""
    hits = message.hits
    return Ranking([h.doc_id for h in hits], [h.score for h in hits])


def progress_to_proto(progress: IngestProgress) -> corpus_pb2.IngestProgress:
    return corpus_pb2.IngestProgress(
        received=progress.received, indexed=progress.indexed, failed=progress.failed,
        errors=[corpus_pb2.DocumentError(doc_id=e.doc_id, message=e.message) for e in progress.errors],
        committed=progress.committed,
    )


def progress_from_proto(message: corpus_pb2.IngestProgress) -> IngestProgress:
    return IngestProgress(
        received=message.received, indexed=message.indexed, failed=message.failed,
        errors=[DocumentError(e.doc_id, e.message) for e in message.errors], committed=message.committed,
    )


# -- vector collections ---------------------------------------------------------------------

def hnsw_to_proto(hnsw: HnswSettings) -> corpus_pb2.HnswSettings:
    return corpus_pb2.HnswSettings(m=hnsw.m, ef_construct=hnsw.ef_construct, ef_search=hnsw.ef_search)


def hnsw_from_proto(message: corpus_pb2.HnswSettings, has_field: bool) -> HnswSettings:
    return HnswSettings(m=message.m, ef_construct=message.ef_construct, ef_search=message.ef_search) if has_field else HnswSettings()


def vector_info_to_proto(info: VectorCollectionInfo) -> corpus_pb2.VectorCollectionInfo:
    return corpus_pb2.VectorCollectionInfo(
        collection_id=info.collection_id, dimension=info.dimension, distance=info.distance,
        fingerprint=info.fingerprint, state=_STATES[info.state], point_count=info.point_count,
        backend=info.backend, config_json=json.dumps(info.config),
    )


def vector_info_from_proto(message: corpus_pb2.VectorCollectionInfo) -> VectorCollectionInfo:
    return VectorCollectionInfo(
        collection_id=message.collection_id, dimension=message.dimension, distance=message.distance,
        fingerprint=message.fingerprint, state=_STATES_BACK[message.state], point_count=message.point_count,
        backend=message.backend, config=json.loads(message.config_json or "{}"),
    )


def sparse_to_proto(vectors: list[SparseVector]) -> common_pb2.SparseVectors:
    terms, indices, weights = pack_sparse(vectors)
    return common_pb2.SparseVectors(terms=terms, indices=indices, weights=weights)


def sparse_from_proto(message: common_pb2.SparseVectors, count: int) -> list[SparseVector]:
    """`count` sparse vectors (one per doc or query id); ValueError when the message disagrees."""
    vectors = [SparseVector(ids, weights) for ids, weights in unpack_sparse(message.terms, message.indices, message.weights)]
    if len(vectors) != count:
        raise ValueError(f"{len(vectors)} sparse vectors for {count} ids")
    return vectors
