"""Reading a shard Job's state from what the API server returns: pure functions on client models.

job_state(V1Job) decides running / succeeded / failed from status conditions (Complete and
SuccessCriteriaMet; Failed and FailureTarget, which Kubernetes >= 1.31 sets first while pods
terminate), with the completed and failed indexes; follow_job(read, ...) polls until a verdict;
pod_failures(pods) pulls each failed index's termination message (the worker's last log lines)
for the error report. Tested on recorded client model objects, without a cluster.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from irforge.common.progress import Progress
from irforge.sharding.errors import ShardingCancelled, ShardingError

COMPLETION_INDEX_LABEL = "batch.kubernetes.io/job-completion-index"
COMPLETION_INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"
MESSAGE_CHARS = 1500
API_ERRORS_TOLERATED = 5        # consecutive failed status reads before giving up


def parse_indexes(text: str | None) -> list[int]:
    """Kubernetes' compressed index list ("1,3-5,7") as sorted integers."""
    indexes: set[int] = set()
    for part in (text or "").split(","):
        part = part.strip()
        if not part:
            continue
        low, _, high = part.partition("-")
        try:
            first, last = int(low), int(high or low)
        except ValueError:
            raise ValueError(f"not a Kubernetes index list: {text!r}") from None
        indexes.update(range(first, last + 1))
    return sorted(indexes)


@dataclass(frozen=True)
class JobState:
    phase: str                              # "running", "succeeded" or "failed"
    completed_indexes: list[int] = field(default_factory=list)
    failed_indexes: list[int] = field(default_factory=list)
    active: int = 0
    reason: str = ""                        # the deciding condition's reason, e.g. BackoffLimitExceeded
    message: str = ""

    @property
    def finished(self) -> bool:
        return self.phase != "running"


def _true(condition: client.V1JobCondition, *types: str) -> bool:
    return condition.type in types and str(condition.status) == "True"


def job_state(job: client.V1Job) -> JobState:
    status = job.status or client.V1JobStatus()
    completed = parse_indexes(status.completed_indexes)
    failed = parse_indexes(status.failed_indexes)
    common = {"completed_indexes": completed, "failed_indexes": failed, "active": status.active or 0}
    conditions = status.conditions or []
    # Failure wins: a valid Job never carries both verdicts, and any doubt must not pass as success.
    for condition in conditions:
        if _true(condition, "Failed", "FailureTarget"):
            return JobState("failed", reason=condition.reason or condition.type, message=condition.message or "", **common)
    for condition in conditions:
        if _true(condition, "Complete", "SuccessCriteriaMet"):
            return JobState("succeeded", reason=condition.reason or condition.type, message=condition.message or "", **common)
    return JobState("running", **common)


def _pod_index(pod: client.V1Pod) -> int | None:
    metadata = pod.metadata or client.V1ObjectMeta()
    value = (metadata.labels or {}).get(COMPLETION_INDEX_LABEL) or (metadata.annotations or {}).get(COMPLETION_INDEX_ANNOTATION)
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def attempts_per_index(pods: list[client.V1Pod]) -> dict[int, int]:
    """index -> pods the Job started for it (1 = no retry); evicted and replaced pods count too."""
    attempts: dict[int, int] = {}
    for pod in pods:
        index = _pod_index(pod)
        if index is not None:
            attempts[index] = attempts.get(index, 0) + 1
    return dict(sorted(attempts.items()))


def pod_failures(pods: list[client.V1Pod]) -> dict[int, str]:
    """index -> "exit status N (reason): message" of its most recently finished failed pod."""
    latest: dict[int, tuple[object, str]] = {}
    for pod in pods:
        index = _pod_index(pod)
        status = pod.status or client.V1PodStatus()
        if index is None or status.phase != "Failed":
            continue
        for container in status.container_statuses or []:
            terminated = container.state.terminated if container.state else None
            if terminated is None or terminated.exit_code == 0:
                continue
            message = (terminated.message or "").strip()[-MESSAGE_CHARS:]
            text = f"exit status {terminated.exit_code} ({terminated.reason or 'Error'})" + (f": {message}" if message else "")
            finished = terminated.finished_at
            if index not in latest or (finished is not None and (latest[index][0] is None or finished > latest[index][0])):
                latest[index] = (finished, text)
        if index not in latest and status.reason:  # e.g. Evicted, DeadlineExceeded: no container verdict
            latest[index] = (None, f"pod {status.reason}: {status.message or ''}".strip())
    return {index: text for index, (_, text) in latest.items()}


def follow_job(read: Callable[[], client.V1Job], where: str, sizes: dict[int, int], bar: Progress, *,
               cancel: threading.Event | None = None, poll_interval_s: float = 5.0, timeout_s: float | None = None,
               stop: Callable[[], None] = lambda: None) -> JobState:
    """Read the Job (`read`, e.g. BatchV1Api.read_namespaced_job) until it has a verdict; return it.

    Advances `bar` by each newly completed shard's size. Cancel or timeout: `stop()` (delete the
    Job), then ShardingCancelled / ShardingError. A few consecutive failed reads (API server
    restart, network blip) are tolerated; a vanished Job (404) is an error at once.
    """
    deadline = time.monotonic() + timeout_s if timeout_s else None
    counted: set[int] = set()
    errors = 0
    while True:
        if cancel is not None and cancel.is_set():
            stop()
            raise ShardingCancelled(f"sharded encode cancelled: Job {where} deleted")
        if deadline is not None and time.monotonic() > deadline:
            stop()
            raise ShardingError(f"kubernetes runner: Job {where} did not finish within {timeout_s:.0f} s; deleted")
        try:
            state = job_state(read())
            errors = 0
        except (ApiException, HTTPError, OSError) as error:
            if getattr(error, "status", None) == 404:
                raise ShardingError(f"kubernetes runner: Job {where} disappeared while running (deleted by someone else?)") from None
            errors += 1
            if errors > API_ERRORS_TOLERATED:
                raise ShardingError(f"kubernetes runner: cannot read Job {where} ({errors} attempts in a row): {error}") from None
            state = None
        if state is not None:
            for index in sorted(set(state.completed_indexes) - counted):
                bar.update(sizes.get(index, 0))
                counted.add(index)
            if state.finished:
                return state
        if cancel is not None:
            cancel.wait(poll_interval_s)
        else:
            time.sleep(poll_interval_s)
