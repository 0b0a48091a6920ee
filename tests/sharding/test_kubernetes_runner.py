"""Following a shard Job (recorded Job objects fed to follow_job), and the runner's errors when
no cluster can be reached (real client, real configuration loading, a loopback port with
nothing listening)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from irforge.models.encoder import EncoderSpec
from irforge.sharding import ShardingCancelled, ShardingError, make_shard_runner, plan_shards
from irforge.sharding.job import ShardJob
from irforge.sharding.runners.kubernetes_status import follow_job
from kubernetes import client
from kubernetes.client.exceptions import ApiException

SIZES = {0: 648, 1: 648, 2: 647}


class Bar:
    def __init__(self):
        self.updates: list[int] = []

    def update(self, n: int = 1) -> None:
        self.updates.append(n)

    def close(self) -> None:
        pass


def job(completed: str = "", failed: str = "", condition: tuple[str, str] | None = None, active: int = 0) -> client.V1Job:
    conditions = [client.V1JobCondition(type=condition[0], status="True", reason=condition[1])] if condition else None
    return client.V1Job(metadata=client.V1ObjectMeta(name="irforge-shards-abc"), status=client.V1JobStatus(
        active=active, completed_indexes=completed or None, failed_indexes=failed or None, conditions=conditions))


def recorded(*answers):
    """read() answering with each recorded Job (or raising each recorded error) in turn."""
    remaining = list(answers)

    def read():
        answer = remaining.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer
    return read


def test_follows_a_job_to_completion_through_api_blips():
    bar = Bar()
    state = follow_job(recorded(job(active=3), ApiException(status=503, reason="Service Unavailable"),
                                job(completed="1", active=2), job(completed="0-1", active=1),
                                job(completed="0-2", condition=("Complete", "CompletionsReached"))),
                       "irforge/irforge-shards-abc", SIZES, bar, poll_interval_s=0)
    assert state.phase == "succeeded"
    assert bar.updates == [648, 648, 647]   # each shard counted once, when it completed


def test_returns_the_failed_indexes():
    state = follow_job(recorded(job(active=3), job(completed="0,2", failed="1", condition=("FailureTarget", "FailedIndexes"))),
                       "ns/j", SIZES, Bar(), poll_interval_s=0)
    assert (state.phase, state.failed_indexes, state.reason) == ("failed", [1], "FailedIndexes")


def test_a_vanished_job_is_an_error_at_once():
    with pytest.raises(ShardingError, match="Job ns/j disappeared while running"):
        follow_job(recorded(job(active=1), ApiException(status=404, reason="Not Found")), "ns/j", SIZES, Bar(), poll_interval_s=0)


def test_an_unreadable_job_is_given_up_after_several_attempts():
    errors = [ApiException(status=500, reason="Internal Server Error")] * 6
    with pytest.raises(ShardingError, match=r"cannot read Job ns/j \(6 attempts in a row\)"):
        follow_job(recorded(*errors), "ns/j", SIZES, Bar(), poll_interval_s=0)


def test_cancel_deletes_the_job():
    stopped, cancel = [], threading.Event()
    cancel.set()
    with pytest.raises(ShardingCancelled, match="Job ns/j deleted"):
        follow_job(recorded(), "ns/j", SIZES, Bar(), cancel=cancel, stop=lambda: stopped.append(True))
    assert stopped == [True]


def test_timeout_deletes_the_job():
    stopped = []
    read = lambda: job(active=3)
    with pytest.raises(ShardingError, match="did not finish within"):
        follow_job(read, "ns/j", SIZES, Bar(), poll_interval_s=0.01, timeout_s=0.05, stop=lambda: stopped.append(True))
    assert stopped == [True]


@pytest.fixture()
def shard_job(scifact_facts) -> ShardJob:
    return ShardJob(Path("/var/cache/irforge/datasets/scifact"), Path("/var/cache/irforge/shards/x"), scifact_facts,
                    tuple(plan_shards(scifact_facts.total_documents, 4)), EncoderSpec("all-MiniLM-L6-v2"))


def test_outside_a_cluster_the_runner_says_so(shard_job, monkeypatch):
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    runner = make_shard_runner("kubernetes", image="irforge:dev", work_volume_claim="cache", namespace="irforge")
    with pytest.raises(ShardingError, match="cannot load the in-cluster configuration"):
        runner.run(shard_job, list(shard_job.shards))


def test_an_unreachable_api_server_is_a_clear_error(shard_job, tmp_path, unused_port):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(f"""apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: "http://127.0.0.1:{unused_port}"}}}}]
users: [{{name: u, user: {{token: not-a-secret}}}}]
contexts: [{{name: x, context: {{cluster: c, user: u, namespace: irforge}}}}]
current-context: x
""")
    runner = make_shard_runner("kubernetes", image="irforge:dev", work_volume_claim="cache", namespace="irforge",
                               in_cluster=False, kubeconfig=str(kubeconfig))
    with pytest.raises(ShardingError, match=r"cannot reach the Kubernetes API server to create Job irforge/irforge-shards-"):
        runner.run(shard_job, list(shard_job.shards))
