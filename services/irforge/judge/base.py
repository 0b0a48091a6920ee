"""The judge's contract: graded relevance labels 0-3 for (query, document) pairs, with provenance.

Every backend (an LLM behind an OpenAI-compatible chat endpoint, the embedded encoder judge)
implements `JudgeBackend`; everything above it (the store, the gRPC service, hole filling,
calibration, quality control) sees only these types.

The scale is AIR-Bench's (see ../shared/PRODUCT.md section 4):
    0 not relevant · 1 superficially relevant but actually not · 2 somewhat relevant · 3 relevant

A judgement that is not a label says so: `verdict` is UNPARSED (the judge answered something
that is not one of 0-3; `raw_output` keeps what it said) or FAILED (no answer at all: endpoint
down, budget spent). Its `label` is then None. Nothing ever turns a non-answer into 0.
"""

from __future__ import annotations

import enum
import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

LABEL_SCALE: dict[int, str] = {
    0: "not relevant",
    1: "superficially relevant but actually not",
    2: "somewhat relevant",
    3: "relevant",
}
# Binary measures and quality control count a label at or above this as relevant (configurable).
DEFAULT_RELEVANT_FROM = 2


def text_sha256(text: str) -> str:
    # surrogatepass: lone surrogates are legal in JSON (corpus files) and must hash, not crash.
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def identity_sha256(identity: dict[str, str]) -> str:
    """A judge's identity (backend, model, template hash, thresholds...) as one stable key."""
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class JudgePair:
    query_id: str
    query: str          # the query text as the judge sees it
    doc_id: str
    document: str       # Document.full_text: title + " " + text


class Verdict(str, enum.Enum):
    LABELLED = "labelled"
    UNPARSED = "unparsed"   # answered, but not a valid label after every retry
    FAILED = "failed"       # never answered (unavailable, budget spent, request refused)


@dataclass(frozen=True, slots=True)
class Judgement:
    query_id: str
    doc_id: str
    verdict: Verdict
    label: int | None               # 0-3 when verdict is LABELLED, else None
    raw_output: str                 # the judge's last answer, verbatim ("" when it never answered)
    backend: str                    # "openai-chat", "embedded"
    model: str
    template_sha256: str            # prompt template (LLM) or thresholds (embedded) hash
    judge_id: str                   # identity_sha256(backend.identity())
    calls: int = 0                  # requests actually sent for this pair (0 when from the store)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    score: float | None = None      # the embedded judge's similarity, for audit
    error: str = ""                 # why FAILED / what the last unparsed answer was missing
    created_at: str = ""            # ISO 8601 UTC
    record_id: int | None = None    # the store's row: provenance of a judged qrels line
    from_store: bool = False

    @property
    def is_label(self) -> bool:
        return self.verdict is Verdict.LABELLED


@dataclass
class JudgeStats:
    """What one judge() call cost: `calls` counts requests actually sent (a re-run shows 0)."""

    pairs: int = 0
    from_store: int = 0
    calls: int = 0
    labelled: int = 0
    unparsed: int = 0
    failed: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0

    def add(self, judgement: Judgement) -> None:
        self.pairs += 1
        self.from_store += judgement.from_store
        self.calls += judgement.calls
        self.labelled += judgement.verdict is Verdict.LABELLED
        self.unparsed += judgement.verdict is Verdict.UNPARSED
        self.failed += judgement.verdict is Verdict.FAILED
        self.prompt_tokens += judgement.prompt_tokens
        self.completion_tokens += judgement.completion_tokens
        self.cost_usd += judgement.cost_usd

    def as_dict(self) -> dict:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


Progress = Callable[[int], None]   # called with the number of pairs just finished


class JudgeBackend(Protocol):
    def identity(self) -> dict[str, str]:
        """backend, model, template_sha256 (and anything else that changes answers)."""

    def judge(self, pairs: Sequence[JudgePair], progress: Progress | None = None) -> list[Judgement]:
        """One Judgement per pair, in order. Retries live inside the backend; an unparsed or
        failed pair is reported as such, never raised, so one bad answer never loses a batch.
        Raises only for errors that make every further call pointless (bad key, budget spent is
        reported per pair as FAILED)."""

    def close(self) -> None: ...


@dataclass
class JudgeOutcome:
    judgements: list[Judgement] = field(default_factory=list)
    stats: JudgeStats = field(default_factory=JudgeStats)
