"""A whole check: the dataset's findings and each run's, with what was read, as one report that
prints as a table and saves as JSON."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from irforge.check.dataset_scan import DatasetView, corpus_membership
from irforge.check.findings import ERROR, INFO, SEVERITIES, WARNING, Finding
from irforge.check.qrels_rules import qrels_findings
from irforge.check.ranking_rules import CUTOFFS, as_scored, judged_finding, tie_findings
from irforge.check.run_rules import id_findings, line_findings
from irforge.check.run_scan import RunScan, scan_run


@dataclass
class RunReport:
    path: str
    format: str
    sha256: str                   # of the file's bytes, when the run reader accepted it
    lines: int
    queries: int
    pairs: int
    tag: str
    refused: str | None           # what eval, metrics and compare would say of the file, when they refuse it
    findings: list[Finding] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"path": self.path, "format": self.format, "sha256": self.sha256, "lines": self.lines, "queries": self.queries, "pairs": self.pairs, "tag": self.tag,
                "readable_by_eval": self.refused is None, "refused": self.refused,
                "findings": [f.as_dict() for f in self.findings]}


@dataclass
class CheckReport:
    dataset: str
    split: str
    documents: int
    queries: int
    split_queries: int
    judgements: int
    keep_identical_ids: bool
    findings: list[Finding]       # the dataset's own (corpus, queries, the split's qrels)
    runs: list[RunReport]

    def all_findings(self) -> Iterable[Finding]:
        yield from self.findings
        for run in self.runs:
            yield from run.findings

    def counts(self) -> dict[str, int]:
        totals = dict.fromkeys(SEVERITIES, 0)
        for finding in self.all_findings():
            totals[finding.severity] += 1
        return totals

    @property
    def has_errors(self) -> bool:
        return self.counts()[ERROR] > 0

    def as_dict(self) -> dict:
        return {"dataset": self.dataset, "split": self.split, "documents": self.documents, "queries": self.queries,
                "split_queries": self.split_queries, "judgements": self.judgements,
                "keep_identical_ids": self.keep_identical_ids, "cutoffs": list(CUTOFFS),
                "summary": {f"{severity}s": n for severity, n in self.counts().items()},
                "findings": [f.as_dict() for f in self.findings], "runs": [run.as_dict() for run in self.runs]}


def check(view: DatasetView, run_paths: Iterable[str | Path], *, run_format: str = "auto",
          keep_identical_ids: bool = False) -> CheckReport:
    """Every rule over the dataset's split and each run. Runs are scanned before the corpus is
    streamed, so an unreadable run file is a usage error before the long pass."""
    scans = [scan_run(path, run_format) for path in run_paths]
    wanted = {d for judged in view.qrels.qrels.values() for d in judged}
    for scan in scans:
        for docs in scan.scores.values():
            wanted.update(docs)
    in_corpus, documents = corpus_membership(view.dataset, wanted)
    return CheckReport(
        dataset=str(view.dataset.root), split=view.split, documents=documents, queries=len(view.query_ids),
        split_queries=len(view.qrels.qrels), judgements=sum(len(j) for j in view.qrels.qrels.values()),
        keep_identical_ids=keep_identical_ids, findings=_by_severity(qrels_findings(view, in_corpus)),
        runs=[_run_report(scan, view, in_corpus, keep_identical_ids) for scan in scans])


def _run_report(scan: RunScan, view: DatasetView, in_corpus: set[str], keep_identical_ids: bool) -> RunReport:
    scored = as_scored(scan, keep_identical_ids)
    findings = [*line_findings(scan), *id_findings(scan, view, in_corpus, keep_identical_ids), *tie_findings(scan, scored)]
    judged = judged_finding(scan, scored, view.qrels.qrels)
    if judged is not None:
        findings.append(judged)
    return RunReport(str(scan.path), scan.format, scan.sha256, scan.lines, len(scan.scores), scan.pairs, scan.tag,
                     scan.refused, _by_severity(findings))


def _by_severity(findings: list[Finding]) -> list[Finding]:
    order = {ERROR: 0, WARNING: 1, INFO: 2}
    return sorted(findings, key=lambda f: order[f.severity])   # stable: the rules' order within a severity


def table_lines(report: CheckReport) -> list[str]:
    """The report as a table: one row per finding (severity, code, count, what), its examples below."""
    lines = [f"irforge check: {report.dataset}, split {report.split!r}: {report.documents:,} documents, "
             f"{report.queries:,} queries, {report.split_queries:,} judged in the split ({report.judgements:,} judgements)"]
    lines += _section("dataset", report.dataset, report.findings)
    for run in report.runs:
        heading = f"{run.format}, {run.lines:,} {'entries' if run.format == 'json' else 'lines'}, " \
                  f"{run.queries:,} queries, {run.pairs:,} (query, doc) pairs" + \
                  (f", tag {run.tag}" if run.tag else "")
        lines += _section("run", f"{run.path} ({heading})", run.findings)
        if run.refused:
            lines.append(f"  eval, metrics and compare refuse this file: {run.refused}")
    counts = report.counts()
    lines += ["", f"{counts[ERROR]} error(s), {counts[WARNING]} warning(s), {counts[INFO]} info"
                  + (" — exit 1" if counts[ERROR] else "")]
    return lines


def _section(kind: str, name: str, findings: list[Finding]) -> list[str]:
    lines = ["", f"{kind} {name}"]
    if not findings:
        return lines + ["  no findings"]
    width = max(len(f.code) for f in findings)
    counts = max(5, *(len(f"{f.count:,}") for f in findings))
    lines.append(f"  {'severity':<8}  {'finding':<{width}}  {'count':>{counts}}  what")
    for finding in findings:
        lines.append(f"  {finding.severity:<8}  {finding.code:<{width}}  {finding.count:>{counts},}  {finding.message}")
        lines.extend(f"  {'':<8}  {'':<{width}}  {'':>{counts}}    e.g. {example}" for example in finding.examples)
    return lines
