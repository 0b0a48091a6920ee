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
