"""Calibrating a judge against human labels (`irforge judge-calibrate`): irforge.judge.calibration
draws the sample, judges it and fits the embedded judge's thresholds; the BM25 run whose
unlabelled documents stand in for non-relevant ones is built here, by the one builder.
judge_calibrate is the use case whole: options checked (UsageError) before any judging, the
judge chosen by a JudgeChoice, calibration.json and the fitted thresholds written."""

from __future__ import annotations

from contextlib import ExitStack
from functools import partial
from pathlib import Path

from irforge.app.errors import UsageError
from irforge.app.holes import JudgeChoice
from irforge.builder.pipeline import PipelineBuilder
from irforge.common.files import write_json_atomic
from irforge.common.progress import tqdm_progress
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


REPORT = "calibration.json"
THRESHOLDS = "embedded-thresholds.json"


def judge_calibrate(dataset: str | Path, *, sample: int, out: str | Path, split: str = "test", seed: int = 13,
                    cross_encoder: str | None = None, save_default: bool = False, index_dir: str | Path | None = None,
                    choice: JudgeChoice = JudgeChoice()) -> dict:
    """`irforge judge-calibrate`: check the options (UsageError before any judging), judge a
    stratified sample of the split's human labels, fit the embedded judge's thresholds and write
    them to OUT/embedded-thresholds.json (and to the default location with `save_default`), write
    OUT/calibration.json; returns the report (as in calibration.json). `cross_encoder`: the
    embedded judge also scores with this cross-encoder (the fitted thresholds then name it)."""
    from irforge.judge.backends.embedded import (
        SCORE_WITH_CROSS_ENCODER,
        EmbeddedJudge,
        Thresholds,
        default_thresholds_path,
        find_thresholds,
    )
    from irforge.judge.calibration import CalibrationError, CalibrationSettings
    from irforge.judge.factory import open_backend
    from irforge.judge.store import JudgementStore

    out = Path(out)
    try:
        settings = CalibrationSettings(sample=sample, split=split, seed=seed, relevant_from=choice.relevant_from)
    except CalibrationError as error:
        raise UsageError(str(error)) from None
    thresholds = Path(choice.thresholds) if choice.thresholds else None
    if cross_encoder:
        if choice.judge != "embedded":
            raise UsageError("--cross-encoder applies to the embedded judge only")
        start = find_thresholds(thresholds)
        backend = EmbeddedJudge(Thresholds(start.cuts, model=start.model, score=SCORE_WITH_CROSS_ENCODER,
                                           cross_encoder=cross_encoder, source="starting point"))
    else:
        choice.check()
        backend = open_backend(choice.judge, thresholds_path=thresholds)
    bar = tqdm_progress("judging the calibration sample", sample, "pair")
    try:
        with JudgementStore(Path(choice.store) if choice.store else None) as store:
            report, fitted = calibrate_judge(dataset, settings, backend, store, index_dir=index_dir, progress=bar.update)
    finally:
        bar.close()
        backend.close()
    files = {"calibration": REPORT}
    if fitted is not None:
        fitted.save(out / THRESHOLDS)
        files["thresholds"] = THRESHOLDS
        if save_default:   # user-wide: every later embedded judge changes, so only when asked
            files["default_thresholds"] = str(fitted.save(default_thresholds_path()))
    report["files"] = files
    write_json_atomic(out / REPORT, report)
    return report


__all__ = ["REPORT", "THRESHOLDS", "bm25_run", "calibrate_judge", "judge_calibrate"]
