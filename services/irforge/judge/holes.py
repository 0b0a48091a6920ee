"""Holes on demand: judge the unlabelled documents of a run's top-k, as a separate qrels layer.

    irforge judge-holes --dataset DIR --run RUN --depth 10 [--judge embedded|FILE] --out OUTDIR

A hole is a (query, document) in a query's top-`depth` (ranked by the one tie rule, after BEIR's
identical-id drop, exactly as the evaluator ranks) that the split's qrels do not label. Only holes
are judged. Outputs, all written atomically, holes.json last:

- qrels.judged.tsv: the new labels in BEIR qrels format (query-id, corpus-id, score), on the
  dataset's scale. The original qrels are never touched; evaluate with both files to reproduce
  metrics_after.
- qrels.judged.provenance.jsonl: one record per data line of qrels.judged.tsv (same order,
  `line` = its line number in the file): the judge's own 0-3 label, the judgement store's
  record_id, judge identity hash, raw output.
- holes.json: counts, cost, the label mapping, metrics before and after with Judged@k and Hole@k,
  and `screening`: how many holes were flagged for text addressed to the judge (judge/flagged.py).
- flagged.tsv: the flagged holes for a person to review (only when some were flagged).

Screening: before judging, every hole's document and query go through irforge.screening; a
flagged pair is not sent to the judge and gets no label unless the `flagged` policy says
otherwise (second-judge, label; see judge/flagged.py). Every path that fills holes (judge-holes,
eval --fill-holes, the orchestrator's judge step, local or through the judge service) comes here.

How judge labels (0-3) join human labels (the dataset's scale, SciFact 0/1, NFCorpus 0/1/2):
labels below relevant_from become 0; labels from relevant_from up spread over the dataset's
positive levels 1..H, the top judge label on H (SciFact: 2, 3 -> 1; NFCorpus: 2 -> 1, 3 -> 2).
So the evaluator's relevance level stays the dataset's (1) and binary measures count exactly the
judge labels >= relevant_from as relevant, while graded nDCG sees a judged document on the same
scale as a human-labelled one.

Pairs the judge did not label (UNPARSED, FAILED) get no line: a judge that never answers leaves
the evaluation exactly as it was (metrics_after == metrics_before, no qrels.judged.tsv).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from irforge.common.files import atomic_write, write_json_atomic
from irforge.common.progress import ProgressFactory, no_progress
from irforge.common.versions import package_versions
from irforge.data import BeirDataset
from irforge.data.types import Qrels, Run
from irforge.evaluator.core import EvaluationOptions, Evaluator, drop_identical_ids
from irforge.evaluator.measures import DEFAULT_MEASURES, parse_measures
from irforge.judge.base import DEFAULT_RELEVANT_FROM, Judgement, JudgeOutcome, JudgePair, JudgeStats
from irforge.judge.errors import JudgeError
from irforge.judge.flagged import POLICIES, finding_by_pair, flagged_rows, screen_holes, screening_report, write_flagged
from irforge.ranking import ranked, top_k
from irforge.results.reading import read_results

JUDGED_QRELS = "qrels.judged.tsv"
PROVENANCE = "qrels.judged.provenance.jsonl"
REPORT = "holes.json"
MAX_LISTED = 50     # unlabelled pairs listed by id in holes.json (all are counted)


class HolesError(JudgeError, ValueError):
    """The run and the dataset cannot be hole-filled together (names the run, query or document)."""


@dataclass(frozen=True)
class HoleSettings:
    depth: int = 10
    relevant_from: int = DEFAULT_RELEVANT_FROM
    drop_identical_ids: bool = True
    measures: tuple[str, ...] = DEFAULT_MEASURES
    flagged: str = "leave"      # what happens to holes whose texts address the judge (judge/flagged.py)

    def __post_init__(self):
        if isinstance(self.depth, bool) or not isinstance(self.depth, int) or self.depth < 1:
            raise HolesError(f"--depth must be a positive whole number, got {self.depth!r}")
        if self.relevant_from not in (1, 2, 3):
            raise HolesError(f"--relevant-from must be 1, 2 or 3 (a label on the judge's 0-3 scale), got {self.relevant_from!r}")
        if self.flagged not in POLICIES:
            raise HolesError(f"--flagged must be one of {', '.join(POLICIES)}, got {self.flagged!r}")

    def evaluated_measures(self) -> list[str]:
        extra = [f"Judged@{self.depth}"] if f"Judged@{self.depth}" not in self.measures else []
        return list(self.measures) + extra


def judge_to_dataset_scale(relevant_from: int, top_level: int) -> dict[int, int]:
    """Judge label 0-3 -> the dataset's level (see the module docstring)."""
    top_level = max(top_level, 1)
    mapping = {}
    for label in range(4):
        if label < relevant_from:
            mapping[label] = 0
        elif top_level == 1:
            mapping[label] = 1
        elif relevant_from == 3:
            mapping[label] = top_level
        else:
            mapping[label] = 1 + round((label - relevant_from) * (top_level - 1) / (3 - relevant_from))
    return mapping


def find_holes(qrels: Qrels, run: Run, depth: int, drop_identical: bool = True) -> list[tuple[str, str]]:
    """(query id, doc id) of every unlabelled document in the top-`depth` of each query the qrels
    judge, by query id then rank; ranked exactly as the evaluator ranks."""
    if drop_identical:
        run, _ = drop_identical_ids(run)
    holes = []
    for query_id in sorted(q for q in run if q in qrels):
        judged = qrels[query_id]
        holes.extend((query_id, doc_id) for doc_id, _ in ranked(top_k(run[query_id], depth)) if doc_id not in judged)
    return holes


def with_holes(metrics: dict[str, float]) -> dict[str, float]:
    """Metrics plus Hole@k = 1 - Judged@k beside every Judged@k."""
    out = {}
    for name, value in metrics.items():
        out[name] = value
        if name.startswith("Judged@"):
            out["Hole@" + name.split("@", 1)[1]] = 1.0 - value
    return out


def _texts(dataset: BeirDataset, doc_ids: set[str]) -> dict[str, str]:
    return {d.doc_id: d.full_text for d in dataset.corpus() if d.doc_id in doc_ids}


class HoleFiller:
    """Finds, judges and evaluates; `run()` returns the report and the judged layer."""

    def __init__(self, core, settings: HoleSettings = HoleSettings(), progress: ProgressFactory = no_progress,
                 second_judge=None):
        self.core = core            # a JudgeCore (or its client): judge(pairs, progress) -> JudgeOutcome
        self.settings = settings
        self.progress = progress
        self.second_judge = second_judge    # judges the flagged holes under the second-judge policy
        if (settings.flagged == "second-judge") != (second_judge is not None):
            raise HolesError("--flagged second-judge and --second-judge FILE go together")

    def run(self, dataset_dir: Path, run: Run, split: str = "test", run_name: str = "run") -> tuple[dict, list[Judgement], Qrels]:
        settings = self.settings
        measures = settings.evaluated_measures()
        parse_measures(measures)  # bad measure names fail before any judging
        dataset = BeirDataset.open(dataset_dir)
        qrels = dataset.qrels(split)
        queries = {q.query_id: q.text for q in dataset.queries()}
        unknown = sorted(set(run) - set(queries))
        if unknown:
            raise HolesError(f"{run_name}: {len(unknown)} quer{'y' if len(unknown) == 1 else 'ies'} not in "
                             f"{dataset.queries_path} (e.g. {', '.join(map(repr, unknown[:3]))})")
        eval_qrels = {q: judged for q, judged in qrels.items() if q in queries}
        if not set(run) & set(eval_qrels):
            raise HolesError(f"{run_name}: no query of the run is in the {split!r} qrels of {dataset.root}")

        holes = find_holes(eval_qrels, run, settings.depth, settings.drop_identical_ids)
        documents = _texts(dataset, {doc_id for _, doc_id in holes})
        missing = [(q, d) for q, d in holes if d not in documents]
        if missing:
            raise HolesError(f"{run_name}: query {missing[0][0]!r} retrieved document {missing[0][1]!r}, which is not "
                             f"in {dataset.corpus_path} ({len(missing)} such holes)")
        pairs = [JudgePair(q, queries[q], d, documents[d]) for q, d in holes]
        outcome, screening = self._judge(pairs)

        top_level = max((level for judged in eval_qrels.values() for level in judged.values()), default=1)
        mapping = judge_to_dataset_scale(settings.relevant_from, top_level)
        labelled = [j for j in outcome.judgements if j.is_label]
        layer: Qrels = {}
        for judgement in labelled:
            layer.setdefault(judgement.query_id, {})[judgement.doc_id] = mapping[judgement.label]
        combined = {q: {**judged, **layer.get(q, {})} for q, judged in eval_qrels.items()}

        options = EvaluationOptions(drop_identical_ids=settings.drop_identical_ids, complete=True)
        evaluator = Evaluator()
        before = evaluator.evaluate(eval_qrels, run, measures, options)
        after = evaluator.evaluate(combined, run, measures, options)
        stats = outcome.stats
        not_labelled = [j for j in outcome.judgements if not j.is_label]
        report = {
            "dataset": dataset.name, "split": split, "run": run_name, "depth": settings.depth,
            "queries": len(set(run) & set(eval_qrels)),
            "holes": len(holes), "judged": len(labelled), "judge_calls": stats.calls,
            "unparsed": stats.unparsed, "failed": stats.failed, "from_store": stats.from_store,
            "tokens": {"prompt": stats.prompt_tokens, "completion": stats.completion_tokens},
            "cost_usd": stats.cost_usd,
            "judge": {**self.core.identity(), "judge_id": self.core.judge_id},
            "relevant_from": settings.relevant_from,
            "label_mapping": {str(label): level for label, level in mapping.items()},
            "label_mapping_note": "judge label (0-3) -> dataset level written to qrels.judged.tsv; binary measures use "
                                  "the dataset's relevance level 1, so judge labels >= relevant_from count as relevant",
            "labels": {str(label): sum(j.label == label for j in labelled) for label in range(4)},
            "metrics_before": with_holes(before.aggregate),
            "metrics_after": with_holes(after.aggregate),
            "evaluation": {"measures": measures, "options": options.as_dict(),
                           "identical_ids_dropped": before.identical_ids_dropped,
                           "tie_rule": "score descending, then document id descending (trec_eval)"},
            "not_labelled": [{"query_id": j.query_id, "doc_id": j.doc_id, "verdict": j.verdict.value, "error": j.error}
                             for j in not_labelled[:MAX_LISTED]],
            "screening": screening,
            "versions": package_versions(["pytrec_eval-terrier", "sentence-transformers", "openai"]),
            "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
        encoding = getattr(getattr(self.core, "backend", None), "encoding", None)
        if encoding is not None:  # the embedded judge's work: texts encoded vs reused from the embedding cache
            report["encoding"] = encoding.as_dict()
        return report, labelled, layer

    def _judge(self, pairs: list[JudgePair]) -> tuple[JudgeOutcome, dict]:
        """Screen, then judge what the policy sends to each judge; one outcome (stats summed) and
        the report's `screening` section."""
        policy = self.settings.flagged
        screened = screen_holes(pairs)
        flagged = [f.pair for f in screened.flagged]
        first = pairs if policy == "label" else screened.clean
        second = flagged if policy == "second-judge" else []
        bar = self.progress(f"judging {len(first) + len(second)} holes ({len(flagged)} flagged)",
                            len(first) + len(second), "pair")
        try:
            outcome = self.core.judge(first, bar.update)
            if second:
                extra = self.second_judge.judge(second, bar.update)
                outcome = JudgeOutcome(outcome.judgements + extra.judgements, _summed(outcome.stats, extra.stats))
        finally:
            bar.close()
        flagged_keys = {(p.query_id, p.doc_id) for p in flagged}
        rows = flagged_rows(screened, policy, (j for j in outcome.judgements
                                               if j.is_label and (j.query_id, j.doc_id) in flagged_keys))
        second_identity = ({**self.second_judge.identity(), "judge_id": self.second_judge.judge_id}
                           if self.second_judge is not None else None)
        return outcome, screening_report(rows, policy, len(pairs), self.settings.relevant_from, second_identity)


def _summed(first: JudgeStats, second: JudgeStats) -> JudgeStats:
    return JudgeStats(**{name: getattr(first, name) + getattr(second, name) for name in JudgeStats.__dataclass_fields__})


def not_all_judged(report: dict) -> str:
    """Why a hole-filling report is incomplete ("" when every hole got a label): one wording for
    the CLI, whose exit code is then 1, and the orchestrator, whose job then carries a warning."""
    if not (report["failed"] or report["unparsed"]):
        return ""
    return (f"{report['failed']} of {report['holes']} holes failed and {report['unparsed']} got no valid label; "
            "they are not in the judged layer (run again to retry them)")


def _provenance(line: int, judgement: Judgement, level: int, flagged: dict | None) -> dict:
    screening = None if flagged is None else {key: flagged[key] for key in ("field", "rule", "phrase", "action")}
    return {"line": line, "query_id": judgement.query_id, "doc_id": judgement.doc_id, "score": level,
            "label": judgement.label, "record_id": judgement.record_id, "judge_id": judgement.judge_id,
            "backend": judgement.backend, "model": judgement.model, "template_sha256": judgement.template_sha256,
            "raw_output": judgement.raw_output, "judge_score": judgement.score,
            "created_at": judgement.created_at, "from_store": judgement.from_store, "screening": screening}


def write_outputs(out_dir: Path, report: dict, labelled: Iterable[Judgement], report_name: str | None = REPORT) -> dict:
    """qrels.judged.tsv + its provenance sidecar (or neither, removing stale ones, when nothing was
    labelled), flagged.tsv (or none), then the report (unless report_name is None). Returns the file
    names written."""
    out_dir = Path(out_dir)
    mapping = {int(label): level for label, level in report["label_mapping"].items()}
    labelled = sorted(labelled, key=lambda j: (j.query_id, j.doc_id))
    flagged = finding_by_pair(report)
    files = {"judged_qrels": None, "provenance": None}
    if labelled:
        with atomic_write(out_dir / PROVENANCE) as handle:
            for line, judgement in enumerate(labelled, start=2):  # line 1 is the header
                record = _provenance(line, judgement, mapping[judgement.label], flagged.get((judgement.query_id, judgement.doc_id)))
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        with atomic_write(out_dir / JUDGED_QRELS) as handle:
            handle.write("query-id\tcorpus-id\tscore\n")
            handle.writelines(f"{j.query_id}\t{j.doc_id}\t{mapping[j.label]}\n" for j in labelled)
        files = {"judged_qrels": JUDGED_QRELS, "provenance": PROVENANCE}
    else:
        for name in (JUDGED_QRELS, PROVENANCE):  # a stale layer from an earlier run would lie
            (out_dir / name).unlink(missing_ok=True)
    files["flagged"] = write_flagged(out_dir, report)
    report["files"] = files
    if report_name is not None:
        write_json_atomic(out_dir / report_name, _finite(report))
    return files


def join_results(out_dir: Path, report: dict, results: dict | None = None) -> dict:
    """Add a holes report to OUT/results.json, as `holes` with its files under `files`: how
    `irforge eval --fill-holes` and the orchestrator's judge step join an evaluation's record
    (read from disk when `results` is not given; written atomically, NaN as null like holes.json)."""
    path = Path(out_dir) / "results.json"
    if results is None:
        results = read_results(path)   # checked as every reader of results.json checks it
    results["holes"] = _finite(report)
    results["files"].update({name: value for name, value in report["files"].items() if value})
    write_json_atomic(path, results)
    return results


def _finite(value):
    """JSON has no NaN: an undefined number is written as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value
