"""What a recipe produces, and the dev:test split every recipe shares."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from irforge.analysis.detect import Detection
from irforge.generation.documents import Doc
from irforge.generation.sampling import rng_for

DEV_SHARE = 1 / 5     # dev : test = 1 : 4


def split_queries(query_ids: list[str], seed: int) -> dict[str, str]:
    """query id -> "dev" | "test": a seeded shuffle of the sorted ids, the first fifth (rounded) dev."""
    ids = sorted(query_ids)
    rng_for(seed, "split", "").shuffle(ids)
    dev = round(len(ids) * DEV_SHARE)
    return {query_id: ("dev" if position < dev else "test") for position, query_id in enumerate(ids)}


@dataclass
class Generated:
    """A BEIR collection: the corpus (generated documents included), queries, graded qrels."""

    corpus: list[Doc]
    queries: dict[str, dict]                        # id -> {"_id", "text", "metadata"}
    qrels: dict[str, dict[str, int]]
    hard_negatives: dict[str, list[str]] = field(default_factory=dict)
    histograms: dict[str, Counter] = field(default_factory=dict)
    details: dict = field(default_factory=dict)     # recipe facts for the manifest (tokenizer, ...)
    incomplete: int = 0                             # sampled subjects whose chain did not finish
    language: Detection | None = None               # what the queries are written in (generation.language)
