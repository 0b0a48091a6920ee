"""The Kubernetes Indexed Job that runs shard workers: configuration and a pure builder.

build_indexed_job(config, job) returns a kubernetes.client.V1Job and touches no cluster, so the
object is tested against the Kubernetes schema offline. One pod per completion index; the
controller sets $JOB_COMPLETION_INDEX, which `irforge shard-worker` reads as its shard index.

Retries are per index (backoffLimitPerIndex): one bad shard does not consume the others'
retries. The pod failure policy does not count evictions/preemptions (DisruptionTarget) and
fails an index at once on exit status 2 (irforge's "bad input or configuration": a rerun cannot help).
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from kubernetes import client

from irforge.sharding.errors import ShardingConfigError
from irforge.sharding.job import ShardJob

CONTAINER_NAME = "shard-worker"
USER_ERROR_EXIT_CODE = 2            # irforge.cli.main: DataFormatError, ModelError, ShardingError, ...
JOB_ID_LABEL = "irforge.dev/shard-job-id"
MAX_PREFIX_LENGTH = 40              # + "-" + 12-char job id: pod hostnames "<job>-<index>" stay under 63
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")


def _check_label(value: str, what: str, limit: int = 63) -> None:
    if not isinstance(value, str) or not _DNS_LABEL.match(value) or len(value) > limit:
        raise ShardingConfigError(f"kubernetes runner: {what} {value!r} must be lowercase letters, digits and '-', "
                                  f"start and end alphanumeric, at most {limit} characters")


def _model(cls, data, what: str):
    """A client model (e.g. V1Toleration) from its manifest form (camelCase keys); names any unknown key."""
    if not isinstance(data, dict):
        raise ShardingConfigError(f"kubernetes runner: {what} must be a mapping, got {data!r}")
    by_json_name = {json_name: attribute for attribute, json_name in cls.attribute_map.items()}
    unknown = sorted(set(data) - set(by_json_name))
    if unknown:
        raise ShardingConfigError(f"kubernetes runner: {what} has unknown field(s) {', '.join(unknown)}; "
                                  f"allowed: {', '.join(sorted(by_json_name))}")
    return cls(**{by_json_name[key]: value for key, value in data.items()})


@dataclass(frozen=True)
class KubernetesRunnerConfig:
    """Where and how shard pods run. Paths: the work volume is mounted at `work_mount_path` in the
    pods, the same path the coordinator (the orchestrator pod) sees it at."""

    image: str
    work_volume_claim: str                        # PVC (ReadWriteMany) holding work_dir, shared with the coordinator
    work_mount_path: str = "/var/cache/irforge"
    namespace: str | None = None                  # None: the pod's own namespace in-cluster, else "default"
    job_name_prefix: str = "irforge-shards"
    gpu_per_shard: int = 0                        # nvidia.com/gpu limit per pod
    resources: dict = field(default_factory=dict)  # {"requests": {...}, "limits": {...}}
    node_selector: dict = field(default_factory=dict)
    tolerations: list = field(default_factory=list)  # manifest form: [{"key": ..., "operator": ..., "effect": ...}]
    service_account: str | None = None            # the pods' ServiceAccount (they need no API access)
    extra_volume_claims: dict = field(default_factory=dict)  # claim -> mount path, read-only (e.g. datasets)
    env: dict = field(default_factory=dict)       # extra environment of the workers (never secrets' values)
    parallelism: int | None = None                # pods at once (None: every shard)
    backoff_limit_per_index: int = 2              # retries of one shard
    max_failed_indexes: int | None = None         # fail the whole Job early beyond this many failed shards
    ttl_seconds_after_finished: int = 86400       # the cluster deletes the finished Job (and pods) after this
    timeout_s: int | None = None                  # activeDeadlineSeconds, and how long the runner waits
    image_pull_policy: str = "IfNotPresent"
    image_pull_secrets: list = field(default_factory=list)
    priority_class_name: str | None = None
    run_as_user: int = 10001                      # deploy/Dockerfile's user
    run_as_group: int = 10001
    fs_group: int = 10001
    command: tuple = ("irforge",)
    poll_interval_s: float = 5.0
    in_cluster: bool = True                       # False: kubeconfig (`kubeconfig`, `context`)
    kubeconfig: str | None = None
    context: str | None = None

    def __post_init__(self):
        if not isinstance(self.image, str) or not self.image.strip():
            raise ShardingConfigError("kubernetes runner: image is required (the irforge image the pods run)")
        _check_label(self.work_volume_claim, "work_volume_claim", 253)
        for claim in self.extra_volume_claims:
            _check_label(claim, "extra_volume_claims key", 253)
        for path in (self.work_mount_path, *self.extra_volume_claims.values()):
            if not isinstance(path, str) or not PurePosixPath(path).is_absolute() or path.rstrip("/") in ("", "/tmp"):
                raise ShardingConfigError(f"kubernetes runner: mount path {path!r} must be absolute, not / or /tmp")
        if self.namespace is not None:
            _check_label(self.namespace, "namespace")
        _check_label(self.job_name_prefix, "job_name_prefix", MAX_PREFIX_LENGTH)
        if self.service_account is not None:
            _check_label(self.service_account, "service_account", 253)
        for name, value, least in (("gpu_per_shard", self.gpu_per_shard, 0),
                                   ("backoff_limit_per_index", self.backoff_limit_per_index, 0),
                                   ("ttl_seconds_after_finished", self.ttl_seconds_after_finished, 0),
                                   ("parallelism", self.parallelism, 1), ("max_failed_indexes", self.max_failed_indexes, 0),
                                   ("timeout_s", self.timeout_s, 1), ("run_as_user", self.run_as_user, 1),
                                   ("run_as_group", self.run_as_group, 1), ("fs_group", self.fs_group, 1)):
            if value is None and name in ("parallelism", "max_failed_indexes", "timeout_s"):
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ShardingConfigError(f"kubernetes runner: {name} must be an integer >= {least}, got {value!r}")
        if set(self.resources) - {"requests", "limits"}:
            raise ShardingConfigError(f"kubernetes runner: resources takes 'requests' and 'limits', got {sorted(self.resources)}")
        for name in self.env:
            if not isinstance(name, str) or not _ENV_NAME.match(name):
                raise ShardingConfigError(f"kubernetes runner: env name {name!r} is not a valid variable name")
        if self.image_pull_policy not in ("Always", "IfNotPresent", "Never"):
            raise ShardingConfigError(f"kubernetes runner: image_pull_policy {self.image_pull_policy!r} is not Always, IfNotPresent or Never")
        for index, toleration in enumerate(self.tolerations):
            _model(client.V1Toleration, toleration, f"tolerations[{index}]")

    def mounts(self) -> list[tuple[str, str, bool]]:
        """(claim, mount path, read-only) of every volume the pods mount."""
        return [(self.work_volume_claim, self.work_mount_path, False),
                *((claim, path, True) for claim, path in self.extra_volume_claims.items())]

    def check_paths(self, job: ShardJob) -> None:
        """The pods see only the mounted volumes: the dataset and work folders must be on them."""
        def inside(path, mount: str) -> bool:
            # normpath: "/mnt/work/../etc" must not pass as inside /mnt/work.
            return PurePosixPath(posixpath.normpath(str(path))).is_relative_to(PurePosixPath(posixpath.normpath(mount)))

        if not inside(job.work_dir, self.work_mount_path):
            raise ShardingConfigError(f"kubernetes runner: work folder {job.work_dir} is not under the work volume "
                                      f"{self.work_volume_claim} mounted at {self.work_mount_path}; the pods could not write it")
        if not any(inside(job.dataset_dir, path) for _, path, _ in self.mounts()):
            raise ShardingConfigError(f"kubernetes runner: dataset {job.dataset_dir} is on none of the volumes the pods "
                                      f"mount ({', '.join(path for _, path, _ in self.mounts())})")


def job_name(config: KubernetesRunnerConfig, job: ShardJob) -> str:
    return f"{config.job_name_prefix}-{job.job_id}"


def job_labels(job: ShardJob) -> dict[str, str]:
    return {"app.kubernetes.io/name": "irforge", "app.kubernetes.io/component": CONTAINER_NAME,
            "app.kubernetes.io/part-of": "irforge", "app.kubernetes.io/managed-by": "irforge-orchestrator",
            JOB_ID_LABEL: job.job_id}


def _resources(config: KubernetesRunnerConfig) -> client.V1ResourceRequirements:
    requests = {k: str(v) for k, v in (config.resources.get("requests") or {}).items()}
    limits = {k: str(v) for k, v in (config.resources.get("limits") or {}).items()}
    if config.gpu_per_shard:
        # Extended resources: the limit is what the device plugin schedules on; a request must equal it.
        limits["nvidia.com/gpu"] = str(config.gpu_per_shard)
        requests["nvidia.com/gpu"] = str(config.gpu_per_shard)
    return client.V1ResourceRequirements(requests=requests or None, limits=limits or None)


def _environment(config: KubernetesRunnerConfig, job: ShardJob) -> list[client.V1EnvVar]:
    # The root filesystem is read-only: every library cache (HF, torch, matplotlib) goes to /tmp.
    fixed = {"HF_HUB_OFFLINE": "1", "HOME": "/tmp", "XDG_CACHE_HOME": "/tmp/.cache",
             "IRFORGE_SHARD_JOB_ID": job.job_id, "PYTHONUNBUFFERED": "1"}
    return [client.V1EnvVar(name=name, value=str(value)) for name, value in {**fixed, **config.env}.items()]


def build_indexed_job(config: KubernetesRunnerConfig, job: ShardJob) -> client.V1Job:
    """The batch/v1 Job running `irforge shard-worker` once per shard index. Pure: no API calls."""
    config.check_paths(job)
    labels = job_labels(job)
    security = client.V1SecurityContext(
        run_as_non_root=True, run_as_user=config.run_as_user, run_as_group=config.run_as_group,
        allow_privilege_escalation=False, read_only_root_filesystem=True, privileged=False,
        capabilities=client.V1Capabilities(drop=["ALL"]),
        seccomp_profile=client.V1SeccompProfile(type="RuntimeDefault"))
    container = client.V1Container(
        name=CONTAINER_NAME, image=config.image, image_pull_policy=config.image_pull_policy,
        command=list(config.command), args=job.worker_arguments(None), env=_environment(config, job),
        resources=_resources(config), security_context=security,
        # The last log lines become the pod's termination message: the runner reports them per shard.
        termination_message_policy="FallbackToLogsOnError",
        volume_mounts=[client.V1VolumeMount(name=f"volume-{n}", mount_path=path, read_only=read_only)
                       for n, (_, path, read_only) in enumerate(config.mounts())]
        + [client.V1VolumeMount(name="tmp", mount_path="/tmp")])
    volumes = [client.V1Volume(name=f"volume-{n}", persistent_volume_claim=client.V1PersistentVolumeClaimVolumeSource(
                   claim_name=claim, read_only=read_only))
               for n, (claim, _, read_only) in enumerate(config.mounts())]
    volumes.append(client.V1Volume(name="tmp", empty_dir=client.V1EmptyDirVolumeSource()))
    pod = client.V1PodSpec(
        restart_policy="Never",             # required by backoffLimitPerIndex and podFailurePolicy
        containers=[container], volumes=volumes,
        service_account_name=config.service_account,
        automount_service_account_token=False,  # workers never call the API server
        node_selector=dict(config.node_selector) or None,
        tolerations=[_model(client.V1Toleration, t, "toleration") for t in config.tolerations] or None,
        priority_class_name=config.priority_class_name,
        image_pull_secrets=[client.V1LocalObjectReference(name=n) for n in config.image_pull_secrets] or None,
        security_context=client.V1PodSecurityContext(
            run_as_non_root=True, run_as_user=config.run_as_user, run_as_group=config.run_as_group,
            fs_group=config.fs_group, seccomp_profile=client.V1SeccompProfile(type="RuntimeDefault")))
    failure_policy = client.V1PodFailurePolicy(rules=[
        client.V1PodFailurePolicyRule(action="Ignore", on_pod_conditions=[
            client.V1PodFailurePolicyOnPodConditionsPattern(type="DisruptionTarget", status="True")]),
        client.V1PodFailurePolicyRule(action="FailIndex", on_exit_codes=client.V1PodFailurePolicyOnExitCodesRequirement(
            container_name=CONTAINER_NAME, operator="In", values=[USER_ERROR_EXIT_CODE])),
    ])
    spec = client.V1JobSpec(
        completion_mode="Indexed", completions=job.shard_count,
        parallelism=min(config.parallelism or job.shard_count, job.shard_count),
        backoff_limit_per_index=config.backoff_limit_per_index, max_failed_indexes=config.max_failed_indexes,
        pod_failure_policy=failure_policy, ttl_seconds_after_finished=config.ttl_seconds_after_finished,
        active_deadline_seconds=config.timeout_s,
        template=client.V1PodTemplateSpec(metadata=client.V1ObjectMeta(labels=labels), spec=pod))
    annotations = {"irforge.dev/dataset": job.facts.dataset, "irforge.dev/corpus-sha256": job.facts.fingerprint,
                   "irforge.dev/total-documents": str(job.facts.total_documents),
                   "irforge.dev/work-dir": str(job.work_dir)}
    return client.V1Job(api_version="batch/v1", kind="Job", spec=spec, metadata=client.V1ObjectMeta(
        name=job_name(config, job), namespace=config.namespace, labels=labels, annotations=annotations))
