"""Calibrating a judge against human labels (`irforge judge-calibrate`): irforge.judge.calibration
draws the sample, judges it and fits the embedded judge's thresholds; the BM25 run whose
unlabelled documents stand in for non-relevant ones is built here, by the one builder."""

from __future__ import annotations

from contextlib import ExitStack
from functools import partial
from pathlib import Path

from irforge.builder.pipeline import PipelineBuilder
from irforge.config import PipelineConfig
from irforge.config.pipeline import StoresConfig


def bm25_run(dataset, queries: list, depth: int, index_dir: str | Path | None = None) -> dict[str, dict[str, float]]:
    """BM25 (the embedded backend, the default k1 and b) top-`depth` per query of the opened BEIR
    `dataset`; the index is reused when it exists under `index_dir`."""
    from irforge.pipeline.retrievers import CorpusTracker

    config = PipelineConfig(dataset=str(dataset.root), stores=StoresConfig(index_dir=str(index_dir) if index_dir else None))
    with ExitStack() as stack:
        retriever = PipelineBuilder(config, stack).lexical()
        retriever.prepare(dataset, dataset.corpus_fingerprint(), CorpusTracker(judged=set()))
        return retriever.retrieve(queries, depth)


def calibrate_judge(dataset_dir, settings, backend, store=None, *, index_dir: str | Path | None = None,
                    progress=None) -> tuple[dict, object | None]:
    """irforge.judge.calibration.calibrate with its negatives drawn from BM25 (indexes under
    `index_dir`): (the calibration.json content, the fitted Thresholds or None)."""
    from irforge.judge.calibration import calibrate

    return calibrate(dataset_dir, settings, backend, store, negatives_run=partial(bm25_run, index_dir=index_dir),
                     progress=progress)


__all__ = ["bm25_run", "calibrate_judge"]
