"""BM25 settings shared by every lexical backend, recorded in every result."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Bm25Settings:
    # Anserini/Pyserini's BM25 defaults, the "BM25 flat" reference column of BEIR reproductions.
    k1: float = 0.9
    b: float = 0.4

    def __post_init__(self):
        if not self.k1 >= 0:
            raise ValueError(f"BM25 k1 must be >= 0, got {self.k1}")
        if not 0 <= self.b <= 1:
            raise ValueError(f"BM25 b must be within 0..1, got {self.b}")

    def as_dict(self) -> dict:
        return asdict(self)
