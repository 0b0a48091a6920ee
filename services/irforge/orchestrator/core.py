"""The orchestrator's transport-free core: a pool of worker threads running jobs step by step.

- State lives in the JobStore (SQLite): an orchestrator started on the same state resumes every
  QUEUED or RUNNING job from its last completed step.
- A step failing because a service is unreachable or too slow (UNAVAILABLE, DEADLINE_EXCEEDED)
  is retried, with exponential backoff, up to `max_attempts` times; any other error fails the job
  at once with the service's own error type and message.
- Jobs on the same corpus and retriever share one index and one embedding cache: the step that
  builds them holds a lock per (corpus fingerprint, retriever identity), and the job waiting on
  it then finds them ready.
- Cancelling stops a job between steps and inside long steps (each progress update checks).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from irforge.accounts.audit import audited
from irforge.common import request_context
from irforge.common.allowed_roots import enforced
from irforge.common.grpc_errors import ServiceUnavailable, bounded_text
from irforge.common.metrics import JOBS
from irforge.common.progress import LineProgress
from irforge.common.redact import redact_text
from irforge.corpus.errors import BackendUnavailable
from irforge.orchestrator.context import ServiceAddresses, StepContext
from irforge.orchestrator.errors import (
    JobCancelled,
    JobNotFound,
    JobSpecError,
    OrchestratorStopping,
    ResultsNotReady,
)
from irforge.orchestrator.limits import checked_limit, checked_sequence
from irforge.orchestrator.owners import caller, may_see, owner_of
from irforge.orchestrator.spec import JobSpec
from irforge.orchestrator.steps import (final_metrics, job_failure, job_warnings, plan_steps, result_files, run_step,
                                        step_kind)
from irforge.orchestrator.store import JobEvent, JobRecord, JobState, JobStore

# Errors that say "the service could not be reached or did not answer in time": worth a retry.
TRANSIENT_ERRORS = (ServiceUnavailable, BackendUnavailable)
STATE_FILE = "jobs.sqlite3"
log = logging.getLogger("irforge.orchestrator")
# Events worth a log line, at their level (progress events are for watchers; the log gets
# LineProgress's lines, every IRFORGE_PROGRESS_EVERY seconds).
LOGGED_EVENTS = {"QUEUED": logging.INFO, "RUNNING": logging.INFO, "SUCCEEDED": logging.INFO, "CANCELLED": logging.INFO,
                 "FAILED": logging.ERROR, "resumed": logging.INFO, "waiting": logging.INFO, "interrupted": logging.WARNING,
                 "running": logging.INFO, "done": logging.INFO, "retrying": logging.WARNING}


class Orchestrator:
    def __init__(self, state_dir: Path, services: ServiceAddresses, *, workers: int = 2, max_attempts: int = 3,
                 backoff_s: float = 1.0, progress_interval_s: float = 0.5, cache_path: Path | None = None,
                 allowed_roots: tuple[Path, ...] = ()):
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, got {max_attempts}")
        self.state_dir = Path(state_dir)
        self.services = services
        self.allowed_roots = tuple(Path(root) for root in allowed_roots)   # empty: any path (one user's machine)
        self.max_attempts = max_attempts
        self.backoff_s = backoff_s
        self.progress_interval_s = progress_interval_s
        self.cache_path = cache_path or self.state_dir / "embeddings.sqlite3"
        self.store = JobStore(self.state_dir / STATE_FILE)
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="irforge-job")
        self._cancelled: set[str] = set()
        self._cancel_events: dict[str, threading.Event] = {}   # running jobs': handed to work that polls an Event
        self._stopping = threading.Event()
        self._changed = threading.Condition()    # wakes watchers when an event is stored
        self._locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()
        self._listeners: list[Callable[[JobEvent], None]] = []

    # -- lifecycle ----------------------------------------------------------------------------
    def start(self) -> Orchestrator:
        """Queue again every job an earlier orchestrator left QUEUED or RUNNING, oldest first."""
        for record in reversed(self.store.jobs(limit=1_000_000, states=(JobState.QUEUED, JobState.RUNNING))):
            done = [step.name for step in record.steps if step.state == "done"]
            self._event(record.job_id, "", "resumed", message=f"resumed; steps already done: {', '.join(done) or 'none'}")
            self._pool.submit(self._run, record.job_id)
        return self

    def request_stop(self) -> None:
        """Stop starting steps; running steps stop at their next progress update. Jobs stay RUNNING."""
        self._stopping.set()
        for event in list(self._cancel_events.values()):
            event.set()

    def shutdown(self, wait: bool = True) -> None:
        self.request_stop()
        self._pool.shutdown(wait=wait, cancel_futures=True)
        if wait:
            self.store.close()

    def subscribe(self, listener: Callable[[JobEvent], None]) -> None:
        """Call `listener(event)` for every event, synchronously, in the thread that made it."""
        self._listeners.append(listener)

    # -- the API ------------------------------------------------------------------------------
    # Who may see a job: its owner, and every operator. Another team's job answers JobNotFound,
    # word for word as a job that does not exist, so a job id tells an outsider nothing.
    def submit(self, spec: JobSpec) -> str:
        with audited("submit", detail=spec.name) as row:
            row.target = self._submit(spec)
        return row.target

    def _submit(self, spec: JobSpec) -> str:
        owner = owner_of(caller())
        spec.validate()
        spec.check_paths(self.allowed_roots)
        with enforced(self.allowed_roots):
            steps = plan_steps(spec, self._endpoint_kind(spec))
            self._check_services(spec, steps)
        job_id = self.store.create_job(spec.as_dict(), steps, owner=owner)
        self._event(job_id, "", JobState.QUEUED.value, message=f"steps: {', '.join(steps)}")
        self._pool.submit(self._run, job_id)
        return job_id

    def get(self, job_id: str) -> JobRecord:
        return _with_warnings(self._visible(job_id))

    def list(self, limit: int = 100) -> list[JobRecord]:
        """The caller's newest `limit` jobs (an operator's: everyone's) (0: 100)."""
        who = caller()
        records = self.store.jobs(limit=checked_limit(limit) or 100, owner=None if who.is_operator else owner_of(who))
        return [_with_warnings(record) for record in records]

    def _visible(self, job_id: str) -> JobRecord:
        """The job, if the caller may see it; JobNotFound, the same as for no such job, if not."""
        record = self.store.job(job_id)
        if not may_see(caller(), record.owner):
            raise JobNotFound(job_id)
        return record

    def cancel(self, job_id: str) -> JobRecord:
        with audited("cancel", job_id):
            return self._cancel(job_id)

    def _cancel(self, job_id: str) -> JobRecord:
        record = self._visible(job_id)
        if record.state.ended:
            return record
        self._cancelled.add(job_id)
        if job_id in self._cancel_events:
            self._cancel_events[job_id].set()
        if record.state == JobState.QUEUED:  # not started: nothing to interrupt
            self._end(job_id, JobState.CANCELLED, "cancelled before it started")
        return self.store.job(job_id)

    def watch(self, job_id: str, after: int = 0, is_active: Callable[[], bool] = lambda: True) -> Iterator[JobEvent]:
        """Every event after `after`, then new ones as they come, until the job has ended."""
        last = checked_sequence(after)   # before SQLite sees it
        self._visible(job_id)  # JobNotFound before anything is streamed
        while True:
            ended = self.store.job(job_id).state.ended   # read before the events: the last event precedes the state
            for event in self.store.events(job_id, last):
                last = event.sequence
                yield event
            if ended or not is_active():
                return
            with self._changed:
                self._changed.wait(timeout=0.5)

    def results_dir(self, job_id: str) -> Path:
        with audited("results", job_id):
            return self._results_dir(job_id)

    def _results_dir(self, job_id: str) -> Path:
        record = self._visible(job_id)
        if record.state != JobState.SUCCEEDED:
            raise ResultsNotReady(f"job {job_id} is {record.state.value}" + (f": {record.error}" if record.error else "")
                                  + "; results exist once it has SUCCEEDED")
        folder = self.job_dir(job_id) / "results"
        missing = [name for name in result_files(folder) if not (folder / name).exists()]
        if missing:
            raise ResultsNotReady(f"job {job_id} succeeded but {', '.join(missing)} is missing from {folder}")
        return folder

    def job_dir(self, job_id: str) -> Path:
        return self.state_dir / "jobs" / job_id

    # -- submission checks --------------------------------------------------------------------
    @staticmethod
    def _endpoint_kind(spec: JobSpec) -> str:
        """The kind of the spec's endpoint, as the builder reads it (with the spec's overrides; a
        rerank endpoint given as the first stage is refused here)."""
        if spec.pipeline.endpoint.spec is None:
            return ""
        from contextlib import ExitStack

        from irforge.builder.pipeline import PipelineBuilder
        from irforge.endpoints.errors import EndpointSpecError
        from irforge.orchestrator.context import job_spec_errors

        try:
            with ExitStack() as stack, job_spec_errors():
                return PipelineBuilder(spec.pipeline, stack).endpoint.kind
        except EndpointSpecError as error:
            raise JobSpecError(f"job spec field 'pipeline.endpoint.spec': {error}") from None

    def _check_services(self, spec: JobSpec, steps: list[str]) -> None:
        if spec.instructions:  # one step that does the work of the steps its retriever needs
            steps = plan_steps(replace(spec, instructions=False), self._endpoint_kind(spec))
        steps = [step_kind(step) for step in steps]   # a suite's `<label>/<step>`
        needed = {"evaluator"}
        if "ingest_lexical" in steps or "encode_vectors" in steps:
            needed.add("corpus")
        if "encode_vectors" in steps and self._endpoint_kind(spec) != "openai-embeddings":
            needed.add("encoder")
        holes = spec.pipeline.holes
        if "judge_holes" in steps and holes.judge == "embedded" and not holes.thresholds:   # else the job's own judge
            needed.add("judge")
        for role in sorted(needed):
            self.services.required(role)

    # -- running a job ------------------------------------------------------------------------
    def _run(self, job_id: str) -> None:
        # Every log line and every call to a service made for the job carries its id; every file
        # the job opens is checked against the allowed roots when it is opened.
        with request_context.bound(job_id=job_id), enforced(self.allowed_roots):
            self._run_job(job_id)

    def _run_job(self, job_id: str) -> None:
        record = self.store.job(job_id)
        if record.state.ended or self._stopping.is_set():
            self._cancelled.discard(job_id)
            return
        spec = JobSpec.from_dict(record.spec)
        job_dir = self.job_dir(job_id)
        job_dir.mkdir(parents=True, exist_ok=True)
        current = {"step": ""}
        context = StepContext(
            job_id=job_id, spec=spec, job_dir=job_dir, services=self.services,
            progress=self._progress_factory(job_id, current), lock=lambda key: self._lock(key, job_id),
            outputs={s.name: s.output for s in record.steps if s.state == "done"},
            durations={s.name: s.duration_s for s in record.steps if s.state == "done"},
            cache_path=self.cache_path,
        )
        self._cancel_events[job_id] = context.cancel_event
        self.store.set_state(job_id, JobState.RUNNING)
        self._event(job_id, "", JobState.RUNNING.value)
        try:
            for step in record.steps:
                if step.state == "done":
                    continue
                self._check(job_id)
                current["step"] = step.name
                context.outputs[step.name] = self._run_step(context, step.name)
            failure = job_failure(context.outputs)   # every step done, results written, and still a failure
            self._end(job_id, JobState.FAILED if failure else JobState.SUCCEEDED,
                      failure or "; ".join(job_warnings(context.outputs)), metrics=final_metrics(context.outputs))
        except OrchestratorStopping:
            self._event(job_id, current["step"], "interrupted", message="orchestrator stopping; the job resumes when it restarts")
        except JobCancelled:
            self._end(job_id, JobState.CANCELLED, f"cancelled during {current['step'] or 'start'}")
        except Exception as error:  # noqa: BLE001 - any error ends the job, with its message
            self._end(job_id, JobState.FAILED, f"step {current['step']}: {type(error).__name__}: {error}")
        finally:
            context.close()
            self._cancelled.discard(job_id)
            self._cancel_events.pop(job_id, None)

    def _run_step(self, context: StepContext, name: str) -> dict:
        job_id = context.job_id
        for attempt in range(1, self.max_attempts + 1):
            self.store.start_step(job_id, name)
            self._event(job_id, name, "running", message=f"attempt {attempt} of {self.max_attempts}")
            started = time.perf_counter()
            try:
                output = run_step(context, name)
            except TRANSIENT_ERRORS as error:
                self.store.fail_step(job_id, name)
                self._check(job_id)
                if attempt == self.max_attempts:
                    error.args = (f"{error} (gave up after {attempt} attempts)",)
                    raise
                delay = self.backoff_s * 2 ** (attempt - 1)
                self._event(job_id, name, "retrying", message=f"{error}; attempt {attempt + 1} in {delay:g}s")
                self._sleep(delay, job_id)
                continue
            except BaseException:
                self.store.fail_step(job_id, name)
                self._check(job_id)  # a cancel that surfaced as a broken stream is still a cancel
                raise
            duration = time.perf_counter() - started
            self.store.finish_step(job_id, name, output, duration)
            context.durations[name] = round(duration, 3)
            self._event(job_id, name, "done", message=f"{duration:.1f}s")
            return output
        raise AssertionError("unreachable")

    def _check(self, job_id: str) -> None:
        if job_id in self._cancelled:
            raise JobCancelled(job_id)
        if self._stopping.is_set():
            raise OrchestratorStopping(job_id)

    def _sleep(self, seconds: float, job_id: str) -> None:
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            time.sleep(min(left, 0.1))  # short slices: a cancel or stop ends the wait at once
            self._check(job_id)

    @contextmanager
    def _lock(self, key: str, job_id: str):
        with self._locks_guard:
            lock = self._locks.setdefault(key, threading.Lock())
        if not lock.acquire(blocking=False):
            self._event(job_id, "", "waiting", message=f"another job is building {key}; waiting to reuse it")
            while not lock.acquire(timeout=0.2):
                self._check(job_id)
        try:
            yield
        finally:
            lock.release()

    def _end(self, job_id: str, state: JobState, error: str, metrics: dict | None = None) -> None:
        # The job record is read by every client: no credentials from URLs, no 100 KB id quoted whole.
        error = bounded_text(redact_text(error))
        # The event first: a watcher that sees the job ended has then already seen its last event.
        self._event(job_id, "", state.value, message=error)
        self.store.set_state(job_id, state, error=error if state != JobState.SUCCEEDED else "", metrics=metrics)
        self._count_jobs()
        with self._changed:
            self._changed.notify_all()

    def _event(self, job_id: str, step: str, state: str, **details) -> JobEvent:
        if isinstance(details.get("message"), str):   # events are the job record clients read: no URL credentials
            details["message"] = redact_text(details["message"])
        event = self.store.add_event(job_id, step, state, **details)
        if state in LOGGED_EVENTS:
            with request_context.bound(job_id=job_id):
                log.log(LOGGED_EVENTS[state], "job %s %s%s%s", job_id, f"step {step} " if step else "", state,
                        f": {event.message}" if event.message else "")
        if not step and state in JobState.__members__:
            self._count_jobs()
        with self._changed:
            self._changed.notify_all()
        for listener in list(self._listeners):
            listener(event)
        return event

    def _count_jobs(self) -> None:
        counts = self.store.count_by_state()
        for state in JobState:
            JOBS.labels(state=state.value).set(counts.get(state, 0))

    def _progress_factory(self, job_id: str, current: dict):
        orchestrator = self

        class JobProgress:
            """A progress bar that reports to the job's event stream (for watchers), writes the
            job's log lines (common.progress.LineProgress) and stops a cancelled job."""

            def __init__(self, description: str, total: int | None, unit: str):
                self.description, self.total, self.unit = description, total or 0, unit
                self.done = 0
                self.started = self.reported = time.monotonic()
                self.log_lines = LineProgress(f"job {job_id} step {current['step']}: {description}", total, unit)
                orchestrator._check(job_id)

            def update(self, n: int = 1) -> None:
                self.done += n
                self.log_lines.update(n)
                orchestrator._check(job_id)
                if time.monotonic() - self.reported >= orchestrator.progress_interval_s:
                    self._report()

            def _report(self) -> None:
                self.reported = time.monotonic()
                elapsed = max(self.reported - self.started, 1e-9)
                rate = self.done / elapsed
                eta = (self.total - self.done) / rate if self.total and rate > 0 else -1.0
                orchestrator._event(job_id, current["step"], "progress", done=self.done, total=self.total, rate=rate,
                                    eta_seconds=max(eta, 0.0) if eta >= 0 else -1.0, message=self.description, unit=self.unit)

            def close(self) -> None:
                self.log_lines.close()
                self._report()

        return JobProgress


def _with_warnings(record: JobRecord) -> JobRecord:
    return dataclasses.replace(record, warnings=job_warnings({s.name: s.output for s in record.steps if s.state == "done"}))
