"""Conversions between the encoder's plain types and the Encoder service's protobuf messages.

Vectors travel as one `bytes` field: count x dimension float32 values, little-endian, row-major
(numpy `tobytes` / `frombuffer`), about ten times cheaper to build and parse than `repeated float`.
A sparse model's vectors travel as irforge.v1.SparseVectors (terms per text, then every text's
int32 ids and float32 weights as bytes: irforge.common.packing), and its description says "sparse".
"""

from __future__ import annotations

import hashlib
import json

import numpy as np

from irforge.common.packing import pack_sparse, unpack_sparse
from irforge.corpus.vectors.base import SparseVector
from irforge.models.encoder import TextRole
from irforge.models.errors import EncodingError
from irforge.v1 import common_pb2, models_pb2

WIRE_DTYPE = np.dtype("<f4")  # little-endian float32, whatever the host's byte order

_ROLES = {TextRole.QUERY: models_pb2.TEXT_ROLE_QUERY, TextRole.PASSAGE: models_pb2.TEXT_ROLE_PASSAGE}
_ROLES_BACK = {v: k for k, v in _ROLES.items()}

# The keys of EncoderCore.identity: everything that changes a vector.
IDENTITY_KEYS = ("model", "revision", "query_prefix", "passage_prefix", "normalize", "max_seq_length", "dimension")
# The keys of SparseEncoderCore.identity.
SPARSE_IDENTITY_KEYS = ("kind", "model", "revision", "query_prefix", "passage_prefix", "max_seq_length",
                        "max_active_dims", "vocabulary")
DENSE, SPARSE = "dense", "sparse"


def identity_keys(kind: str) -> tuple[str, ...]:
    return SPARSE_IDENTITY_KEYS if kind == SPARSE else IDENTITY_KEYS
# Half precision changes vectors too; float32, the default, is left out so that the keys of every
# cache and collection made before precision was part of the identity stay valid.
DEFAULT_PRECISION = "float32"


def identity_of(description: dict) -> dict:
    """The identity within a describe() (or a received identity): the kind's identity keys, plus
    "precision" when it is not float32."""
    identity = {key: description[key] for key in identity_keys(description.get("kind", DENSE))}
    if description.get("precision", DEFAULT_PRECISION) != DEFAULT_PRECISION:
        identity["precision"] = description["precision"]
    # A CPU backend (ONNX Runtime, OpenVINO) changes vectors too; torch, the default, is left out likewise.
    for key in ("backend", "backend_precision"):
        if key in description:
            identity[key] = description[key]
    return identity


def identity_key(identity: dict) -> str:
    """The same key EncoderCore.identity_key computes, for an identity received from elsewhere."""
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:24]


# -- roles -------------------------------------------------------------------------------------

def role_to_proto(role: TextRole | str) -> int:
    return _ROLES[TextRole(role)]


def role_from_proto(value: int) -> TextRole:
    try:
        return _ROLES_BACK[value]
    except KeyError:
        raise ValueError(
            "role must be TEXT_ROLE_QUERY or TEXT_ROLE_PASSAGE (prefixes differ by role), "
            f"got {models_pb2.TextRole.Name(value) if value in models_pb2.TextRole.values() else value}"
        ) from None


# -- vectors -----------------------------------------------------------------------------------

def pack_vectors(vectors: np.ndarray) -> bytes:
    """count x dimension float32 values, little-endian, row-major."""
    return np.ascontiguousarray(vectors, dtype=WIRE_DTYPE).tobytes()


def unpack_vectors(data: bytes, count: int, dimension: int, source: str = "encoder") -> np.ndarray:
    """A writable float32 array (count, dimension) in native byte order. Raises EncodingError."""
    expected = count * dimension * WIRE_DTYPE.itemsize
    if count < 0 or dimension < 0 or len(data) != expected:
        raise EncodingError(
            f"{source} sent {len(data)} bytes of vectors for {count} x {dimension} float32 values ({expected} bytes)"
        )
    return np.frombuffer(data, dtype=WIRE_DTYPE).reshape(count, dimension).astype(np.float32)


def encode_response(vectors: np.ndarray) -> models_pb2.EncodeResponse:
    count, dimension = vectors.shape
    return models_pb2.EncodeResponse(count=count, dimension=dimension, vectors=pack_vectors(vectors))


def vectors_from_response(message: models_pb2.EncodeResponse, source: str = "encoder") -> np.ndarray:
    return unpack_vectors(message.vectors, message.count, message.dimension, source)


def sparse_to_proto(vectors: list[SparseVector]) -> common_pb2.SparseVectors:
    terms, indices, weights = pack_sparse(vectors)
    return common_pb2.SparseVectors(terms=terms, indices=indices, weights=weights)


def sparse_from_proto(message: common_pb2.SparseVectors, source: str = "encoder") -> list[SparseVector]:
    """One SparseVector per text. Raises EncodingError when the byte lengths do not add up."""
    try:
        return [SparseVector(ids, weights) for ids, weights in unpack_sparse(message.terms, message.indices, message.weights)]
    except ValueError as error:
        raise EncodingError(f"{source} sent malformed sparse vectors: {error}") from None


def encode_sparse_response(vectors: list[SparseVector], vocabulary: int) -> models_pb2.EncodeResponse:
    return models_pb2.EncodeResponse(count=len(vectors), dimension=vocabulary, sparse=sparse_to_proto(vectors))


def encode_request(texts: list[str], role: TextRole | str, model: str = "") -> models_pb2.EncodeRequest:
    return models_pb2.EncodeRequest(model=model, texts=texts, role=role_to_proto(role))


# -- descriptions ------------------------------------------------------------------------------

def description_to_proto(description: dict) -> models_pb2.ModelDescription:
    """From an encoder's describe() (EncoderCore, SparseEncoderCore, RayEncoder): the identity
    travels as JSON; a sparse model's dimension is its vocabulary."""
    kind = description.get("kind", DENSE)
    identity = identity_of(description)
    dimension = description["vocabulary"] if kind == SPARSE else description["dimension"]
    return models_pb2.ModelDescription(
        model=description["model"], dimension=int(dimension), distance=description["distance"],
        identity_json=json.dumps(identity, sort_keys=True), kind=kind,
    )


def description_from_proto(message: models_pb2.ModelDescription) -> dict:
    """describe()'s shape: the identity's keys plus "distance" (a sparse identity says its "kind")."""
    kind = message.kind or DENSE
    identity = json.loads(message.identity_json or "{}")
    missing = [key for key in identity_keys(kind) if key not in identity]
    if missing:
        raise EncodingError(f"model description of {message.model!r} lacks identity keys {missing}")
    return {**identity, "distance": message.distance}
