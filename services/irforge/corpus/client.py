"""A corpus client over gRPC with the same methods and errors as the in-process CorpusService."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import grpc
import numpy as np

from irforge.common.grpc_errors import RequestStream, raise_from_rpc
from irforge.common.grpc_server import open_channel
from irforge.common.iterables import chunked
from irforge.common.packing import pack_vectors
from irforge.corpus import protocol
from irforge.corpus.lexical.base import CorpusInfo, IngestProgress
from irforge.corpus.errors import CorpusNotFound
from irforge.corpus.settings import Bm25Settings
from irforge.corpus.vectors.base import HnswSettings, SparseVector, VectorCollectionInfo
from irforge.data.types import Document, Query
from irforge.ranking import Ranking
from irforge.v1 import corpus_pb2, corpus_pb2_grpc

QUERIES_PER_REQUEST = 1000  # BatchSearch request size: keeps each request message small


class RemoteCorpus:
    def __init__(self, address: str, timeout: float = 600.0, ingest_timeout: float | None = None):
        self.address = address
        self.timeout = timeout
        # Ingest's stream lasts as long as the corpus; None leaves it open-ended (interactive use),
        # jobs set a deadline so a silent service can never hold them forever.
        self.ingest_timeout = ingest_timeout
        self._channel = open_channel(address, channel="corpus")
        self._stub = corpus_pb2_grpc.CorpusStub(self._channel)

    def _call(self, method, request):
        try:
            return method(request, timeout=self.timeout)
        except grpc.RpcError as error:
            raise_from_rpc(error, self.address, channel="corpus")

    def _stream(self, responses) -> Iterator:
        try:
            yield from responses
        except grpc.RpcError as error:
            raise_from_rpc(error, self.address, channel="corpus")

    def create_corpus(self, corpus_id: str, fingerprint: str, settings: Bm25Settings) -> CorpusInfo:
        request = corpus_pb2.CreateCorpusRequest(
            corpus_id=corpus_id, fingerprint=fingerprint, bm25=protocol.settings_to_proto(settings),
        )
        return protocol.info_from_proto(self._call(self._stub.CreateCorpus, request))

    def get_corpus(self, corpus_id: str) -> CorpusInfo:
        return protocol.info_from_proto(self._call(self._stub.GetCorpus, corpus_pb2.GetCorpusRequest(corpus_id=corpus_id)))

    def find_corpus(self, corpus_id: str) -> CorpusInfo | None:
        try:
            return self.get_corpus(corpus_id)
        except CorpusNotFound:
            return None

    def delete_corpus(self, corpus_id: str) -> bool:
        return self._call(self._stub.DeleteCorpus, corpus_pb2.DeleteCorpusRequest(corpus_id=corpus_id)).deleted

    def ingest(self, corpus_id: str, batches: Iterable[list[Document]]) -> Iterator[IngestProgress]:
        def requests():
            # The commit message goes last, and only when `batches` ended normally: a failure
            # here (a bad corpus line, a cancel) ends the stream without it, and the server then
            # commits nothing, however gRPC presents the end of the stream.
            yield corpus_pb2.IngestRequest(corpus_id=corpus_id)
            for batch in batches:
                yield corpus_pb2.IngestRequest(documents=[protocol.document_to_proto(d) for d in batch])
            yield corpus_pb2.IngestRequest(commit=True)

        sent = RequestStream(requests())
        try:
            for message in self._stub.Ingest(iter(sent), timeout=self.ingest_timeout):
                yield protocol.progress_from_proto(message)
        except grpc.RpcError as error:
            raise_from_rpc(error, self.address, sent=sent, channel="corpus")   # the real error of a bad corpus line, not gRPC's

    def search(self, corpus_id: str, query: Query, k: int) -> Ranking:
        request = corpus_pb2.SearchRequest(corpus_id=corpus_id, query=protocol.query_to_proto(query), k=k)
        return protocol.ranking_from_proto(self._call(self._stub.Search, request))

    def batch_search(self, corpus_id: str, queries: Iterable[Query], k: int) -> Iterator[tuple[str, Ranking]]:
        for chunk in chunked(queries, QUERIES_PER_REQUEST):
            request = corpus_pb2.BatchSearchRequest(corpus_id=corpus_id, queries=[protocol.query_to_proto(q) for q in chunk], k=k)
            for message in self._stream(self._stub.BatchSearch(request, timeout=self.timeout)):
                yield message.query_id, protocol.ranking_from_proto(message)

    # -- vector collections -----------------------------------------------------------------

    def create_vector_collection(self, collection_id: str, dimension: int, distance: str, fingerprint: str,
                                 hnsw: HnswSettings = HnswSettings()) -> VectorCollectionInfo:
        request = corpus_pb2.CreateVectorCollectionRequest(
            collection_id=collection_id, dimension=dimension, distance=distance, fingerprint=fingerprint,
            hnsw=protocol.hnsw_to_proto(hnsw),
        )
        return protocol.vector_info_from_proto(self._call(self._stub.CreateVectorCollection, request))

    def get_vector_collection(self, collection_id: str) -> VectorCollectionInfo:
        request = corpus_pb2.GetVectorCollectionRequest(collection_id=collection_id)
        return protocol.vector_info_from_proto(self._call(self._stub.GetVectorCollection, request))

    def find_vector_collection(self, collection_id: str) -> VectorCollectionInfo | None:
        try:
            return self.get_vector_collection(collection_id)
        except CorpusNotFound:
            return None

    def delete_vector_collection(self, collection_id: str) -> bool:
        request = corpus_pb2.GetVectorCollectionRequest(collection_id=collection_id)
        return self._call(self._stub.DeleteVectorCollection, request).deleted

    def upsert_vectors(self, collection_id: str, doc_ids: list[str], vectors: np.ndarray) -> int:
        request = corpus_pb2.UpsertVectorsRequest(
            collection_id=collection_id, doc_ids=doc_ids, dimension=vectors.shape[1], vectors=pack_vectors(vectors),
        )
        return self._call(self._stub.UpsertVectors, iter([request])).upserted

    def commit_vectors(self, collection_id: str) -> VectorCollectionInfo:
        request = corpus_pb2.GetVectorCollectionRequest(collection_id=collection_id)
        return protocol.vector_info_from_proto(self._call(self._stub.CommitVectors, request))

    def vector_search(self, collection_id: str, query_ids: list[str], vectors: np.ndarray, k: int,
                      exact: bool = True) -> Iterator[tuple[str, Ranking]]:
        for start in range(0, len(query_ids), QUERIES_PER_REQUEST):
            chunk = vectors[start:start + QUERIES_PER_REQUEST]
            request = corpus_pb2.VectorSearchRequest(
                collection_id=collection_id, query_ids=query_ids[start:start + QUERIES_PER_REQUEST],
                dimension=chunk.shape[1], vectors=pack_vectors(chunk), k=k, exact=exact,
            )
            for message in self._stream(self._stub.VectorSearch(request, timeout=self.timeout)):
                yield message.query_id, protocol.ranking_from_proto(message)

    # -- sparse collections -----------------------------------------------------------------

    def create_sparse_collection(self, collection_id: str, vocabulary: int, fingerprint: str) -> VectorCollectionInfo:
        request = corpus_pb2.CreateSparseCollectionRequest(collection_id=collection_id, vocabulary=vocabulary,
                                                           fingerprint=fingerprint)
        return protocol.vector_info_from_proto(self._call(self._stub.CreateSparseCollection, request))

    def upsert_sparse_vectors(self, collection_id: str, doc_ids: list[str], vectors: list[SparseVector]) -> int:
        request = corpus_pb2.UpsertSparseVectorsRequest(collection_id=collection_id, doc_ids=doc_ids,
                                                        vectors=protocol.sparse_to_proto(vectors))
        return self._call(self._stub.UpsertSparseVectors, iter([request])).upserted

    def sparse_search(self, collection_id: str, query_ids: list[str], vectors: list[SparseVector],
                      k: int) -> Iterator[tuple[str, Ranking]]:
        if len(query_ids) != len(vectors):
            raise ValueError(f"{len(query_ids)} query ids for {len(vectors)} query vectors")
        for start in range(0, len(query_ids), QUERIES_PER_REQUEST):
            request = corpus_pb2.SparseSearchRequest(
                collection_id=collection_id, query_ids=query_ids[start:start + QUERIES_PER_REQUEST],
                vectors=protocol.sparse_to_proto(vectors[start:start + QUERIES_PER_REQUEST]), k=k,
            )
            for message in self._stream(self._stub.SparseSearch(request, timeout=self.timeout)):
                yield message.query_id, protocol.ranking_from_proto(message)

    def close(self) -> None:
        self._channel.close()
