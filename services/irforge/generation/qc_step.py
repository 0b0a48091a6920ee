"""Quality control of a generated BEIR collection: `irforge qc`'s own job, once per split.

The generated folder is checked split by split (dev, then test) with the generated hard
negatives declared (`--hard-negatives`, threshold `--qc-hard-negative-threshold`, 20 by default)
and the `--llm` spec as the judge (its `template` and `max_tokens` are the judge's: the AIR-Bench
0-3 prompt and 5 tokens unless the spec says otherwise). Each split's QcConfig is built from the
typed GenerationQc and run by the QC builder (irforge.builder.qc) `irforge qc` runs by, so every
rule of docs/qc.md applies unchanged.
"""

from __future__ import annotations

import shutil
from contextlib import ExitStack
from pathlib import Path

from irforge.builder.qc import qc_job
from irforge.config.pipeline import EncoderConfig, StoresConfig
from irforge.config.qc import QcConfig
from irforge.generation.language import DATASET_JSON
from irforge.generation.output import HARD_NEGATIVES_NAME
from irforge.generation.settings import GenerationQc
from irforge.judge.qc.writer import AUDIT_NAME, SUMMARY_NAME


def _text(value: Path | None) -> str | None:
    return None if value is None else str(value)


def qc_config(dataset: Path, out: Path, split: str, qc: GenerationQc) -> QcConfig:
    """The QcConfig checking `split` of the generated `dataset` into `out`."""
    return QcConfig(dataset=str(dataset), out=str(out), split=split, hard_negatives=str(dataset / HARD_NEGATIVES_NAME),
                    hard_negative_threshold=qc.hard_negative_threshold, judge=str(qc.llm),
                    recall_depth=qc.recall_depth, rerankers=tuple(qc.rerankers) if qc.rerankers else None,
                    store=_text(qc.store), encoder=EncoderConfig(model=qc.model),
                    stores=StoresConfig(embedding_cache=_text(qc.embedding_cache), index_dir=_text(qc.index_dir)))


def run_quality_control(raw: Path, work: Path, splits: dict[str, int], qc: GenerationQc) -> tuple[Path, list[dict]]:
    """QC every split with queries; returns the final folder and one step record per split."""
    current, steps = raw, []
    for split in ("dev", "test"):
        if not splits.get(split):
            continue
        target = work / f"qc-{split}"
        with ExitStack() as stack:
            summary = qc_job(qc_config(current, target, split, qc), stack).run()
        for name in (HARD_NEGATIVES_NAME, DATASET_JSON):   # qc writes only BEIR files
            if (current / name).is_file():
                shutil.copy2(current / name, target / name)
        for name in (AUDIT_NAME, SUMMARY_NAME):
            (target / name).rename(target / f"qc_{split}_{name.removeprefix('qc_')}")
        for earlier in current.glob("qc_*_*"):
            shutil.copy2(earlier, target / earlier.name)
        stats = summary["judge"]["stats"]
        emptied = _drop_if_emptied(target / "qrels" / f"{split}.tsv")
        steps.append({"split": split, "queries": summary["queries"], "emptied": emptied,
                      "queries_dropped": len(summary["queries_dropped"]),
                      "negatives_removed": len(summary["documents_removed"]),
                      "positives_added": len(summary["positives_added"]),
                      "undecided": summary["undecided"], "judge_calls": stats["calls"],
                      "judge_from_store": stats["from_store"], "judge_cost_usd": stats["cost_usd"],
                      "summary": f"qc_{split}_summary.json"})
        current = target
    return current, steps


def _drop_if_emptied(qrels: Path) -> bool:
    """Remove a split's qrels file when QC dropped every one of its queries (only the header is
    left): a BEIR folder holds no empty split, and the next split's QC, eval and the manifest then
    see a collection without it instead of failing on a header-only file in a work folder."""
    with qrels.open(encoding="utf-8") as handle:
        if any(line.strip() for line in list(handle)[1:]):
            return False
    qrels.unlink()
    return True
