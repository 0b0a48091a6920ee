"""Fusion of several retrievers' runs (irforge.fusion): the hybrid's BM25 and dense (or sparse)
runs, or any runs, by any method of the catalogue; with --fusion-optimize-on, the weights are
chosen first by a grid search on a development split's qrels (never the split being reported)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from irforge.data import BeirDataset
from irforge.data.types import Query, Run
from irforge.fusion import METHODS, Fusion
from irforge.fusion.optimise import WeightChoice, WeightSearch, optimise_weights
from irforge.pipeline.latency import LatencyRecorder, share
from irforge.pipeline.retrievers.base import CorpusTracker
from irforge.ranking import top_k

FUSION_BASIS = "every query of a retrieve fused in one pass (top k included); time per query = its time / queries"
LEGACY = ("rrf", "linear")   # the hybrid's two methods, recorded as they always were


@dataclass(frozen=True)
class FusionSettings:
    method: str = "rrf"                      # irforge.fusion.METHODS
    rrf_k: float = 60.0                      # Cormack et al.'s constant
    weights: tuple[float, ...] | None = (1.0, 1.0)   # one per run (None: 1 each); weighted methods only
    depth: int | None = None                 # documents each run contributes; None: the k retrieved
    norm: str = "min-max"                    # for wsum, wmnz and the comb methods

    def __post_init__(self):
        self.fusion()   # an unknown method or normalisation, a bad k: refused here

    def fusion(self, weights: tuple[float, ...] | None = None) -> Fusion:
        """The fusion with `weights` (the chosen ones) or the settings' own; unweighted methods take none."""
        if self.method not in METHODS:
            raise ValueError(f"unknown fusion {self.method!r}; use one of {', '.join(METHODS)}")
        weighted = METHODS[self.method].weighted
        return Fusion(self.method, self.norm, (weights or self.weights) if weighted else None, self.rrf_k)

    def as_dict(self, weights: tuple[float, ...] | None = None) -> dict:
        if self.method not in LEGACY:
            return self.fusion(weights).describe()
        settings = asdict(self)
        settings.pop("depth")   # recorded as the fused retriever's depth_per_run
        settings.pop("norm")
        if weights is not None:
            settings["weights"] = weights
        if self.method == "linear":
            settings.pop("rrf_k")
            settings["normalisation"] = "min-max per query; a document missing from a run counts 0 there"
        return settings


@dataclass
class WeightTuning:
    """The weight search's parts: where (WeightSearch), and the evaluator that scores each point."""
    search: WeightSearch
    evaluator: object
    drop_identical_ids: bool = True


class FusedRetriever:
    """`parts`: (label, retriever) pairs, fused in order (the weights follow it)."""
    name = "fusion"

    def __init__(self, parts: Sequence[tuple[str, object]], fusion: FusionSettings, tuning: WeightTuning | None = None):
        if len(parts) < 2:
            raise ValueError("fusion needs at least two runs")
        self.parts = list(parts)
        self.fusion = fusion
        self.tuning = tuning
        self.choice: WeightChoice | None = None
        self._development = None
        self.use_latency(LatencyRecorder())

    @property
    def retrievers(self) -> list:
        return [retriever for _, retriever in self.parts]

    def use_latency(self, recorder: LatencyRecorder) -> None:
        """One recorder for the fusion and its runs: their stages and the fusion in one summary."""
        self.latency = recorder
        share(recorder, *self.retrievers)

    def prepare(self, dataset: BeirDataset, fingerprint: str, tracker: CorpusTracker) -> None:
        if self.tuning is not None:   # read before any index work: a missing split fails at once
            from irforge.pipeline.eval_job import split_judgements

            _, queries, qrels = split_judgements(dataset, self.tuning.search.split)
            self._development = (queries, qrels)
        for retriever in self.retrievers:
            retriever.prepare(dataset, fingerprint, tracker)

    def retrieve(self, queries: list[Query], k: int) -> Run:
        if self._development is not None and self.choice is None:
            self.choice = self._choose_weights(k)
        with self.latency.answering(len(queries)):
            runs = [retriever.retrieve(queries, self.fusion.depth or k) for retriever in self.retrievers]
            started = time.perf_counter()
            fused = self._fuse(runs, k)
            self.latency.batch("fusion", list(fused), time.perf_counter() - started, FUSION_BASIS)
            return fused

    def _fuse(self, runs: list[Run], k: int) -> Run:
        weights = self.choice.weights if self.choice is not None else None
        fused = self.fusion.fusion(weights).fuse(runs)
        # Each input contributed its top depth (default k); the fused list keeps the best k of their union.
        return {query_id: top_k(scores, k) for query_id, scores in fused.items()}

    def _choose_weights(self, k: int) -> WeightChoice:
        """The grid search on the development split, its retrieval timed apart (a scratch recorder):
        the latency recorded is the reported split's alone."""
        from irforge.evaluator.core import EvaluationOptions

        queries, qrels = self._development
        search, evaluator = self.tuning.search, self.tuning.evaluator
        options = EvaluationOptions(drop_identical_ids=self.tuning.drop_identical_ids, complete=True)
        share(LatencyRecorder(), *self.retrievers)
        try:
            runs = [retriever.retrieve(queries, self.fusion.depth or k) for retriever in self.retrievers]
        finally:
            share(self.latency, *self.retrievers)

        def score(run: Run) -> float:
            return evaluator.evaluate(qrels, run, [search.measure], options).aggregate[search.measure]

        return optimise_weights(self.fusion.fusion(), runs, [label for label, _ in self.parts], search, score, k)

    def describe(self) -> dict:
        depth = "top_k of each run" if self.fusion.depth is None else self.fusion.depth
        described = {"name": self.name, "fusion": self._fusion_record(), "depth_per_run": depth}
        described["runs"] = [{"label": label, **retriever.describe()} for label, retriever in self.parts]
        return described

    def _fusion_record(self) -> dict:
        if self.choice is None:
            return self.fusion.as_dict()
        return {**self.fusion.as_dict(self.choice.weights), "optimisation": self.choice.describe()}

    @property
    def latency_absent(self) -> str | None:
        """Why no latency is recorded when every run was read from a file (irforge.pipeline.latency.latency_of):
        only their fusion ran here, and a per-query time of that alone would read as the system's."""
        if all(isinstance(getattr(retriever, "latency_absent", None), str) for retriever in self.retrievers):
            return ("every fused run was read from a file: only their fusion ran here, and the time per query of the "
                    "systems that made them is not known to irforge")
        return None

    def counts(self) -> dict:
        """Each run's counts under its label (run files count the same things: merged, one would hide the other)."""
        return {"fused_runs": {label: retriever.counts() for label, retriever in self.parts}}
