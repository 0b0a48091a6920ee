"""Pre-labelling (AIR-Bench quality control, ../shared/PRODUCT.md section 5 step 2).

Each reranker orders a query's recalled candidates (irforge's tie rule: score descending, then
document id descending) and votes for a candidate whose rank is within the threshold: 10, or 20
for a generated hard negative (a looser net, because a hard negative that several rerankers put
near the top is exactly the generated document that may really be relevant). A candidate is
pre-labelled positive when MORE than half of the rerankers vote for it: with two rerankers both
must agree, with three two of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from irforge.ranking import ranked


@dataclass(frozen=True)
class Thresholds:
    default: int = 10
    hard_negative: int = 20

    def __post_init__(self):
        if self.default < 1 or self.hard_negative < 1:
            raise ValueError(f"thresholds must be at least 1, got --threshold {self.default} "
                             f"--hard-negative-threshold {self.hard_negative}")

    def for_document(self, is_hard_negative: bool) -> int:
        return self.hard_negative if is_hard_negative else self.default

    @property
    def deepest(self) -> int:
        return max(self.default, self.hard_negative)


def ranks_from_scores(scores: Mapping[str, float]) -> dict[str, int]:
    """1-based rank of every document, by irforge.ranking's tie rule."""
    return {doc_id: position for position, (doc_id, _) in enumerate(ranked(scores), start=1)}


@dataclass(frozen=True)
class PreLabel:
    ranks: dict[str, int | None]   # reranker name -> rank among the candidates (None: not recalled)
    threshold: int
    votes: int

    @property
    def rerankers(self) -> int:
        return len(self.ranks)

    @property
    def positive(self) -> bool:
        return 2 * self.votes > self.rerankers

    def as_dict(self) -> dict:
        return {"ranks": dict(self.ranks), "threshold": self.threshold, "votes": self.votes,
                "rerankers": self.rerankers, "positive": self.positive}


def prelabel(ranks_by_reranker: Mapping[str, Mapping[str, int]], doc_id: str, threshold: int) -> PreLabel:
    """The votes of every reranker for one document of one query."""
    ranks = {name: ranks.get(doc_id) for name, ranks in ranks_by_reranker.items()}
    votes = sum(1 for rank in ranks.values() if rank is not None and rank <= threshold)
    return PreLabel(ranks=ranks, threshold=threshold, votes=votes)
