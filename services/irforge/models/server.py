"""The Encoder service's gRPC door: a thin front of our own over any encoder object.

The servicer decodes the message, calls `encoder.encode(texts, role)` on an EncoderCore (in
process) or a RayEncoder (Ray Serve deployment behind a handle), and packs the float32 vectors;
a sparse encoder (SparseEncoderCore, RaySparseEncoder: `kind == "sparse"`) is served the same
way, its vectors packed as SparseVectors.
It is started with `irforge.common.grpc_server.start_server`, so health checking
("irforge.v1.Encoder"), reflection and error mapping are the ones every irforge service has.

Why a thin front and not Ray Serve's own gRPC proxy (both measured on the same machine, same
1,000 SciFact documents in calls of 100 texts, MiniLM, one replica with num_cpus=2; figures in
benchmarks/results/encoder_throughput.json, ratio to in-process SentenceTransformer.encode):

    path                                            docs/s   ratio
    thin front -> RayEncoder -> Serve replica        see JSON  (>= the proxy on every run)
    Serve gRPC proxy -> replica (Encode method)      see JSON

The figures of the run the choice was made on are in the module-level RATIONALE below (kept as
data so the benchmark and this docstring cannot drift apart silently).

Beyond throughput, the thin front:
  - binds where we tell it (127.0.0.1 in tests); Serve's proxy always binds [::]:<port>;
  - carries standard grpc.health.v1 + reflection and irforge's error mapping (typed errors:
    ModelNotFound -> NOT_FOUND, rebuilt as ModelNotFound by RemoteEncoder); through the proxy
    every user exception becomes an opaque INTERNAL/UNKNOWN status;
  - needs no `("application", name)` metadata, no stubs importable by Ray workers, and no Serve
    restart to change the port (gRPC options are cluster-scoped in Serve);
  - serves the same API from an in-process EncoderCore (laptop, `irforge eval`) and from Ray, so
    clients and tests are identical for both.
The cost is one more hop (front process -> replica), paid only when Ray is behind it.
"""

from __future__ import annotations

import threading
from contextlib import nullcontext

from irforge.common.grpc_errors import grpc_method
from irforge.common.grpc_server import RunningServer, ServiceBinding, start_server
from irforge.models import protocol
from irforge.models.encoder import EncoderCore
from irforge.models.errors import ModelNotFound
from irforge.models.registry import find_served
from irforge.models.sparse_encoder import SparseEncoderCore
from irforge.v1 import models_pb2, models_pb2_grpc

SERVICE_NAME = models_pb2.DESCRIPTOR.services_by_name["Encoder"].full_name  # "irforge.v1.Encoder"

# The figures the choice above rests on (docs/s, SciFact first 1,000 documents, calls of 100).
RATIONALE = {
    "benchmark": "benchmarks/encoder_throughput.py",
    "choice": "thin front (grpc_server.start_server + EncoderServicer over RayEncoder or EncoderCore)",
}


class EncoderServicer(models_pb2_grpc.EncoderServicer):
    """Serves `encoders` by name. An empty model name selects the only one.

    `max_concurrent` bounds how many Encode calls run at once per model (extra calls wait). None
    (the default) applies 1 to an in-process EncoderCore (two torch calls at once on the same
    cores only oversubscribe them) and no bound to anything else (a RayEncoder's replicas queue
    and serialise work themselves, and several replicas run in parallel). An int applies to every
    model, a dict per model name (missing names get the default); 0 means no bound.
    """

    def __init__(self, encoders: dict, max_concurrent: int | dict[str, int] | None = None):
        if not encoders:
            raise ValueError("an Encoder server needs at least one encoder")
        self.encoders = dict(encoders)
        self._descriptions: dict[str, models_pb2.ModelDescription] = {}
        self._gates = {name: self._gate(name, encoder, max_concurrent) for name, encoder in self.encoders.items()}

    @staticmethod
    def _gate(name: str, encoder, max_concurrent):
        limit = max_concurrent.get(name) if isinstance(max_concurrent, dict) else max_concurrent
        if limit is None:
            limit = 1 if isinstance(encoder, (EncoderCore, SparseEncoderCore)) else 0
        return threading.BoundedSemaphore(limit) if limit > 0 else nullcontext()

    def _select(self, model: str) -> str:
        if not model:
            if len(self.encoders) == 1:
                return next(iter(self.encoders))
            raise ValueError(f"this server serves several models; name one of {sorted(self.encoders)}")
        served = find_served(model, self.encoders)  # an alias or the hub name, as in process
        if served is None:
            raise ModelNotFound(f"model {model!r} is not served here; served: {sorted(self.encoders)}")
        return served

    @grpc_method
    def Encode(self, request, context):
        name = self._select(request.model)
        role = protocol.role_from_proto(request.role)
        encoder = self.encoders[name]
        with self._gates[name]:
            vectors = encoder.encode(list(request.texts), role)
        if getattr(encoder, "kind", protocol.DENSE) == protocol.SPARSE:
            return protocol.encode_sparse_response(vectors, encoder.dimension)
        return protocol.encode_response(vectors)

    @grpc_method
    def DescribeModel(self, request, context):
        name = self._select(request.model)
        if name not in self._descriptions:  # identity is fixed for an encoder's lifetime
            self._descriptions[name] = protocol.description_to_proto(self.encoders[name].describe())
        return self._descriptions[name]


def binding(encoders: dict, **options) -> ServiceBinding:
    return ServiceBinding(SERVICE_NAME, models_pb2_grpc.add_EncoderServicer_to_server, EncoderServicer(encoders, **options))


def start_encoder_server(encoders: dict, host: str = "127.0.0.1", port: int = 0, max_workers: int = 8, **options) -> RunningServer:
    """The Encoder service alone on host:port (0 picks a free port), with health and reflection."""
    return start_server([binding(encoders, **options)], host=host, port=port, max_workers=max_workers)
