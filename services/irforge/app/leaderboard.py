"""The leaderboard's use cases, which every front door calls (the Leaderboard gRPC service, the
web pages): register a closed-book dataset, list datasets and their candidates, submit, read
one's submissions, and the entries and board the rankings are built from.

Who asks is the caller the front door bound (irforge.orchestrator.owners.caller: in-process
calls with none bound act as the local operator): operators register datasets and see every submission; a team submits
within its daily limit and sees its own submissions only, another team's answering NOT_FOUND.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from irforge.accounts.audit import audited
from irforge.accounts.identity import Forbidden, Identity
from irforge.common.files import atomic_write, file_sha256
from irforge.leaderboard.disclosure import Disclosure, disclosed_results
from irforge.leaderboard.errors import DatasetNotFound, LeaderboardError, SubmissionNotFound
from irforge.leaderboard.registry import (CANDIDATES_DEPTH, Registry, checked_main_metric, checked_name,
                                          per_query_policy)
from irforge.leaderboard.store import DatasetRecord, LeaderboardStore, SubmissionRecord, stamp, utc_now
from irforge.leaderboard import submissions as rules
from irforge.orchestrator.store import JobState

STATE_FILE = "leaderboard.sqlite3"
DEFAULT_DAILY_LIMIT = 10


@dataclass(frozen=True)
class SubmissionStatus:
    """A submission as its team (or an operator) may read it."""
    record: SubmissionRecord
    state: str                          # refused, QUEUED, RUNNING, SUCCEEDED, FAILED, CANCELLED
    error: str = ""                     # why it was refused or failed (scrubbed of qrels lines)
    metrics: dict = field(default_factory=dict)   # aggregate metrics once SUCCEEDED
    main_metric: str = ""
    per_query: dict = field(default_factory=dict)  # the main metric per query, where the policy shows it


class Leaderboard:
    def __init__(self, orchestrator, *, daily_limit: int | None = DEFAULT_DAILY_LIMIT,
                 team_limit: Callable[[str], int | None] | None = None):
        """`daily_limit`: a team's submissions per UTC day unless `team_limit(team)` (the
        accounts store's) names its own; None: unlimited."""
        self.orchestrator = orchestrator
        self.root = Path(orchestrator.state_dir) / "leaderboard"
        self.store = LeaderboardStore(Path(orchestrator.state_dir) / STATE_FILE)
        self.registry = Registry(self.root, self.store)
        self.daily_limit = daily_limit
        self.team_limit = team_limit
        self.disclosure = Disclosure(self.root, self._closed_datasets)

    def close(self) -> None:
        self.store.close()

    def _closed_datasets(self) -> dict[str, tuple[str, str]]:
        return {str(self.registry.data_dir(d.name)): (d.split, d.per_query) for d in self.store.datasets() if d.closed}

    def _operator(self, action: str) -> Identity:
        caller = self.disclosure.caller()
        if not caller.is_operator:
            raise Forbidden(f"{action} is an operator's action; {caller.name} is a team")
        return caller

    # -- datasets -----------------------------------------------------------------------------
    def register_dataset(self, name: str, source: str | Path, *, split: str = "test", task: str = "qa",
                         main_metric: str | None = None, language: str = "en", closed: bool = True,
                         per_query: str | None = None) -> DatasetRecord:
        """Copy `source` (a BEIR folder on the server) into the state dir and compute its fixed
        BM25 top 100 (embedded BM25, default k1 and b) once: the reranking category's candidates."""
        with audited("dataset.register", name, detail=f"from {source}"):
            return self._register(name, Path(source), split=split, task=task, main_metric=main_metric,
                                  language=language, closed=closed, per_query=per_query)

    def _register(self, name: str, source: Path, *, split: str, task: str, main_metric: str | None, language: str,
                  closed: bool, per_query: str | None) -> DatasetRecord:
        self._operator("registering a dataset")
        checked_name(name)
        metric = checked_main_metric(task, main_metric)
        policy = per_query_policy(closed, per_query)
        staging, copy = self.registry.stage(name, source, split)
        try:
            bm25 = _bm25_top(copy.root, split, language, staging / "bm25", self.root / "indexes")
            shutil.move(staging / "bm25" / "run.trec", staging / "candidates.trec")
            shutil.rmtree(staging / "bm25")   # its results.json scores the qrels: nothing of it is kept
            record = DatasetRecord(
                name=name, split=split, task=task, main_metric=metric, language=language, closed=closed, per_query=policy,
                created=stamp(utc_now()), queries=len(copy.qrels(split)), documents=sum(1 for _ in copy.corpus()),
                corpus_sha256=copy.corpus_fingerprint(), candidates_sha256=file_sha256(staging / "candidates.trec"),
                candidates_depth=CANDIDATES_DEPTH, bm25=bm25)
            self.registry.commit(staging, record)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        return record

    def list_datasets(self) -> list[DatasetRecord]:
        return self.store.datasets()

    def candidates(self, name: str) -> Path:
        """The dataset's fixed BM25 top 100 (a TREC run: no label in it), for anyone to download."""
        self.store.dataset(name)   # DatasetNotFound
        return self.registry.candidates_path(name)

    # -- submissions --------------------------------------------------------------------------
    def submit(self, *, dataset: str, system: str, category: str, kind: str, data: bytes) -> SubmissionStatus:
        """Count, keep and check a submission, then queue its job. The limit is checked before
        anything else; every submission past it is kept (its bytes and SHA-256) and counts, even
        one refused for what it holds. The audit log gets a row either way (refusals' messages
        as the team reads them: scrubbed)."""
        with audited("leaderboard.submit", dataset[:64]) as row:
            status = self._submit(dataset=dataset, system=system, category=category, kind=kind, data=data)
            row.target, row.detail = status.record.submission_id, f"{dataset[:64]} {category[:20]} {kind[:20]} job {status.record.job_id}"
            return status

    def _submit(self, *, dataset: str, system: str, category: str, kind: str, data: bytes) -> SubmissionStatus:
        caller = self.disclosure.caller()
        limit = None if caller.is_operator else self._limit_for(caller.name)
        now = utc_now()
        day_start, day_end = rules.utc_day(now)
        record = self.store.reserve(
            team=caller.name, limit=limit, day_start=day_start, day_end=day_end,
            refusal=lambda used: rules.limit_message(caller.name, used, limit, day_start, day_end, now),
            system=system[:100], category=category[:20], dataset=dataset[:64], kind=kind[:20],
            fingerprint=rules.fingerprint(data), size=len(data), file=rules.STORED_NAMES.get(kind, "submitted.bin"))
        folder = self.root / "submissions" / record.submission_id
        folder.mkdir(parents=True)
        with atomic_write(folder / record.file, "wb") as handle:
            handle.write(data)
        try:
            rules.checked_request(category, kind, system, data)
            spec = self._job_spec(record, folder / record.file, data)
            job_id = self.orchestrator.submit(spec)
        except DatasetNotFound as error:
            self.store.update(record.submission_id, state="refused", reason=str(error))
            raise
        except ValueError as error:   # LeaderboardError, the orchestrator's JobSpecError
            message = self._scrubbed(dataset, str(error))
            self.store.update(record.submission_id, state="refused", reason=message)
            raise LeaderboardError(message) from None
        except Exception as error:   # a service down, a full disk: refused too (it counted), and said as it is
            self.store.update(record.submission_id, state="refused",
                              reason=self._scrubbed(dataset, f"{type(error).__name__}: {error}"))
            raise
        self.store.update(record.submission_id, state="submitted", job_id=job_id)
        return self.submission(record.submission_id)

    def _limit_for(self, team: str) -> int | None:
        own = self.team_limit(team) if self.team_limit is not None else None
        return own if own is not None else self.daily_limit

    def _job_spec(self, record: SubmissionRecord, stored: Path, data: bytes):
        dataset = self.store.dataset(record.dataset)
        return rules.job_spec(dataset, self.registry.data_dir(dataset.name), self.registry.candidates_path(dataset.name),
                              category=record.category, kind=record.kind, stored=stored, data=data,
                              name=f"leaderboard {record.dataset}: {record.team}/{record.system} ({record.category})")

    def _scrubbed(self, dataset: str, text: str) -> str:
        """`text` as the caller may read it about `dataset` (its lines naming judged pairs withheld if closed)."""
        if not self.store.has_dataset(dataset):
            return text
        closed = self.disclosure.closed_job({"pipeline": {"dataset": str(self.registry.data_dir(dataset))}})
        return closed[0].scrub(text) if closed else text

    def submissions(self) -> list[SubmissionStatus]:
        """The caller's submissions, newest first (an operator's: everyone's)."""
        caller = self.disclosure.caller()
        return [self._status(r) for r in self.store.submissions(None if caller.is_operator else caller.name)]

    def submission(self, submission_id: str) -> SubmissionStatus:
        record = self.store.submission(submission_id)
        caller = self.disclosure.caller()
        if not caller.is_operator and record.team != caller.name:
            raise SubmissionNotFound(submission_id)   # as if it did not exist: no oracle of others' ids
        return self._status(record)

    def _status(self, record: SubmissionRecord) -> SubmissionStatus:
        if record.state != "submitted":
            return SubmissionStatus(record, state=record.state, error=record.reason)
        job = self.disclosure.record(self.orchestrator.get(record.job_id))
        dataset = self.store.dataset(record.dataset)
        per_query = {}
        if job.state == JobState.SUCCEEDED:
            results = self._results(record.job_id)
            shown = results if self.disclosure.sees_everything() or not dataset.closed else \
                disclosed_results(results, dataset.per_query)
            per_query = {q: v[dataset.main_metric] for q, v in shown.get("per_query", {}).items() if dataset.main_metric in v}
        return SubmissionStatus(record, state=job.state.value, error=job.error, metrics=dict(job.metrics),
                                main_metric=dataset.main_metric, per_query=per_query)

    def _results(self, job_id: str) -> dict:
        from irforge.results.reading import read_results

        return read_results(self.orchestrator.results_dir(job_id) / "results.json", required=())

    # -- the board ----------------------------------------------------------------------------
    def entries(self):
        """Every done submission as a board Entry, per-query values filled in (server side only:
        the Board built from them holds aggregates and p-values, never a per-query value).
        The board is public: every team's jobs are read with the server's own authority (the job
        store and results folders), not as the caller, who may see only its own jobs."""
        from irforge.leaderboard.board import Entry
        from irforge.results.reading import read_results

        datasets = {d.name: d for d in self.store.datasets()}
        entries = []
        for record in self.store.submissions(None, limit=1_000_000):
            if record.state != "submitted" or record.dataset not in datasets:
                continue
            if self.orchestrator.store.job(record.job_id).state != JobState.SUCCEEDED:
                continue
            folder = self.orchestrator.job_dir(record.job_id) / "results"
            dataset, results = datasets[record.dataset], read_results(folder / "results.json", required=())
            metric = dataset.main_metric
            entries.append(Entry(
                submission_id=record.submission_id, team=record.team, system=record.system, category=record.category,
                dataset=dataset.name, task=dataset.task, language=dataset.language, main_metric=metric,
                value=float(results["metrics"][metric]), judged_at_10=float(results["metrics"].get("Judged@10", 0.0)),
                per_query={q: float(v[metric]) for q, v in results.get("per_query", {}).items()}, created=record.created))
        return entries

    def board(self, **filters):
        """rank's build_board over every done submission (filters: category, datasets, language,
        task, since, until, baseline, alpha...)."""
        from irforge.leaderboard.board import build_board

        return build_board(self.entries(), **filters)


def _bm25_top(data_dir: Path, split: str, language: str, out: Path, index_dir: Path) -> dict:
    """irforge's embedded BM25 (default k1, b) top 100 of every query of the split, as `irforge
    eval` retrieves it: OUT/run.trec. Its configuration, as results.json records it."""
    from irforge.app.evaluate import evaluate
    from irforge.config import PipelineConfig, with_options

    config = with_options(PipelineConfig(), {"dataset": str(data_dir), "split": split, "retriever": "bm25",
                                             "top_k": CANDIDATES_DEPTH, "language": language, "index_dir": str(index_dir)},
                          "leaderboard registration")
    results = evaluate(config, out)
    return {key: value for key, value in results["retriever"].items() if key not in ("languages", "corpus_id")}
