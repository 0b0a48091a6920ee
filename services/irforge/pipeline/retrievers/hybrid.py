"""Hybrid: BM25 and dense (or learned sparse: --hybrid-with sparse) runs fused by reciprocal-rank fusion or normalised linear combination."""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass

from irforge.data import BeirDataset
from irforge.data.types import Query, Run
from irforge.fusion import normalized_linear_fusion, reciprocal_rank_fusion
from irforge.pipeline.latency import LatencyRecorder, share
from irforge.pipeline.retrievers.base import CorpusTracker
from irforge.ranking import top_k


# rrf_k: 60 is the published constant; from ~1e15 on 1/(k + rank) no longer tells ranks apart in
# float64 (every document ties), so refuse far before that; a million is already rank-sum fusion.
RRF_K_RANGE = (0.0, 1e6)
FUSION_BASIS = "every query of a retrieve fused in one pass (top k included); time per query = its time / queries"


def weights_problem(weights) -> bool:
    """Fusion weights that mean nothing: not finite, negative (inverting a run), or all zero."""
    return not all(math.isfinite(w) and w >= 0 for w in weights) or not any(weights)


@dataclass(frozen=True)
class FusionSettings:
    method: str = "rrf"                      # "rrf" | "linear"
    rrf_k: float = 60.0                      # Cormack et al.'s constant
    weights: tuple[float, float] = (1.0, 1.0)  # (bm25, dense); linear uses them after min-max per query
    depth: int | None = None                 # documents each run contributes; None: the k retrieved

    def __post_init__(self):
        if self.method not in ("rrf", "linear"):
            raise ValueError(f"unknown fusion {self.method!r}; use rrf or linear")

    def as_dict(self) -> dict:
        settings = asdict(self)
        settings.pop("depth")   # recorded as the hybrid's depth_per_run
        if self.method == "linear":
            settings.pop("rrf_k")
            settings["normalisation"] = "min-max per query; a document missing from a run counts 0 there"
        return settings


class HybridRetriever:
    name = "hybrid"

    def __init__(self, lexical, dense, fusion: FusionSettings):
        self.lexical = lexical
        self.dense = dense
        self.fusion = fusion
        self.use_latency(LatencyRecorder())

    def use_latency(self, recorder: LatencyRecorder) -> None:
        """One recorder for the hybrid and both its runs: their stages and fusion in one summary."""
        self.latency = recorder
        share(recorder, self.lexical, self.dense)

    def prepare(self, dataset: BeirDataset, fingerprint: str, tracker: CorpusTracker) -> None:
        self.lexical.prepare(dataset, fingerprint, tracker)
        self.dense.prepare(dataset, fingerprint, tracker)

    def retrieve(self, queries: list[Query], k: int) -> Run:
        with self.latency.answering(len(queries)):
            depth = self.fusion.depth or k
            runs = [self.lexical.retrieve(queries, depth), self.dense.retrieve(queries, depth)]
            started = time.perf_counter()
            fused = self._fuse(runs, k)
            self.latency.batch("fusion", list(fused), time.perf_counter() - started, FUSION_BASIS)
            return fused

    def _fuse(self, runs: list[Run], k: int) -> Run:
        if self.fusion.method == "rrf":
            fused = reciprocal_rank_fusion(runs, k=self.fusion.rrf_k, weights=self.fusion.weights)
        else:
            fused = normalized_linear_fusion(runs, weights=self.fusion.weights)
        # Each input contributed its top depth (default k); the fused list keeps the best k of their union.
        return {query_id: top_k(scores, k) for query_id, scores in fused.items()}

    def describe(self) -> dict:
        depth = "top_k of each run" if self.fusion.depth is None else self.fusion.depth
        return {"name": self.name, "fusion": self.fusion.as_dict(), "depth_per_run": depth,
                "bm25": self.lexical.describe(), self.dense.name: self.dense.describe()}

    def counts(self) -> dict:
        return {**self.lexical.counts(), **self.dense.counts()}
