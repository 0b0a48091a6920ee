"""`irforge qc` as a job: recall, re-rank, pre-label, ask the judge, write the corrected dataset.

Per query (../shared/PRODUCT.md section 5): recall the top `recall_depth` documents with the
embedding model (irforge's DenseRetriever: embedded vector store + embedding cache), score them
with every reranker, pre-label by majority vote, then judge
  phase 1: every labelled positive (a negative answer drops the query), and
  phase 2: for the queries still kept, the pre-labelled positive hard negatives and unlabelled
           documents (so no judge call is spent on a query phase 1 dropped).
Every judged pair becomes one audit record; the corrections are applied while streaming the input
into a staged copy that replaces OUTDIR at the very end.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from irforge.common.versions import package_versions
from irforge.data import BeirDataset
from irforge.data.errors import DataFormatError
from irforge.data.types import Qrels, Query
from irforge.judge.base import DEFAULT_RELEVANT_FROM, JudgePair, JudgeStats
from irforge.judge.qc import writer
from irforge.judge.qc.decisions import (
    Action,
    Case,
    Corrections,
    Decision,
    Question,
    decide,
    labelled_positive_questions,
    prelabelled_questions,
    resolve,
)
from irforge.common.progress import ProgressFactory, no_progress
from irforge.judge.qc.hard_negatives import HardNegatives, read_hard_negatives
from irforge.judge.qc.prelabel import Thresholds, ranks_from_scores
from irforge.pipeline.retrievers import CorpusTracker
from irforge.ranking import ranked

VERSIONED_PACKAGES = ["bm25s", "PyStemmer", "numpy", "sentence-transformers", "transformers", "torch",
                      "qdrant-edge-py", "openai"]


@dataclass(frozen=True)
class QcSpec:
    dataset: Path
    out_dir: Path
    split: str = "test"
    recall_depth: int = 1000
    thresholds: Thresholds = field(default_factory=Thresholds)
    relevant_from: int = DEFAULT_RELEVANT_FROM
    hard_negatives: Path | None = None

    def __post_init__(self):
        if self.recall_depth < 1:
            raise ValueError(f"--recall-depth must be at least 1, got {self.recall_depth}")
        if not 1 <= self.relevant_from <= 3:
            raise ValueError(f"--relevant-from must be a label 1-3, got {self.relevant_from}")
        if self.hard_negatives is not None and not Path(self.hard_negatives).is_file():
            raise ValueError(f"--hard-negatives {self.hard_negatives}: file not found")


def split_names(dataset: BeirDataset) -> list[str]:
    return sorted({path.name.split(".")[0] for path in (dataset.root / "qrels").glob("*.tsv*")})


def check_hard_negatives(source: Path, hard_negatives: HardNegatives, qrels: Qrels) -> None:
    """A listed hard negative that the qrels call a positive is contradictory input."""
    for query_id, docs in hard_negatives.items():
        for doc_id, line_number in docs.items():
            label = qrels.get(query_id, {}).get(doc_id)
            if label is not None and label > 0:
                raise DataFormatError(source, f"document {doc_id!r} is listed as a hard negative of query {query_id!r} "
                                              f"but the qrels label it {label} (a positive)", line_number)


def positives_by_document(splits: dict[str, Qrels]) -> dict[str, set[str]]:
    """doc id -> the queries labelling it positive, over every split."""
    positive_of: dict[str, set[str]] = {}
    for qrels in splits.values():
        for query_id, judged in qrels.items():
            for doc_id, label in judged.items():
                if label > 0:
                    positive_of.setdefault(doc_id, set()).add(query_id)
    return positive_of


class QcJob:
    def __init__(self, spec: QcSpec, recall, scorers: Sequence, judge, *, progress: ProgressFactory = no_progress,
                 mode: dict | None = None):
        self.spec = spec
        self.recall = recall            # a retriever: prepare(dataset, fingerprint, tracker), retrieve(queries, k)
        self.scorers = list(scorers)    # rerankers.*Scorer, each with .spec.text as its name
        self.judge = judge              # factory.open_judge(...): judge(pairs, progress), identity()
        self.progress = progress
        self.mode = mode or {}
        self.timings: dict[str, float] = {}
        self.stats = JudgeStats()
        names = [scorer.spec.text for scorer in self.scorers]
        if not names:
            raise ValueError("quality control needs at least one --reranker")
        if len(set(names)) != len(names):
            raise ValueError(f"--reranker given twice: {sorted({n for n in names if names.count(n) > 1})}")

    def _timed(self, name: str, function, *args):
        started = time.perf_counter()
        try:
            return function(*args)
        finally:
            self.timings[name] = round(self.timings.get(name, 0.0) + time.perf_counter() - started, 3)

    def run(self) -> dict:
        started = time.perf_counter()
        spec = self.spec
        dataset = BeirDataset.open(spec.dataset)
        writer.check_out_dir(dataset.root, spec.out_dir)
        splits = {name: dataset.qrels(name) for name in split_names(dataset)}
        if spec.split not in splits:
            dataset.qrels_path(spec.split)  # raises the "split not found; available: ..." error
        qrels = splits[spec.split]
        hard_negatives: HardNegatives = {}
        if spec.hard_negatives is not None:
            hard_negatives = read_hard_negatives(spec.hard_negatives)
            check_hard_negatives(spec.hard_negatives, hard_negatives, qrels)
        queries = [q for q in dataset.queries() if q.query_id in qrels]
        fingerprint = dataset.corpus_fingerprint()

        tracker = CorpusTracker(judged={d for judged in qrels.values() for d in judged})
        self._timed("index_s", self._prepare, dataset, fingerprint, tracker)
        run = self._timed("recall_s", self.recall.retrieve, queries, spec.recall_depth)
        candidates = {q.query_id: [d for d, _ in ranked(run.get(q.query_id, {}))][:spec.recall_depth] for q in queries}
        self.recall_ranks = {q: {d: rank for rank, d in enumerate(docs, start=1)} for q, docs in candidates.items()}
        query_hard_negatives = {q.query_id: set(hard_negatives.get(q.query_id, {})) for q in queries}
        wanted = ({d for docs in candidates.values() for d in docs} | {d for q in queries for d in qrels[q.query_id]}
                  | {d for docs in query_hard_negatives.values() for d in docs})
        texts = self._timed("texts_s", self._texts, dataset, wanted)
        ranks = self._timed("rerank_s", self._rank, queries, candidates, texts)

        questions = [question for q in queries
                     for question in labelled_positive_questions(q.query_id, qrels[q.query_id], ranks[q.query_id], spec.thresholds)]
        missing = [question for question in questions if question.doc_id not in texts]
        questions = [question for question in questions if question.doc_id in texts]
        text_of = {q.query_id: q.text for q in queries}
        decisions = self._timed("judge_s", self._ask, questions, text_of, texts, "labelled positives")
        dropped = {d.question.query_id for d in decisions if d.action is Action.DROP_QUERY}

        questions = [question for q in queries if q.query_id not in dropped
                     for question in prelabelled_questions(q.query_id, candidates[q.query_id], qrels[q.query_id],
                                                           query_hard_negatives[q.query_id], ranks[q.query_id], spec.thresholds)]
        decisions += self._timed("judge_s", self._ask, questions, text_of, texts, "pre-labelled positives")

        decisions, corrections = resolve(decisions, positives_by_document(splits))
        other_split_queries = {q for name, split_qrels in splits.items() if name != spec.split for q in split_qrels}

        with writer.staged_folder(spec.out_dir) as staged:
            files = self._timed("write_s", self._write, dataset, staged, corrections, other_split_queries, splits, decisions)
            self.timings["total_s"] = round(time.perf_counter() - started, 3)
            summary = self._summary(dataset, fingerprint, queries, qrels, hard_negatives, decisions, corrections,
                                    missing, files)
            summary["documents_not_indexed"] = {"count": tracker.failed, "examples": tracker.errors}
            writer.write_json(staged / writer.SUMMARY_NAME, summary)  # the staged folder is the atomic unit
        return summary

    def _prepare(self, dataset: BeirDataset, fingerprint: str, tracker: CorpusTracker) -> None:
        self.recall.prepare(dataset, fingerprint, tracker)
        for scorer in self.scorers:
            scorer.prepare(dataset, fingerprint, tracker)

    def _texts(self, dataset: BeirDataset, wanted: set[str]) -> dict[str, str]:
        """One pass over the corpus keeping only the texts QC needs (title + " " + text)."""
        return {document.doc_id: document.full_text for document in dataset.corpus() if document.doc_id in wanted}

    def _rank(self, queries: list[Query], candidates: dict[str, list[str]], texts: dict[str, str]) -> dict[str, dict[str, dict[str, int]]]:
        """query id -> reranker name -> candidate doc id -> rank (1-based, irforge's tie rule)."""
        ranks: dict[str, dict[str, dict[str, int]]] = {q.query_id: {} for q in queries}
        for scorer in self.scorers:
            scores = scorer.score(queries, candidates, texts)
            for query in queries:
                ranks[query.query_id][scorer.spec.text] = ranks_from_scores(scores.get(query.query_id, {}))
        return ranks

    def _ask(self, questions: list[Question], query_text: dict[str, str], texts: dict[str, str], what: str) -> list[Decision]:
        if not questions:
            return []
        pairs = [JudgePair(q.query_id, query_text[q.query_id], q.doc_id, texts[q.doc_id]) for q in questions]
        bar = self.progress(f"judging {what}", len(pairs), "pair")
        try:
            outcome = self.judge.judge(pairs, bar.update)
        finally:
            bar.close()
        if len(outcome.judgements) != len(pairs):
            raise RuntimeError(f"the judge returned {len(outcome.judgements)} judgements for {len(pairs)} pairs")
        for judgement in outcome.judgements:
            self.stats.add(judgement)
        return [decide(question, judgement, self.spec.relevant_from) for question, judgement in zip(questions, outcome.judgements)]

    def _write(self, dataset: BeirDataset, staged: Path, corrections: Corrections, other_split_queries: set[str],
               splits: dict[str, Qrels], decisions: list[Decision]) -> dict:
        removed_docs, dropped = corrections.removed_documents, corrections.dropped_queries
        kept_docs, dropped_docs = writer.filter_jsonl(dataset.corpus_path, staged / "corpus.jsonl", removed_docs.__contains__)
        kept_queries, dropped_query_lines = writer.filter_jsonl(
            dataset.queries_path, staged / "queries.jsonl", lambda q: q in dropped and q not in other_split_queries)
        (staged / "qrels").mkdir()
        added = [(q, d, label) for (q, d), label in corrections.added_positives.items()]
        lines_removed, lines_added = writer.rewrite_qrels(
            dataset.qrels_path(self.spec.split), staged / "qrels" / f"{self.spec.split}.tsv",
            lambda q, d: q in dropped or d in removed_docs, added)
        for name in splits:
            if name != self.spec.split:
                source = dataset.qrels_path(name)
                (staged / "qrels" / source.name).write_bytes(source.read_bytes())
        records = writer.write_jsonl(staged / writer.AUDIT_NAME, (
            audit_record(d, self.spec.relevant_from, self.recall_ranks[d.question.query_id].get(d.question.doc_id))
            for d in decisions))
        return {"documents_kept": kept_docs, "documents_removed": dropped_docs, "queries_kept": kept_queries,
                "queries_removed_from_queries_jsonl": dropped_query_lines, "qrels_lines_removed": lines_removed,
                "qrels_lines_added": lines_added, "audit_records": records}

    def _summary(self, dataset, fingerprint, queries, qrels, hard_negatives, decisions, corrections, missing, files) -> dict:
        per_case = {case.value: {"asked": 0, "labelled": 0, "undecided": 0, **{a.value: 0 for a in Action}} for case in Case}
        for decision in decisions:
            counts = per_case[decision.question.case.value]
            counts["asked"] += 1
            counts["labelled" if decision.decided else "undecided"] += 1
            counts[decision.action.value] += 1
        return {
            "dataset": dataset.name, "split": self.spec.split, "input": str(dataset.root), "output": str(self.spec.out_dir),
            "corpus_sha256": fingerprint, "queries": len(queries),
            "labelled_positives": sum(1 for judged in qrels.values() for label in judged.values() if label > 0),
            "labelled_positives_missing_from_corpus": len(missing),
            "hard_negatives": {"file": str(self.spec.hard_negatives) if self.spec.hard_negatives else None,
                               "pairs": sum(len(docs) for docs in hard_negatives.values()),
                               "pairs_for_this_split": sum(len(docs) for q, docs in hard_negatives.items() if q in qrels)},
            "cases": per_case,
            "decisions": len(decisions),
            "undecided": sum(1 for d in decisions if not d.decided),
            "queries_dropped": sorted(corrections.dropped_queries),
            "documents_removed": sorted(corrections.removed_documents),
            "positives_added": [{"query_id": q, "doc_id": d, "label": label} for (q, d), label in sorted(corrections.added_positives.items())],
            "changed": not corrections.empty,
            "files": files,
            "judge": {"identity": self.judge.identity(), "stats": self.stats.as_dict(), "relevant_from": self.spec.relevant_from},
            "recall": {"depth": self.spec.recall_depth, "retriever": self.recall.describe()},
            "rerankers": [scorer.describe() for scorer in self.scorers],
            "thresholds": {"default": self.spec.thresholds.default, "hard_negative": self.spec.thresholds.hard_negative,
                           "majority": "a document is pre-labelled positive when more than half of the rerankers rank it within the threshold"},
            "tie_rule": "score descending, then document id descending (irforge.ranking)",
            "document_text": "title + ' ' + text, stripped (BEIR/MTEB convention)",
            "mode": self.mode, "timings": self.timings, "versions": package_versions(VERSIONED_PACKAGES),
            "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }


def audit_record(decision: Decision, relevant_from: int, recall_rank: int | None) -> dict:
    question, judgement = decision.question, decision.judgement
    return {
        "query_id": question.query_id, "doc_id": question.doc_id, "case": question.case.value,
        "qrels_label": question.qrels_label, "recall_rank": recall_rank,
        "rerankers": question.prelabel.as_dict(),
        "judge": {"verdict": judgement.verdict.value, "label": judgement.label, "raw_output": judgement.raw_output,
                  "record_id": judgement.record_id, "from_store": judgement.from_store, "score": judgement.score,
                  "error": judgement.error, "backend": judgement.backend, "model": judgement.model},
        "relevant_from": relevant_from, "decided": decision.decided, "action": decision.action.value,
        "reason": decision.reason,
    }
