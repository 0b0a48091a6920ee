"""Quality control of a generated BEIR collection: `irforge qc`'s own job, once per split.

The generated folder is checked split by split (dev, then test) with the generated hard
negatives declared (`--hard-negatives`, threshold `--qc-hard-negative-threshold`, 20 by default)
and the `--llm` spec as the judge (its `template` and `max_tokens` are the judge's: the AIR-Bench
0-3 prompt and 5 tokens unless the spec says otherwise). The command line is built and parsed by
`irforge qc`'s parser and run by its build_job, so every rule of docs/qc.md applies unchanged.
"""

from __future__ import annotations

import shutil
from contextlib import ExitStack
from pathlib import Path

from irforge.cli import qc_cmd
from irforge.cli.parser import IrforgeParser
from irforge.generation.output import HARD_NEGATIVES_NAME
from irforge.judge.qc.writer import AUDIT_NAME, SUMMARY_NAME


def qc_argv(dataset: Path, out: Path, split: str, args) -> list[str]:
    argv = ["qc", "--dataset", str(dataset), "--out", str(out), "--split", split,
            "--hard-negatives", str(dataset / HARD_NEGATIVES_NAME),
            "--hard-negative-threshold", str(args.qc_hard_negative_threshold),
            "--judge", str(args.llm), "--model", args.qc_model, "--recall-depth", str(args.qc_recall_depth)]
    for reranker in args.qc_rerankers or []:
        argv += ["--reranker", reranker]
    for flag, value in (("--store", args.store), ("--embedding-cache", args.embedding_cache), ("--index-dir", args.index_dir)):
        if value is not None:
            argv += [flag, str(value)]
    return argv


def run_quality_control(raw: Path, work: Path, splits: dict[str, int], args) -> tuple[Path, list[dict]]:
    """QC every split with queries; returns the final folder and one step record per split."""
    parser = IrforgeParser(prog="irforge")
    qc_cmd.add_parser(parser.add_subparsers())
    current, steps = raw, []
    for split in ("dev", "test"):
        if not splits.get(split):
            continue
        target = work / f"qc-{split}"
        qc_args = parser.parse_args(qc_argv(current, target, split, args))
        with ExitStack() as stack:
            summary = qc_cmd.build_job(qc_args, stack).run()
        shutil.copy2(current / HARD_NEGATIVES_NAME, target / HARD_NEGATIVES_NAME)   # qc writes only BEIR files
        for name in (AUDIT_NAME, SUMMARY_NAME):
            (target / name).rename(target / f"qc_{split}_{name.removeprefix('qc_')}")
        for earlier in current.glob("qc_*_*"):
            shutil.copy2(earlier, target / earlier.name)
        stats = summary["judge"]["stats"]
        steps.append({"split": split, "queries": summary["queries"],
                      "queries_dropped": len(summary["queries_dropped"]),
                      "negatives_removed": len(summary["documents_removed"]),
                      "positives_added": len(summary["positives_added"]),
                      "undecided": summary["undecided"], "judge_calls": stats["calls"],
                      "judge_from_store": stats["from_store"], "judge_cost_usd": stats["cost_usd"],
                      "summary": f"qc_{split}_summary.json"})
        current = target
    return current, steps
