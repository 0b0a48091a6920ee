"""The runner's verdict on a shard Job, from recorded Job and Pod statuses (client model objects)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from irforge.sharding.runners.kubernetes_status import attempts_per_index, job_state, parse_indexes, pod_failures
from kubernetes import client

T0 = datetime(2026, 11, 22, 7, 0, tzinfo=UTC)


def job(conditions=(), **status) -> client.V1Job:
    return client.V1Job(metadata=client.V1ObjectMeta(name="irforge-shards-abc"),
                        status=client.V1JobStatus(conditions=[client.V1JobCondition(**c) for c in conditions] or None, **status))


def test_a_new_job_without_status_is_running():
    assert job_state(client.V1Job(metadata=client.V1ObjectMeta(name="x"))).phase == "running"


def test_running_job_reports_completed_indexes():
    state = job_state(job(active=3, completed_indexes="0-1,4", ready=3))
    assert (state.phase, state.finished, state.completed_indexes, state.active) == ("running", False, [0, 1, 4], 3)


def test_complete_job_succeeds():
    state = job_state(job([{"type": "SuccessCriteriaMet", "status": "True", "reason": "CompletionsReached"},
                           {"type": "Complete", "status": "True", "reason": "CompletionsReached"}],
                          completed_indexes="0-7", succeeded=8))
    assert (state.phase, state.completed_indexes) == ("succeeded", list(range(8)))


def test_success_criteria_met_is_enough():
    # Kubernetes >= 1.31 sets it before Complete, while the last pods terminate.
    assert job_state(job([{"type": "SuccessCriteriaMet", "status": "True"}], completed_indexes="0-2")).phase == "succeeded"


def test_failed_indexes_fail_the_job_and_are_named():
    state = job_state(job([{"type": "FailureTarget", "status": "True", "reason": "FailedIndexes",
                            "message": "Job has failed indexes"}],
                          completed_indexes="0,2,5-7", failed_indexes="1,3-4", failed=9))
    assert (state.phase, state.reason, state.failed_indexes) == ("failed", "FailedIndexes", [1, 3, 4])
    assert state.message == "Job has failed indexes"


def test_deadline_exceeded_fails_without_failed_indexes():
    state = job_state(job([{"type": "Failed", "status": "True", "reason": "DeadlineExceeded",
                            "message": "Job was active longer than specified deadline"}], completed_indexes="0-3"))
    assert (state.phase, state.reason, state.failed_indexes) == ("failed", "DeadlineExceeded", [])


def test_a_condition_that_is_not_true_decides_nothing():
    state = job_state(job([{"type": "Failed", "status": "False"}, {"type": "Complete", "status": "Unknown"},
                           {"type": "Suspended", "status": "True"}], failed_indexes="2"))
    assert state.phase == "running" and state.failed_indexes == [2]   # failed so far, retries not exhausted


def test_failure_wins_over_success_in_malformed_status():
    state = job_state(job([{"type": "Complete", "status": "True"}, {"type": "Failed", "status": "True", "reason": "X"}]))
    assert state.phase == "failed"


@pytest.mark.parametrize("text,indexes", [(None, []), ("", []), ("7", [7]), ("0-2,5,9-10", [0, 1, 2, 5, 9, 10])])
def test_parse_indexes(text, indexes):
    assert parse_indexes(text) == indexes


def test_parse_indexes_refuses_garbage():
    with pytest.raises(ValueError, match="not a Kubernetes index list"):
        parse_indexes("1,x")


def pod(index: int, phase: str, exit_code: int | None = None, message: str = "", finished: datetime | None = None,
        reason: str | None = None) -> client.V1Pod:
    statuses = None
    if exit_code is not None:
        terminated = client.V1ContainerStateTerminated(exit_code=exit_code, reason="Error" if exit_code else "Completed",
                                                       message=message, finished_at=finished)
        statuses = [client.V1ContainerStatus(name="shard-worker", image="irforge", image_id="", ready=False,
                                             restart_count=0, state=client.V1ContainerState(terminated=terminated))]
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=f"irforge-shards-abc-{index}-x", labels={
            "batch.kubernetes.io/job-name": "irforge-shards-abc", "batch.kubernetes.io/job-completion-index": str(index)}),
        status=client.V1PodStatus(phase=phase, container_statuses=statuses, reason=reason))


def test_pod_failures_give_each_failed_index_its_last_message():
    pods = [
        pod(0, "Succeeded", 0, finished=T0),
        pod(1, "Failed", 1, "OSError: [Errno 5] Input/output error", finished=T0),
        pod(1, "Failed", 2, "irforge shard-worker: error: corpus has sha256 aaa, the plan expects bbb",
            finished=T0 + timedelta(minutes=3)),
        pod(2, "Running"),
        pod(3, "Failed", reason="Evicted", message=""),
    ]
    failures = pod_failures(pods)
    assert set(failures) == {1, 3}
    assert failures[1].startswith("exit status 2 (Error): irforge shard-worker: error: corpus has sha256")
    assert failures[3].startswith("pod Evicted")
    assert attempts_per_index(pods) == {0: 1, 1: 2, 2: 1, 3: 1}
