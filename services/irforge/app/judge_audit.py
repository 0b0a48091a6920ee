"""`irforge judge-audit`: before trusting a judge on a corpus, measure how many labels documents
carrying known manipulations (irforge.judge.manipulations) can flip. The judge is chosen as
judge-holes chooses it (a JudgeChoice: embedded or a spec file, its store, thresholds and the
relevance cut), the BM25 run behind the sample's non-relevant pairs is calibration's (the one
builder), and the report is written atomically to OUT/judge-audit.json."""

from __future__ import annotations

from functools import partial
from pathlib import Path

from irforge.app.calibration import bm25_run
from irforge.app.errors import UsageError
from irforge.app.holes import JudgeChoice
from irforge.common.files import file_sha256, write_json_atomic
from irforge.common.progress import tqdm_progress

REPORT = "judge-audit.json"


def judge_audit(dataset: str | Path, *, out: str | Path, sample: int | None = None, seed: int = 13, split: str = "test",
                manipulations=None, negatives_depth: int | None = None, index_dir: str | Path | None = None,
                choice: JudgeChoice = JudgeChoice(), progress=tqdm_progress) -> dict:
    """Check the options (UsageError before any judging), sample pairs, judge each clean and with
    every manipulation injected, write OUT/judge-audit.json; returns the report. `manipulations`:
    names (None: the whole library)."""
    from irforge.data import BeirDataset
    from irforge.judge.audit import DEFAULT_NEGATIVES_DEPTH, DEFAULT_SAMPLE, AuditError, AuditSettings, audit, draw_sample
    from irforge.judge.manipulations import ManipulationError, select_manipulations

    out = Path(out)
    try:
        settings = AuditSettings(sample=DEFAULT_SAMPLE if sample is None else sample, seed=seed, split=split,
                                 relevant_from=choice.relevant_from,
                                 negatives_depth=DEFAULT_NEGATIVES_DEPTH if negatives_depth is None else negatives_depth,
                                 manipulations=select_manipulations(manipulations))
    except (AuditError, ManipulationError) as error:
        raise UsageError(str(error)) from None
    choice.check()
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out}: exists and is not a folder")
    try:   # the dataset and the sample before the judge: a bad input leaves no store or model behind
        drawn = draw_sample(BeirDataset.open(dataset), settings, negatives_run=partial(bm25_run, index_dir=index_dir))
    except AuditError as error:
        raise UsageError(str(error)) from None
    with choice.open() as core:
        report = audit(drawn, settings, core, progress=progress)
    # The spec file's bytes, beside the judge identity: what a reader compares to know it is the same judge.
    report["judge"]["spec_sha256"] = None if choice.judge == "embedded" else file_sha256(choice.judge)
    report["judge"]["spec"] = choice.judge
    report["files"] = {"report": REPORT}
    write_json_atomic(out / REPORT, report)
    return report


__all__ = ["REPORT", "judge_audit"]
