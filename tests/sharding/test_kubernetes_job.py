"""The Indexed Job the Kubernetes runner submits: built offline, validated against the
Kubernetes 1.30 schema in strict mode, and its worker command parsed by the real CLI."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import kubernetes_validate
import pytest
from irforge.builder.pipeline import encoder_spec
from irforge.cli.main import build_parser
from irforge.cli.options import section_from_args
from irforge.config.pipeline import EncoderConfig
from irforge.models.encoder import EncoderSpec
from irforge.sharding import ShardingConfigError, make_shard_runner, plan_shards
from irforge.sharding.job import ShardJob
from irforge.sharding.runners.kubernetes_job import KubernetesRunnerConfig, build_indexed_job
from kubernetes.client import ApiClient

KUBERNETES_VERSION = "1.30.0"
WORK = "/var/cache/irforge"
SPEC = EncoderSpec("intfloat/e5-base-v2", query_prefix="query: ", passage_prefix="passage: ", max_seq_length=512,
                   batch_size=128, precision="float16")


@pytest.fixture()
def job(scifact_facts) -> ShardJob:
    return ShardJob(Path(WORK) / "datasets" / "scifact", Path(WORK) / "shards" / "job-1", scifact_facts,
                    tuple(plan_shards(scifact_facts.total_documents, 8)), SPEC)


def manifest(config: KubernetesRunnerConfig, job: ShardJob) -> dict:
    document = ApiClient().sanitize_for_serialization(build_indexed_job(config, job))
    kubernetes_validate.validate(document, KUBERNETES_VERSION, strict=True)
    return json.loads(json.dumps(document))  # plain JSON types, as the API server receives them


def test_cpu_job_is_a_valid_indexed_job(job):
    config = KubernetesRunnerConfig(image="ghcr.io/irforge/irforge:0.1.0", work_volume_claim="irforge-cache",
                                    namespace="irforge", service_account="irforge",
                                    resources={"requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"memory": "8Gi"}})
    document = manifest(config, job)
    spec = document["spec"]
    assert document["metadata"]["name"] == f"irforge-shards-{job.job_id}"
    assert document["metadata"]["labels"]["irforge.dev/shard-job-id"] == job.job_id
    assert (spec["completionMode"], spec["completions"], spec["parallelism"]) == ("Indexed", 8, 8)
    assert spec["backoffLimitPerIndex"] == 2 and "backoffLimit" not in spec
    assert spec["ttlSecondsAfterFinished"] == 86400
    rules = spec["podFailurePolicy"]["rules"]
    assert rules[0] == {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}
    assert rules[1]["action"] == "FailIndex" and rules[1]["onExitCodes"]["values"] == [2]
    pod = spec["template"]["spec"]
    assert pod["restartPolicy"] == "Never" and pod["automountServiceAccountToken"] is False
    assert pod["serviceAccountName"] == "irforge"
    assert pod["securityContext"]["runAsNonRoot"] is True
    container = pod["containers"][0]
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True and security["allowPrivilegeEscalation"] is False
    assert security["capabilities"] == {"drop": ["ALL"]} and security["seccompProfile"] == {"type": "RuntimeDefault"}
    assert {m["mountPath"] for m in container["volumeMounts"]} == {WORK, "/tmp"}
    assert pod["volumes"][0]["persistentVolumeClaim"] == {"claimName": "irforge-cache", "readOnly": False}
    assert container["resources"] == {"requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"memory": "8Gi"}}
    assert container["command"] == ["irforge"]
    assert not any(arg.startswith("--shard-index") for arg in container["args"])  # from $JOB_COMPLETION_INDEX
    assert {"name": "HF_HUB_OFFLINE", "value": "1"} in container["env"]


def test_gpu_job_with_tolerations_and_node_selector(job):
    config = KubernetesRunnerConfig(
        image="ghcr.io/irforge/irforge:0.1.0", work_volume_claim="irforge-cache", namespace="irforge",
        extra_volume_claims={"beir-datasets": "/datasets"}, gpu_per_shard=1, parallelism=4, max_failed_indexes=2,
        backoff_limit_per_index=3, timeout_s=7200, node_selector={"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
        tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                     {"key": "spot", "operator": "Equal", "value": "true", "effect": "NoExecute", "tolerationSeconds": 600}],
        resources={"requests": {"cpu": "4", "memory": "16Gi"}, "limits": {"memory": "32Gi"}},
        priority_class_name="batch-low", image_pull_secrets=["registry"], env={"IRFORGE_LOG_FORMAT": "json"})
    document = manifest(config, job)
    spec, pod = document["spec"], document["spec"]["template"]["spec"]
    assert (spec["parallelism"], spec["maxFailedIndexes"], spec["backoffLimitPerIndex"]) == (4, 2, 3)
    assert spec["activeDeadlineSeconds"] == 7200
    resources = pod["containers"][0]["resources"]
    assert resources["limits"] == {"memory": "32Gi", "nvidia.com/gpu": "1"}
    assert resources["requests"]["nvidia.com/gpu"] == "1"
    assert pod["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
    assert pod["tolerations"][1] == {"key": "spot", "operator": "Equal", "value": "true", "effect": "NoExecute",
                                     "tolerationSeconds": 600}
    assert {"name": "volume-1", "mountPath": "/datasets", "readOnly": True} in pod["containers"][0]["volumeMounts"]
    assert pod["imagePullSecrets"] == [{"name": "registry"}] and pod["priorityClassName"] == "batch-low"


def test_the_schema_check_catches_a_broken_job(job):
    # The validation above can fail: a misspelt field is refused in strict mode.
    config = KubernetesRunnerConfig(image="irforge:dev", work_volume_claim="cache", namespace="irforge")
    document = ApiClient().sanitize_for_serialization(build_indexed_job(config, job))
    broken = copy.deepcopy(document)
    broken["spec"]["backoffLimitPerIndexes"] = 2
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, KUBERNETES_VERSION, strict=True)


def test_the_pods_command_is_what_the_worker_cli_reads(job):
    config = KubernetesRunnerConfig(image="irforge:dev", work_volume_claim="cache", namespace="irforge")
    container = build_indexed_job(config, job).spec.template.spec.containers[0]
    args = build_parser().parse_args(container.args)
    assert args.handler.__name__ == "run_worker"
    assert (args.dataset, args.out, args.shard_count, args.shard_index) == (job.dataset_dir, job.work_dir, 8, None)
    assert (args.total_documents, args.fingerprint) == (job.facts.total_documents, job.facts.fingerprint)
    assert encoder_spec(section_from_args(args, EncoderConfig)) == SPEC


def test_prefixes_that_look_like_flags_survive_the_command_line(job):
    spec = EncoderSpec("all-MiniLM-L6-v2", query_prefix="--q ", passage_prefix="-p: ", normalize=False, device="cuda:1",
                       revision="abc123")
    args = build_parser().parse_args(ShardJob(job.dataset_dir, job.work_dir, job.facts, job.shards, spec).worker_arguments(3))
    assert encoder_spec(section_from_args(args, EncoderConfig)) == spec and args.shard_index == 3


@pytest.mark.parametrize("options,message", [
    ({"image": ""}, "image is required"),
    ({"job_name_prefix": "Irforge_Shards"}, "job_name_prefix"),
    ({"job_name_prefix": "x" * 41}, "at most 40 characters"),
    ({"gpu_per_shard": -1}, "gpu_per_shard must be an integer >= 0"),
    ({"tolerations": [{"key": "gpu", "tolerationSecond": 5}]}, r"tolerations\[0\] has unknown field\(s\) tolerationSecond"),
    ({"resources": {"limit": {}}}, "resources takes 'requests' and 'limits'"),
    ({"work_mount_path": "relative/path"}, "must be absolute"),
    ({"env": {"BAD NAME": "x"}}, "env name"),
])
def test_bad_configuration_is_refused_by_name(options, message):
    with pytest.raises(ShardingConfigError, match=message):
        KubernetesRunnerConfig(**{"image": "irforge:dev", "work_volume_claim": "cache", **options})


def test_folders_the_pods_cannot_see_are_refused(job):
    config = KubernetesRunnerConfig(image="irforge:dev", work_volume_claim="cache", namespace="irforge")
    elsewhere = ShardJob(Path("/home/me/scifact"), job.work_dir, job.facts, job.shards, SPEC)
    with pytest.raises(ShardingConfigError, match="dataset /home/me/scifact is on none of the volumes"):
        build_indexed_job(config, elsewhere)
    escaping = ShardJob(job.dataset_dir, Path(WORK) / ".." / "tmp" / "work", job.facts, job.shards, SPEC)
    with pytest.raises(ShardingConfigError, match="is not under the work volume cache"):
        build_indexed_job(config, escaping)


def test_make_shard_runner_takes_the_chart_configuration():
    # The shape the Helm chart renders into IRFORGE_SHARD_CONFIG (JSON).
    options = {"image": "ghcr.io/irforge/irforge:0.1.0", "gpu_per_shard": 1, "resources": {"limits": {"memory": "8Gi"}},
               "node_selector": {}, "tolerations": [], "service_account": "irforge", "work_volume_claim": "irforge-cache",
               "work_mount_path": WORK, "run_as_user": 10001}
    runner = make_shard_runner("kubernetes", **options)
    assert runner.name == "kubernetes" and runner.config.gpu_per_shard == 1
    with pytest.raises(ShardingConfigError, match="unknown option.*cache_claim"):
        make_shard_runner("kubernetes", **{**options, "cache_claim": "x"})
    with pytest.raises(ShardingConfigError, match="missing option.*work_volume_claim"):
        make_shard_runner("kubernetes", image="irforge:dev")
    with pytest.raises(ShardingConfigError, match="unknown shard runner 'slurm'"):
        make_shard_runner("slurm")
