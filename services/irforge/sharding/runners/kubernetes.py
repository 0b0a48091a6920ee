"""Shards as a Kubernetes Indexed Job, through the official `kubernetes` client.

Submit build_indexed_job(...) with BatchV1Api.create_namespaced_job, poll the Job until a
verdict (job_state), report every failed index with its pod's termination message, delete the
Job on cancel or timeout. A Job of the same name (same corpus, plan, encoder, work folder: a
restarted orchestrator) is adopted while it runs, replaced once finished (shards are pending).

RBAC the caller's ServiceAccount needs in the namespace (the chart's orchestrator Role):
    batch/jobs: create, get, delete        core/pods: list   (failed shards' messages)
"""

from __future__ import annotations

import dataclasses
import threading
import time
from pathlib import Path

from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from irforge.common.progress import ProgressFactory, no_progress
from irforge.sharding.errors import ShardFailed, ShardingError, describe_failures
from irforge.sharding.job import RunOutcome, ShardJob
from irforge.sharding.plan import Shard
from irforge.sharding.runners.kubernetes_job import KubernetesRunnerConfig, build_indexed_job, job_name
from irforge.sharding.runners.kubernetes_status import JobState, attempts_per_index, follow_job, job_state, pod_failures

NAMESPACE_FILE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
REQUEST_TIMEOUT_S = 30          # every API call: a silent API server must not hang the job
DELETE_WAIT_S = 120             # how long to wait for a failed Job of the same name to disappear


class KubernetesShardRunner:
    name = "kubernetes"

    def __init__(self, config: KubernetesRunnerConfig):
        self.config = config
        self._api = None

    def describe(self, name: str, namespace: str) -> dict:
        return {"runner": self.name, "namespace": namespace, "job_name": name, "image": self.config.image,
                "gpu_per_shard": self.config.gpu_per_shard, "parallelism": self.config.parallelism,
                "backoff_limit_per_index": self.config.backoff_limit_per_index}

    # --- API access ---------------------------------------------------------------------------

    def _apis(self):
        if self._api is None:
            from kubernetes import client, config

            try:
                if self.config.in_cluster:
                    configuration = client.Configuration()
                    config.load_incluster_config(client_configuration=configuration)
                    api_client = client.ApiClient(configuration)
                else:
                    api_client = config.new_client_from_config(config_file=self.config.kubeconfig,
                                                               context=self.config.context)
            except (config.ConfigException, OSError) as error:
                where = "in-cluster configuration" if self.config.in_cluster else f"kubeconfig {self.config.kubeconfig or '~/.kube/config'}"
                raise ShardingError(f"kubernetes runner: cannot load the {where}: {error}; run inside the cluster "
                                    f"(in_cluster=True), give a kubeconfig (in_cluster=False), or use the local runner") from None
            self._api = (client.BatchV1Api(api_client), client.CoreV1Api(api_client))
        return self._api

    def _namespace(self) -> str:
        if self.config.namespace:
            return self.config.namespace
        if self.config.in_cluster and NAMESPACE_FILE.is_file():
            return NAMESPACE_FILE.read_text().strip()
        return "default"

    # --- run ----------------------------------------------------------------------------------

    def run(self, job: ShardJob, pending: list[Shard], *, progress: ProgressFactory | None = None,
            cancel: threading.Event | None = None) -> RunOutcome:
        namespace = self._namespace()
        config = dataclasses.replace(self.config, namespace=namespace)
        body = build_indexed_job(config, job)        # config errors surface before any API call
        name = job_name(config, job)
        batch, _ = self._apis()
        try:
            batch.create_namespaced_job(namespace, body, _request_timeout=REQUEST_TIMEOUT_S)
        except ApiException as error:
            if error.status != 409:
                raise ShardingError(f"kubernetes runner: cannot create Job {namespace}/{name}: {error.status} {error.reason}: "
                                    f"{(error.body or '')[:500]}") from None
            self._adopt_or_replace(batch, namespace, name, body)
        except (HTTPError, OSError) as error:
            raise ShardingError(f"kubernetes runner: cannot reach the Kubernetes API server to create Job "
                                f"{namespace}/{name}: {error}") from None
        # The Job runs every index; shards already complete skip in a second (see worker.py).
        sizes = {shard.index: shard.size for shard in job.shards}
        state = self._follow(batch, namespace, name, sizes, progress or no_progress, cancel)
        if state.phase == "failed":
            failures = self._failures(job, namespace, name, state)
            raise ShardFailed(self._failure_message(job, namespace, name, state, failures), failures)
        return RunOutcome(self.describe(name, namespace), attempts_per_index(self._pods(namespace, name) or []))

    def _pods(self, namespace: str, name: str):
        """The Job's pods, or None when they cannot be listed (reported, never fatal)."""
        try:
            _, core = self._apis()
            return core.list_namespaced_pod(namespace, label_selector=f"batch.kubernetes.io/job-name={name}",
                                            _request_timeout=REQUEST_TIMEOUT_S).items
        except (ApiException, HTTPError, OSError):
            return None

    def _adopt_or_replace(self, batch, namespace: str, name: str, body) -> None:
        try:
            existing = batch.read_namespaced_job(name, namespace, _request_timeout=REQUEST_TIMEOUT_S)
            if not job_state(existing).finished:
                return  # still running (a restarted orchestrator): follow it instead of starting the work twice
            # Finished, yet shards are pending (failed, or its outputs were deleted since): run it anew.
            batch.delete_namespaced_job(name, namespace, propagation_policy="Foreground", _request_timeout=REQUEST_TIMEOUT_S)
            deadline = time.monotonic() + DELETE_WAIT_S
            while time.monotonic() < deadline:
                try:
                    batch.read_namespaced_job(name, namespace, _request_timeout=REQUEST_TIMEOUT_S)
                except ApiException as error:
                    if error.status != 404:
                        raise
                    batch.create_namespaced_job(namespace, body, _request_timeout=REQUEST_TIMEOUT_S)
                    return
                time.sleep(2)
        except (ApiException, HTTPError, OSError) as error:
            raise ShardingError(f"kubernetes runner: cannot replace the earlier Job {namespace}/{name}: {error}") from None
        raise ShardingError(f"kubernetes runner: the finished Job {namespace}/{name} of an earlier run was not "
                            f"deleted within {DELETE_WAIT_S} s; delete it (kubectl -n {namespace} delete job {name})")

    def _follow(self, batch, namespace: str, name: str, sizes: dict[int, int], progress: ProgressFactory,
                cancel: threading.Event | None) -> JobState:
        def read():
            return batch.read_namespaced_job(name, namespace, _request_timeout=REQUEST_TIMEOUT_S)

        bar = progress(f"encode {len(sizes)} shard(s) in Job {name}", sum(sizes.values()), "doc")
        try:
            return follow_job(read, f"{namespace}/{name}", sizes, bar, cancel=cancel, poll_interval_s=self.config.poll_interval_s,
                              timeout_s=self.config.timeout_s + 60 if self.config.timeout_s else None,
                              stop=lambda: self._delete(batch, namespace, name))
        finally:
            bar.close()

    def _delete(self, batch, namespace: str, name: str) -> None:
        try:
            # Background: pods go with the Job; we do not wait for them.
            batch.delete_namespaced_job(name, namespace, propagation_policy="Background", _request_timeout=REQUEST_TIMEOUT_S)
        except (ApiException, HTTPError, OSError) as error:
            if getattr(error, "status", None) != 404:
                raise ShardingError(f"kubernetes runner: cannot delete Job {namespace}/{name} ({error}); "
                                    f"delete it by hand: kubectl -n {namespace} delete job {name}") from None

    def _failures(self, job: ShardJob, namespace: str, name: str, state: JobState) -> dict[int, str]:
        failed = state.failed_indexes or [s.index for s in job.shards if s.index not in state.completed_indexes]
        pods = self._pods(namespace, name)
        messages = pod_failures(pods) if pods is not None else {}
        note = "(no failed pod found)" if pods is not None else "(the Job's pods could not be listed)"
        return {index: messages.get(index, f"{state.reason} {note}") for index in failed}

    def _failure_message(self, job: ShardJob, namespace: str, name: str, state: JobState,
                         failures: dict[int, str]) -> str:
        return (describe_failures(f"Job {namespace}/{name} failed ({state.reason}: {state.message})", failures, job.shard_count)
                + f"\n  logs: kubectl -n {namespace} logs -l batch.kubernetes.io/job-name={name} --tail=50")
