"""Encoder clients over gRPC with EncoderCore's surface (identity, dimension, describe, encode)
and its errors (ModelNotFound, EncodingError, ValueError come back as themselves):
RemoteEncoder for a dense model, RemoteSparseEncoder (SparseEncoderCore's surface) for a sparse one.
Each refuses a server whose model is of the other kind (WrongModelKind), at connection time."""

from __future__ import annotations

from typing import Self

import grpc
import numpy as np

from irforge.common.grpc_errors import raise_from_rpc
from irforge.common.grpc_server import open_channel
from irforge.models import protocol
from irforge.models.encoder import TextRole, check_vectors
from irforge.models.errors import WrongModelKind
from irforge.models.sparse_encoder import check_sparse_vectors
from irforge.v1 import models_pb2, models_pb2_grpc

# Texts per Encode call. A whole batch goes in one call up to this size (4,096 x 384-d float32 is
# 6 MiB, well under the 64 MiB message cap); larger lists are split, in order.
MAX_TEXTS_PER_CALL = 4096


class RemoteEncoder:
    kind = protocol.DENSE

    def __init__(self, address: str, model: str = "", timeout: float = 600.0, max_texts_per_call: int = MAX_TEXTS_PER_CALL):
        self.address = address
        self.model = model
        self.timeout = timeout
        self.max_texts_per_call = max_texts_per_call
        self._channel = open_channel(address, channel="encoder")
        self._stub = models_pb2_grpc.EncoderStub(self._channel)
        reply = self._call(self._stub.DescribeModel, models_pb2.DescribeModelRequest(model=model))
        served = reply.kind or protocol.DENSE
        if served != self.kind:
            self.close()
            wanted = "--retriever sparse (or --hybrid-with sparse)" if served == protocol.SPARSE else "--retriever dense or hybrid"
            raise WrongModelKind(f"encoder server {address} serves {reply.model!r}, a {served} model; "
                                 f"{self.kind} vectors are needed here (a {served} model suits {wanted})")
        self._description = protocol.description_from_proto(reply)
        self.name = reply.model
        self.dimension = int(reply.dimension)

    def _call(self, method, request):
        try:
            return method(request, timeout=self.timeout)
        except grpc.RpcError as error:
            raise_from_rpc(error, self.address, channel="encoder")

    @property
    def identity(self) -> dict:
        return protocol.identity_of({**self._description, "kind": self.kind})

    @property
    def identity_key(self) -> str:
        return protocol.identity_key(self.identity)

    def describe(self) -> dict:
        return {**self._description, "server": self.address}

    def encode(self, texts: list[str], role: TextRole) -> np.ndarray:
        """float32 array (len(texts), dimension); the server adds the role's prefix."""
        texts = list(texts)
        parts = [self._encode_call(texts[start:start + self.max_texts_per_call], role)
                 for start in range(0, len(texts), self.max_texts_per_call)] or [self._encode_call([], role)]
        vectors = parts[0] if len(parts) == 1 else np.concatenate(parts)
        check_vectors(vectors, len(texts), self.dimension, f"encoder server {self.address}")
        return vectors

    def _encode_call(self, texts: list[str], role: TextRole) -> np.ndarray:
        reply = self._call(self._stub.Encode, protocol.encode_request(texts, role, self.model))
        return protocol.vectors_from_response(reply, f"encoder server {self.address}")

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class RemoteSparseEncoder(RemoteEncoder):
    """A served sparse encoder: encode answers one SparseVector per text; `dimension` is the
    vocabulary; the identity is the server's SparseEncoderCore identity (cache and collection keys)."""

    kind = protocol.SPARSE

    def encode(self, texts: list[str], role: TextRole) -> list:
        texts = list(texts)
        vectors = [vector for start in range(0, len(texts), self.max_texts_per_call)
                   for vector in self._encode_call(texts[start:start + self.max_texts_per_call], role)]
        return check_sparse_vectors(vectors, len(texts), self.dimension, f"encoder server {self.address}")

    def _encode_call(self, texts: list[str], role: TextRole) -> list:
        reply = self._call(self._stub.Encode, protocol.encode_request(texts, role, self.model))
        return protocol.sparse_from_proto(reply.sparse, f"encoder server {self.address}")


def remote_encoder(address: str, sparse: bool, **options) -> RemoteEncoder:
    """The client of the kind a run needs (options as RemoteEncoder's)."""
    return (RemoteSparseEncoder if sparse else RemoteEncoder)(address, **options)
