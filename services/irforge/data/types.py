"""Plain types shared by the data layer, the services and the CLI."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# query id -> doc id -> graded relevance
Qrels = dict[str, dict[str, int]]
# query id -> doc id -> score
Run = dict[str, dict[str, float]]


@dataclass(frozen=True, slots=True)
class Document:
    doc_id: str
    title: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def full_text(self) -> str:
        """title + " " + text, stripped: the BEIR/MTEB convention for models."""
        return f"{self.title} {self.text}".strip()


@dataclass(frozen=True, slots=True)
class Query:
    query_id: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)
    # Instruction-following evaluation: `text` is what text-only models see (the query and its
    # instruction composed, e.g. query + " " + instruction); retrievers whose contract carries the
    # instruction as its own field (search endpoints) send `bare_text` and `instruction` instead.
    # None outside instruction evaluation.
    instruction: str | None = None
    bare_text: str | None = None

    @property
    def parts(self) -> tuple[str, str | None]:
        """(query without instruction, instruction or None): what a search endpoint receives."""
        return (self.text, None) if self.instruction is None else (self.bare_text or "", self.instruction)
