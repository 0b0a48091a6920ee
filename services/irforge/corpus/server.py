"""The corpus service's gRPC door: decodes messages, calls CorpusService, encodes the answers."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator

import grpc

from irforge.common.grpc_errors import grpc_method, grpc_stream_method
from irforge.common.grpc_server import ServiceBinding
from irforge.common.packing import unpack_vectors
from irforge.corpus import protocol
from irforge.corpus.core import CorpusService
from irforge.corpus.errors import IngestAborted, IngestStreamsExhausted
from irforge.common.idle import IdleWatchdog, watched
from irforge.corpus.stream_limits import DEFAULT_INGEST_IDLE_TIMEOUT_S, DEFAULT_MAX_INGEST_STREAMS
from irforge.v1 import corpus_pb2, corpus_pb2_grpc


class CorpusServicer(corpus_pb2_grpc.CorpusServicer):
    """Each open stream holds one of the server's worker threads for as long as it lasts. Ingest
    streams are capped (`max_ingest_streams`, kept below the server's worker count) and cancelled
    when idle, so open or abandoned ingests can never take every thread from health checks and
    unary calls (a liveness probe that times out gets the pod restarted)."""

    def __init__(self, service: CorpusService, max_ingest_streams: int = DEFAULT_MAX_INGEST_STREAMS,
                 ingest_idle_timeout_s: float = DEFAULT_INGEST_IDLE_TIMEOUT_S):
        if max_ingest_streams < 1 or ingest_idle_timeout_s <= 0:
            raise ValueError("max_ingest_streams must be >= 1 and ingest_idle_timeout_s > 0")
        self.service = service
        self.ingest_idle_timeout_s = ingest_idle_timeout_s
        self._ingest_slots = threading.BoundedSemaphore(max_ingest_streams)
        self.max_ingest_streams = max_ingest_streams

    @grpc_method
    def CreateCorpus(self, request, context):
        settings = protocol.settings_from_proto(request.bm25, request.HasField("bm25"))
        return protocol.info_to_proto(self.service.create_corpus(request.corpus_id, request.fingerprint, settings))

    @grpc_method
    def GetCorpus(self, request, context):
        return protocol.info_to_proto(self.service.get_corpus(request.corpus_id))

    @grpc_method
    def DeleteCorpus(self, request, context):
        return corpus_pb2.DeleteCorpusResponse(deleted=self.service.delete_corpus(request.corpus_id))

    @grpc_stream_method
    def Ingest(self, request_iterator, context) -> Iterator[corpus_pb2.IngestProgress]:
        if not self._ingest_slots.acquire(blocking=False):
            raise IngestStreamsExhausted(
                f"this corpus service already has {self.max_ingest_streams} Ingest streams open; "
                "retry when one has finished (or raise --max-ingest-streams)"
            )
        try:
            with IdleWatchdog(context, self.ingest_idle_timeout_s) as watchdog:
                try:
                    yield from self._ingest(watched(request_iterator, watchdog))
                except grpc.RpcError:
                    if context.is_active():
                        raise
                    # The stream was cancelled while we read it: by its client (often because the
                    # client's own corpus file was bad) or by the watchdog. Not a server fault, so
                    # ABORTED, logged without a traceback, rather than INTERNAL.
                    why = "idle too long" if watchdog.fired else "cancelled by its client"
                    raise IngestAborted(f"the Ingest stream was {why}; nothing was committed") from None
        finally:
            self._ingest_slots.release()

    def _ingest(self, request_iterator) -> Iterator[corpus_pb2.IngestProgress]:
        first = next(request_iterator, None)
        if first is None:
            return
        if not first.corpus_id:
            raise ValueError("the first Ingest message must name the corpus_id")
        corpus_id = first.corpus_id
        rejected: list = []  # documents that could not be decoded, reported with the next progress

        def batches():
            # Yields the streamed documents, and ends normally (letting the backend commit) only
            # after the message with commit=true. A stream that just ends was aborted by its
            # client; gRPC may present that like a normal end, so it raises instead.
            for request in itertools.chain([first], request_iterator):
                if request.corpus_id and request.corpus_id != corpus_id:
                    raise ValueError(f"one Ingest stream feeds one corpus ({corpus_id!r}), got {request.corpus_id!r}")
                if request.documents:
                    documents, errors = protocol.documents_from_proto(request.documents)
                    rejected.extend(errors)
                    yield documents
                if request.commit:
                    if next(request_iterator, None) is not None:
                        raise ValueError("an Ingest stream must end with its commit message; got another message after it")
                    return
            raise IngestAborted(f"the Ingest stream for corpus {corpus_id!r} ended without a commit message; "
                                "nothing was committed")

        rejected_total = 0
        for progress in self.service.ingest(corpus_id, batches()):
            rejected_total += len(rejected)
            progress.errors = [*rejected, *progress.errors]
            progress.received += rejected_total
            progress.failed += rejected_total
            rejected.clear()
            yield protocol.progress_to_proto(progress)

    @grpc_method
    def Search(self, request, context):
        ranking = self.service.search(request.corpus_id, protocol.query_from_proto(request.query), request.k)
        return protocol.ranking_to_proto(request.query.query_id, ranking)

    @grpc_stream_method
    def BatchSearch(self, request, context):
        queries = (protocol.query_from_proto(q) for q in request.queries)
        for query_id, ranking in self.service.batch_search(request.corpus_id, queries, request.k):
            yield protocol.ranking_to_proto(query_id, ranking)


    # -- vector collections -----------------------------------------------------------------

    @grpc_method
    def CreateVectorCollection(self, request, context):
        info = self.service.create_vector_collection(
            request.collection_id, request.dimension, request.distance, request.fingerprint,
            protocol.hnsw_from_proto(request.hnsw, request.HasField("hnsw")),
        )
        return protocol.vector_info_to_proto(info)

    @grpc_method
    def GetVectorCollection(self, request, context):
        return protocol.vector_info_to_proto(self.service.get_vector_collection(request.collection_id))

    @grpc_method
    def DeleteVectorCollection(self, request, context):
        return corpus_pb2.DeleteCorpusResponse(deleted=self.service.delete_vector_collection(request.collection_id))

    @grpc_method
    def UpsertVectors(self, request_iterator, context):
        collection_id, upserted = "", 0
        for request in request_iterator:
            if request.collection_id and collection_id and request.collection_id != collection_id:
                raise ValueError(f"one UpsertVectors stream feeds one collection ({collection_id!r}), got {request.collection_id!r}")
            collection_id = collection_id or request.collection_id
            if not collection_id:
                raise ValueError("the first UpsertVectors message must name the collection_id")
            if request.doc_ids:
                vectors = unpack_vectors(request.vectors, len(request.doc_ids), request.dimension)
                upserted += self.service.upsert_vectors(collection_id, list(request.doc_ids), vectors)
        return corpus_pb2.UpsertVectorsResponse(upserted=upserted)

    @grpc_method
    def CommitVectors(self, request, context):
        return protocol.vector_info_to_proto(self.service.commit_vectors(request.collection_id))

    @grpc_stream_method
    def VectorSearch(self, request, context):
        vectors = unpack_vectors(request.vectors, len(request.query_ids), request.dimension)
        for query_id, ranking in self.service.vector_search(request.collection_id, list(request.query_ids), vectors, request.k, request.exact):
            yield protocol.ranking_to_proto(query_id, ranking)

    # -- sparse collections -----------------------------------------------------------------

    @grpc_method
    def CreateSparseCollection(self, request, context):
        info = self.service.create_sparse_collection(request.collection_id, request.vocabulary, request.fingerprint)
        return protocol.vector_info_to_proto(info)

    @grpc_method
    def UpsertSparseVectors(self, request_iterator, context):
        collection_id, upserted = "", 0
        for request in request_iterator:
            if request.collection_id and collection_id and request.collection_id != collection_id:
                raise ValueError(f"one UpsertSparseVectors stream feeds one collection ({collection_id!r}), got {request.collection_id!r}")
            collection_id = collection_id or request.collection_id
            if not collection_id:
                raise ValueError("the first UpsertSparseVectors message must name the collection_id")
            if request.doc_ids:
                vectors = protocol.sparse_from_proto(request.vectors, len(request.doc_ids))
                upserted += self.service.upsert_sparse_vectors(collection_id, list(request.doc_ids), vectors)
        return corpus_pb2.UpsertVectorsResponse(upserted=upserted)

    @grpc_stream_method
    def SparseSearch(self, request, context):
        vectors = protocol.sparse_from_proto(request.vectors, len(request.query_ids))
        for query_id, ranking in self.service.sparse_search(request.collection_id, list(request.query_ids), vectors, request.k):
            yield protocol.ranking_to_proto(query_id, ranking)


def binding(service: CorpusService, **limits) -> ServiceBinding:
    """`limits`: max_ingest_streams, ingest_idle_timeout_s (see CorpusServicer)."""
    return ServiceBinding(
        corpus_pb2.DESCRIPTOR.services_by_name["Corpus"].full_name,
        corpus_pb2_grpc.add_CorpusServicer_to_server,
        CorpusServicer(service, **limits),
    )
