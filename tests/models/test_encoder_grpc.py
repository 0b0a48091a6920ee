"""The Encoder gRPC service (thin front over a real EncoderCore): vectors identical to in-process
ones bit for bit, the model's identity, health, typed errors across the wire, empty batches."""

from __future__ import annotations

import itertools

import grpc
import numpy as np
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from irforge.common.grpc_server import open_channel, wait_until_serving
from irforge.data import BeirDataset
from irforge.models import protocol
from irforge.models.client import RemoteEncoder
from irforge.models.encoder import EncoderCore, EncoderSpec, TextRole
from irforge.models.errors import EncodingError, ModelNotFound
from irforge.models.server import SERVICE_NAME, start_encoder_server
from irforge.v1 import models_pb2, models_pb2_grpc

MODEL = "all-MiniLM-L6-v2"


@pytest.fixture(scope="module")
def core() -> EncoderCore:
    return EncoderCore(EncoderSpec(MODEL))  # ~7 s: loaded once for the module


@pytest.fixture(scope="module")
def server(core):
    running = start_encoder_server({MODEL: core})
    yield f"127.0.0.1:{running.port}"
    running.stop(grace=0)


@pytest.fixture(scope="module")
def texts(beir_dir) -> list[str]:
    documents = itertools.islice(BeirDataset.open(beir_dir / "scifact").corpus(), 40)
    return [document.full_text for document in documents]


@pytest.fixture(scope="module")
def remote(server):
    with RemoteEncoder(server) as encoder:
        yield encoder


def test_vectors_through_grpc_equal_in_process_bit_for_bit(core, remote, texts):
    for role, batch in [(TextRole.PASSAGE, texts), (TextRole.QUERY, ["what causes scurvy?", "p53 and apoptosis"])]:
        local = core.encode(batch, role)
        through = remote.encode(batch, role)
        assert through.dtype == np.float32 and through.shape == (len(batch), 384)
        assert through.tobytes() == local.tobytes()


def test_large_lists_are_split_in_order(core, server, texts):
    with RemoteEncoder(server, max_texts_per_call=16) as split:
        through = split.encode(texts, TextRole.PASSAGE)
    local = np.concatenate([core.encode(texts[i:i + 16], TextRole.PASSAGE) for i in range(0, len(texts), 16)])
    assert through.tobytes() == local.tobytes()


def test_describe_model_gives_the_identity(core, remote, server):
    assert remote.identity == core.identity
    assert remote.identity_key == core.identity_key
    assert remote.dimension == core.dimension == 384
    assert remote.name == core.name == "sentence-transformers/all-MiniLM-L6-v2"
    assert remote.describe()["distance"] == "cosine"
    with RemoteEncoder(server, model=MODEL) as named:  # the served name works as well as ""
        assert named.identity_key == core.identity_key


def test_health_reports_the_encoder_serving(server):
    wait_until_serving(server, SERVICE_NAME)
    with open_channel(server) as channel:
        reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service="irforge.v1.Encoder"))
    assert reply.status == health_pb2.HealthCheckResponse.SERVING


def test_unknown_model_is_not_found(server):
    with pytest.raises(ModelNotFound, match=r"model 'e5-huge' is not served here; served: \['all-MiniLM-L6-v2'\]"):
        RemoteEncoder(server, model="e5-huge")
    with open_channel(server) as channel, pytest.raises(grpc.RpcError) as error:
        models_pb2_grpc.EncoderStub(channel).Encode(
            models_pb2.EncodeRequest(model="e5-huge", texts=["x"], role=models_pb2.TEXT_ROLE_QUERY))
    assert error.value.code() == grpc.StatusCode.NOT_FOUND
    assert "e5-huge" in error.value.details()


def test_empty_batch(remote, server):
    vectors = remote.encode([], TextRole.PASSAGE)
    assert vectors.shape == (0, 384) and vectors.dtype == np.float32
    with open_channel(server) as channel:
        reply = models_pb2_grpc.EncoderStub(channel).Encode(models_pb2.EncodeRequest(role=models_pb2.TEXT_ROLE_PASSAGE))
    assert (reply.count, reply.dimension, reply.vectors) == (0, 384, b"")


def test_role_must_be_given(server):
    with open_channel(server) as channel, pytest.raises(grpc.RpcError) as error:
        models_pb2_grpc.EncoderStub(channel).Encode(models_pb2.EncodeRequest(texts=["x"]))
    assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "TEXT_ROLE_UNSPECIFIED" in error.value.details()


def test_several_models_need_a_name(core):
    running = start_encoder_server({"a": core, "b": core})
    try:
        with pytest.raises(ValueError, match=r"several models; name one of \['a', 'b'\]"):
            RemoteEncoder(f"127.0.0.1:{running.port}")
        with RemoteEncoder(f"127.0.0.1:{running.port}", model="b") as named:
            assert named.identity == core.identity
    finally:
        running.stop(grace=0)


def test_vector_bytes_are_little_endian_float32():
    vectors = np.array([[1.0, -2.5], [0.25, 3.0]], dtype=np.float32)
    data = protocol.pack_vectors(vectors.astype(">f4"))  # any input byte order goes out little-endian
    assert data == vectors.astype("<f4").tobytes()
    back = protocol.unpack_vectors(data, 2, 2)
    assert back.dtype == np.float32 and back.flags.writeable and np.array_equal(back, vectors)
    with pytest.raises(EncodingError, match="sent 16 bytes of vectors for 3 x 2"):
        protocol.unpack_vectors(data, 3, 2)
    assert protocol.role_from_proto(protocol.role_to_proto(TextRole.QUERY)) is TextRole.QUERY
    assert protocol.role_from_proto(protocol.role_to_proto("passage")) is TextRole.PASSAGE


def test_half_precision_is_part_of_the_identity_and_float32_keys_stay_as_they_were():
    """fp16/bf16 vectors differ from fp32's, so they must never share a cache or a collection;
    float32 is left out of the identity so that every key made before stays valid."""
    base = {"model": "m", "revision": "r", "query_prefix": "", "passage_prefix": "", "normalize": True,
            "max_seq_length": 256, "dimension": 384, "distance": "Cosine"}
    keys = {p: protocol.identity_key(protocol.identity_of({**base, "precision": p})) for p in ("float32", "float16", "bfloat16")}
    assert keys["float32"] == protocol.identity_key({k: base[k] for k in protocol.IDENTITY_KEYS})
    assert len(set(keys.values())) == 3
    received = protocol.description_from_proto(protocol.description_to_proto({**base, "precision": "bfloat16"}))
    assert protocol.identity_of(received) == protocol.identity_of({**base, "precision": "bfloat16"})
