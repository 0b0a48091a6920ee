"""Hybrid: BM25 and dense (or learned sparse: --hybrid-with sparse) runs fused (irforge.fusion:
reciprocal-rank fusion by default, or any method of the catalogue)."""

from __future__ import annotations

from irforge.pipeline.retrievers.fused import FUSION_BASIS, FusedRetriever, FusionSettings, WeightTuning


class HybridRetriever(FusedRetriever):
    name = "hybrid"

    def __init__(self, lexical, dense, fusion: FusionSettings, tuning: WeightTuning | None = None):
        self.lexical = lexical
        self.dense = dense
        super().__init__([("bm25", lexical), (dense.name, dense)], fusion, tuning)

    def describe(self) -> dict:
        depth = "top_k of each run" if self.fusion.depth is None else self.fusion.depth
        return {"name": self.name, "fusion": self._fusion_record(), "depth_per_run": depth,
                "bm25": self.lexical.describe(), self.dense.name: self.dense.describe()}

    def counts(self) -> dict:
        return {**self.lexical.counts(), **self.dense.counts()}


__all__ = ["FUSION_BASIS", "FusionSettings", "HybridRetriever", "WeightTuning"]
