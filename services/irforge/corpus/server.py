"""The corpus service's gRPC door: decodes messages, calls CorpusService, encodes the answers."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from irforge.common.grpc_errors import grpc_method, grpc_stream_method
from irforge.common.grpc_server import ServiceBinding
from irforge.common.packing import unpack_vectors
from irforge.corpus import protocol
from irforge.corpus.core import CorpusService
from irforge.v1 import corpus_pb2, corpus_pb2_grpc


class CorpusServicer(corpus_pb2_grpc.CorpusServicer):
    def __init__(self, service: CorpusService):
        self.service = service

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
        first = next(request_iterator, None)
        if first is None:
            return
        if not first.corpus_id:
            raise ValueError("the first Ingest message must name the corpus_id")

        def batches():
            # A message without documents (e.g. the opening one naming the corpus) is no batch.
            for request in itertools.chain([first], request_iterator):
                if request.corpus_id and request.corpus_id != first.corpus_id:
                    raise ValueError(f"one Ingest stream feeds one corpus ({first.corpus_id!r}), got {request.corpus_id!r}")
                if request.documents:
                    yield [protocol.document_from_proto(d) for d in request.documents]

        for progress in self.service.ingest(first.corpus_id, batches()):
            yield protocol.progress_to_proto(progress)

    @grpc_method
    def Search(self, request, context):
        hits = self.service.search(request.corpus_id, protocol.query_from_proto(request.query), request.k)
        return protocol.hits_to_proto(request.query.query_id, hits)

    @grpc_stream_method
    def BatchSearch(self, request, context):
        queries = (protocol.query_from_proto(q) for q in request.queries)
        for query_id, hits in self.service.batch_search(request.corpus_id, queries, request.k):
            yield protocol.hits_to_proto(query_id, hits)


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
        for query_id, hits in self.service.vector_search(request.collection_id, list(request.query_ids), vectors, request.k, request.exact):
            yield protocol.hits_to_proto(query_id, hits)


def binding(service: CorpusService) -> ServiceBinding:
    return ServiceBinding(
        corpus_pb2.DESCRIPTOR.services_by_name["Corpus"].full_name,
        corpus_pb2_grpc.add_CorpusServicer_to_server,
        CorpusServicer(service),
    )
