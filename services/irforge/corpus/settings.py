"""BM25 settings shared by every lexical backend, recorded in every result."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from irforge.analysis import DEFAULT_LANGUAGE, analyzer_for
from irforge.common.checks import check_range

# Sensible ranges, checked wherever settings enter (flags, job specs, qc reranker specs): k1 past
# 10 no longer saturates anything (Anserini/Pyserini sweeps stay below 3), and 1e16 or inf gave
# broken index names or every score 0 without a word.
K1_RANGE = (0.0, 10.0)
B_RANGE = (0.0, 1.0)


@dataclass(frozen=True)
class Bm25Settings:
    # Anserini/Pyserini's BM25 defaults, the "BM25 flat" reference column of BEIR reproductions.
    k1: float = 0.9
    b: float = 0.4
    # The language whose analysis the index uses (irforge.analysis): an ISO 639-1 code.
    language: str = DEFAULT_LANGUAGE

    def __post_init__(self):
        check_range("BM25 k1", self.k1, *K1_RANGE)
        check_range("BM25 b", self.b, *B_RANGE)
        object.__setattr__(self, "language", analyzer_for(self.language or DEFAULT_LANGUAGE).language.code)

    @property
    def analyzer(self):
        return analyzer_for(self.language)

    def as_dict(self) -> dict:
        """English leaves `language` out: the settings every index built before English analysis
        had a name recorded, so those indexes still match and are reused."""
        settings = asdict(self)
        if self.language == DEFAULT_LANGUAGE:
            del settings["language"]
        return settings
