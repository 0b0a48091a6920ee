"""The Helm chart, rendered offline by the real Helm engine (helm-python-sdk embeds Helm v4's
library) for the default values and for the GPU + external-backends values, linted strictly,
installed with a client-side dry run, and every manifest validated against the Kubernetes 1.30
OpenAPI schema in strict mode (kubernetes-validate).

CRDs: kubernetes-validate ships schemas for built-in kinds only (a RayService or ServiceMonitor
raises SchemaNotFoundError, asserted below so a future version with CRD schemas is noticed). They
are checked for structure here instead, and the pod templates inside the RayService are wrapped
in a built-in PodTemplate and validated strictly like every other pod.

The property checks are plain functions (check_*) so that test_checks_catch_broken_values can
prove each of them fails on values that break it: a check that cannot fail is a defect.
"""

from __future__ import annotations

import copy
import importlib
from pathlib import Path

import helm_python as helm
import jsonschema
import kubernetes_validate
import pytest
import yaml
from kubernetes_validate.utils import SchemaNotFoundError

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "helm" / "irforge"
GPU_VALUES = CHART / "ci" / "gpu-external-values.yaml"
KUBE_VERSION = "1.30.0"
RELEASE, NAMESPACE = "irf", "eval"
COMPONENTS = ("corpus", "evaluator", "judge", "orchestrator", "models")
CRD_KINDS = {"RayService": "ray.io/v1", "ServiceMonitor": "monitoring.coreos.com/v1"}
COMPONENT_LABEL = "app.kubernetes.io/component"
# Ray Serve's config models emit pydantic deprecation warnings on import; not ours to fix.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def gpu_values() -> dict:
    return yaml.safe_load(GPU_VALUES.read_text())


VALUE_SETS = {"defaults": dict, "gpu-external": gpu_values}


@pytest.fixture(scope="module")
def chart():
    with helm.Chart.load(CHART) as loaded:
        yield loaded


def render(chart, values: dict) -> list[dict]:
    """Every rendered object (NOTES.txt excluded), in template order."""
    manifests = chart.render(values, name=RELEASE, namespace=NAMESPACE, is_install=True)
    docs = []
    for template, text in sorted(manifests.items()):
        if template.endswith("NOTES.txt"):
            continue
        docs.extend(doc for doc in yaml.safe_load_all(text) if doc)
    return docs


@pytest.fixture(scope="module", params=sorted(VALUE_SETS))
def rendered(request, chart) -> tuple[str, dict, list[dict]]:
    values = VALUE_SETS[request.param]()
    return request.param, values, render(chart, values)


def validate_strictly(doc: dict, where: str) -> None:
    try:
        kubernetes_validate.validate(doc, KUBE_VERSION, strict=True)
    except jsonschema.ValidationError as error:  # the message alone: the schema dump is pages long
        pytest.fail(f"{where}: {error.message} at {'.'.join(map(str, error.absolute_path))}", pytrace=False)


def of_kind(docs: list[dict], kind: str) -> list[dict]:
    return [doc for doc in docs if doc["kind"] == kind]


def config_map(docs: list[dict]) -> dict:
    (config,) = [c for c in of_kind(docs, "ConfigMap") if c["metadata"]["name"] == f"{RELEASE}-irforge-config"]
    return config


def pod_specs(docs: list[dict]) -> dict[str, dict]:
    """Every pod spec the release creates, by a readable name."""
    specs = {f"Deployment/{d['metadata']['name']}": d["spec"]["template"]["spec"] for d in of_kind(docs, "Deployment")}
    for ray in of_kind(docs, "RayService"):
        cluster = ray["spec"]["rayClusterConfig"]
        specs[f"RayService/{ray['metadata']['name']}/head"] = cluster["headGroupSpec"]["template"]["spec"]
        for group in cluster["workerGroupSpecs"]:
            specs[f"RayService/{ray['metadata']['name']}/{group['groupName']}"] = group["template"]["spec"]
    return specs


# -- the property checks -----------------------------------------------------------------------

def check_pod_security(docs: list[dict]) -> None:
    specs = pod_specs(docs)
    assert specs, "no pods rendered"
    for name, spec in specs.items():
        pod = spec["securityContext"]
        assert pod["runAsNonRoot"] is True and pod["runAsUser"] > 0, name
        assert pod["seccompProfile"]["type"] == "RuntimeDefault", name
        writable = {mount["mountPath"] for c in spec["containers"] for mount in c.get("volumeMounts", [])}
        assert "/tmp" in writable, f"{name}: read-only root needs an emptyDir /tmp"
        for container in spec["containers"] + spec.get("initContainers", []):
            context = container["securityContext"]
            where = f"{name}/{container['name']}"
            assert context["runAsNonRoot"] is True, where
            assert context["readOnlyRootFilesystem"] is True, where
            assert context["allowPrivilegeEscalation"] is False, where
            assert context["capabilities"]["drop"] == ["ALL"], where
            assert not context["capabilities"].get("add"), where
            assert context["seccompProfile"]["type"] == "RuntimeDefault", where
            assert container["resources"]["requests"] and container["resources"]["limits"], f"{where}: resources"
    for ray in of_kind(docs, "RayService"):
        autoscaler = ray["spec"]["rayClusterConfig"].get("autoscalerOptions")
        if autoscaler:
            assert autoscaler["securityContext"]["readOnlyRootFilesystem"] is True
            assert autoscaler["securityContext"]["capabilities"]["drop"] == ["ALL"]


def check_deployment_probes(docs: list[dict]) -> None:
    deployments = of_kind(docs, "Deployment")
    assert {d["metadata"]["labels"][COMPONENT_LABEL] for d in deployments} == set(COMPONENTS)
    for deployment in deployments:
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        grpc_port = next(p["containerPort"] for p in container["ports"] if p["name"] == "grpc")
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            assert container[probe]["grpc"]["port"] == grpc_port, f"{deployment['metadata']['name']}: {probe}"
        # Readiness asks for the component's own gRPC service, not just "the process is up".
        assert container["readinessProbe"]["grpc"]["service"].startswith("irforge.v1."), deployment["metadata"]["name"]
        assert container["resources"]["limits"]["memory"], deployment["metadata"]["name"]


def check_secrets_referenced_only(docs: list[dict], values: dict) -> None:
    for secret in of_kind(docs, "Secret"):
        assert not secret.get("data") and not secret.get("stringData"), f"Secret {secret['metadata']['name']} carries literal data"
    for name, spec in pod_specs(docs).items():
        for container in spec["containers"]:
            for env in container.get("env", []):
                if any(word in env["name"] for word in ("KEY", "PASSWORD", "TOKEN", "SECRET")):
                    assert "value" not in env and "secretKeyRef" in env["valueFrom"], f"{name}: {env['name']} is not a secret reference"
    judge_secret = values.get("judge", {}).get("apiKey", {}).get("existingSecret")
    if judge_secret:
        judge = next(d for d in of_kind(docs, "Deployment") if d["metadata"]["labels"][COMPONENT_LABEL] == "judge")
        refs = [e["valueFrom"]["secretKeyRef"] for e in judge["spec"]["template"]["spec"]["containers"][0]["env"] if "valueFrom" in e and "secretKeyRef" in e["valueFrom"]]
        assert {"name": judge_secret, "key": values["judge"]["apiKey"]["key"]} in refs


def check_gpu_worker_group(docs: list[dict]) -> None:
    (ray,) = of_kind(docs, "RayService")
    cluster = ray["spec"]["rayClusterConfig"]
    gpu_groups = [g for g in cluster["workerGroupSpecs"] if "nvidia.com/gpu" in g["template"]["spec"]["containers"][0]["resources"].get("limits", {})]
    assert gpu_groups, "no worker group has nvidia.com/gpu limits"
    for group in gpu_groups:
        spec = group["template"]["spec"]
        assert int(spec["containers"][0]["resources"]["limits"]["nvidia.com/gpu"]) >= 1
        assert any(t.get("key") == "nvidia.com/gpu" for t in spec.get("tolerations", [])), f"{group['groupName']}: no GPU toleration"
        assert spec.get("nodeSelector"), f"{group['groupName']}: no nodeSelector"
        assert 0 <= group["minReplicas"] <= group["replicas"] <= group["maxReplicas"]
        assert group["maxReplicas"] > group["minReplicas"], "autoscaling bounds allow no scaling"
    assert cluster["enableInTreeAutoscaling"] is True


def check_network_policies(docs: list[dict]) -> None:
    policies = of_kind(docs, "NetworkPolicy")
    selected = {p["spec"]["podSelector"].get("matchLabels", {}).get(COMPONENT_LABEL) for p in policies}
    expected = set(COMPONENTS) | ({"ray"} if of_kind(docs, "RayService") else set())
    assert expected <= selected, f"components without a NetworkPolicy: {sorted(expected - selected)}"
    deny = [p for p in policies if COMPONENT_LABEL not in p["spec"]["podSelector"]["matchLabels"]
            and set(p["spec"]["policyTypes"]) == {"Ingress", "Egress"} and not p["spec"].get("ingress") and not p["spec"].get("egress")]
    assert deny, "no default-deny policy for the release's pods"
    dns = [rule for p in policies for rule in p["spec"].get("egress") or [] if {"port": 53, "protocol": "UDP"} in rule.get("ports", [])]
    assert dns, "no DNS egress"


# -- the tests ---------------------------------------------------------------------------------

@pytest.mark.parametrize("value_set", sorted(VALUE_SETS))
def test_lint_is_clean_in_strict_mode(value_set):
    report = helm.lint(CHART, VALUE_SETS[value_set](), strict=True, kube_version=f"v{KUBE_VERSION}")
    problems = [m for m in report["messages"] if m["severity"] >= 2]
    assert not report["errors"] and not problems, report


def test_every_manifest_is_valid_kubernetes(rendered):
    _, _, docs = rendered
    assert len(docs) > 20
    for doc in docs:
        where = f"{doc['kind']}/{doc['metadata']['name']}"
        assert doc["metadata"]["labels"]["app.kubernetes.io/instance"] == RELEASE, where
        assert doc["metadata"]["labels"]["helm.sh/chart"].startswith("irforge-"), where
        if doc["kind"] in CRD_KINDS:
            assert doc["apiVersion"] == CRD_KINDS[doc["kind"]], where
            with pytest.raises(SchemaNotFoundError):  # no CRD schemas bundled: checked for structure below
                kubernetes_validate.validate(doc, KUBE_VERSION, strict=True)
            continue
        validate_strictly(doc, where)


def test_crd_objects_have_the_expected_structure(rendered):
    name, values, docs = rendered
    rayservices, monitors = of_kind(docs, "RayService"), of_kind(docs, "ServiceMonitor")
    assert len(rayservices) == (1 if name == "gpu-external" else 0)
    assert len(monitors) == (1 if name == "gpu-external" else 0)
    for ray in rayservices:
        cluster = ray["spec"]["rayClusterConfig"]
        assert cluster["rayVersion"] == importlib.import_module("ray").__version__, "rayVersion must equal the image's ray"
        for template in [cluster["headGroupSpec"]["template"], *(g["template"] for g in cluster["workerGroupSpecs"])]:
            # The pod templates are ordinary pods: validated strictly as a built-in PodTemplate.
            wrapped = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "ray"}, "template": template}
            validate_strictly(wrapped, f"RayService/{ray['metadata']['name']} pod template")
        for params in [cluster["headGroupSpec"]["rayStartParams"], *(g["rayStartParams"] for g in cluster["workerGroupSpecs"])]:
            assert all(isinstance(v, str) for v in params.values()), "rayStartParams values must be strings"
    for monitor in monitors:
        assert monitor["spec"]["selector"]["matchLabels"]["app.kubernetes.io/instance"] == RELEASE
        assert [e["port"] for e in monitor["spec"]["endpoints"]] == ["metrics"]
        services = [s for s in of_kind(docs, "Service") if any(p["name"] == "metrics" for p in s["spec"]["ports"])]
        assert len(services) >= 4, "the ServiceMonitor's port name must exist on the Services"


def test_serve_config_builds_the_encoder_application(chart):
    """serveConfigV2's import path resolves to our builder, which accepts the rendered args and
    gives replicas the GPUs and autoscaling bounds the values ask for (no Ray cluster started)."""
    (ray,) = of_kind(render(chart, gpu_values()), "RayService")
    (application,) = yaml.safe_load(ray["spec"]["serveConfigV2"])["applications"]
    module, attribute = application["import_path"].split(":")
    builder = getattr(importlib.import_module(module), attribute)
    app = builder(application["args"])
    deployment = app._bound_deployment
    assert deployment.ray_actor_options["num_gpus"] == 1
    assert (deployment._deployment_config.autoscaling_config.min_replicas, deployment._deployment_config.autoscaling_config.max_replicas) == (1, 4)
    assert deployment.init_args[0].precision == "float16"


def test_checks_hold(rendered):
    name, values, docs = rendered
    check_pod_security(docs)
    check_deployment_probes(docs)
    check_secrets_referenced_only(docs, values)
    check_network_policies(docs)
    if name == "gpu-external":
        check_gpu_worker_group(docs)


def test_containers_run_commands_irforge_accepts(rendered):
    """Every Deployment's command line parses with the real `irforge` parser (or the encoder
    front's), and readiness asks for the gRPC service that role really serves."""
    from irforge.cli.encoder_front import parse_front_args
    from irforge.cli.main import build_parser
    from irforge.v1 import corpus_pb2, evaluator_pb2, judge_pb2, models_pb2, orchestrator_pb2

    served = {"corpus": corpus_pb2.DESCRIPTOR.services_by_name["Corpus"], "evaluator": evaluator_pb2.DESCRIPTOR.services_by_name["Evaluator"],
              "models": models_pb2.DESCRIPTOR.services_by_name["Encoder"], "judge": judge_pb2.DESCRIPTOR.services_by_name["Judge"],
              "orchestrator": orchestrator_pb2.DESCRIPTOR.services_by_name["Orchestrator"]}
    _, _, docs = rendered
    for deployment in of_kind(docs, "Deployment"):
        component = deployment["metadata"]["labels"][COMPONENT_LABEL]
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        if container.get("command") == ["python", "-m", "irforge.cli.encoder_front"]:
            args = parse_front_args(container["args"])
            assert args.ray_address.startswith("ray://") and args.ray_address.endswith("-head-svc:10001")
        else:
            args = build_parser().parse_args(container["args"])
            assert (args.name, args.host) == (component, "0.0.0.0")
        assert args.port == next(p["containerPort"] for p in container["ports"] if p["name"] == "grpc")
        assert container["readinessProbe"]["grpc"]["service"] == served[component].full_name


def test_configmap_points_each_service_at_a_rendered_service(rendered):
    _, _, docs = rendered
    config = config_map(docs)
    services = {s["metadata"]["name"]: {p["port"] for p in s["spec"]["ports"]} for s in of_kind(docs, "Service")}
    for variable in ("IRFORGE_CORPUS_SERVER", "IRFORGE_EVALUATOR_SERVER", "IRFORGE_ENCODER_SERVER", "IRFORGE_JUDGE_SERVER"):
        host, port = config["data"][variable].rsplit(":", 1)
        assert int(port) in services.get(host, set()), f"{variable}={config['data'][variable]} matches no Service"
    assert config["data"]["HF_HUB_OFFLINE"] == "1"
    assert not any("KEY" in name for name in config["data"]), "keys never go into the ConfigMap"
    # The orchestrator reads and writes only below the datasets mount and its state volume.
    assert config["data"]["IRFORGE_ALLOWED_ROOTS"].split(":") == ["/datasets", "/var/lib/irforge/state"]


def test_sharding_rbac_is_scoped_to_jobs_and_pods(chart):
    docs = render(chart, gpu_values())
    (role,) = of_kind(docs, "Role")
    rules = {(tuple(r["apiGroups"]), tuple(r["resources"])): set(r["verbs"]) for r in role["rules"]}
    assert rules == {(("batch",), ("jobs",)): {"create", "get", "list", "watch", "delete"},
                     (("",), ("pods", "pods/log")): {"get", "list", "watch"}}
    orchestrator = next(d for d in of_kind(docs, "Deployment") if d["metadata"]["labels"][COMPONENT_LABEL] == "orchestrator")
    (binding,) = of_kind(docs, "RoleBinding")
    assert binding["subjects"][0]["name"] == orchestrator["spec"]["template"]["spec"]["serviceAccountName"]
    assert not of_kind(render(chart, {}), "Role"), "no API access without sharding.kubernetes.enabled"


def test_shard_runner_config_is_what_the_kubernetes_runner_takes(chart):
    """The orchestrator reads the file IRFORGE_SHARD_RUNNER_CONFIG names as the Kubernetes shard
    runner's options: the release's image on the shared cache claim, with the GPU settings."""
    from irforge.sharding import make_shard_runner

    values = gpu_values()
    docs = render(chart, values)
    data = config_map(docs)["data"]
    assert data["IRFORGE_SHARD_RUNNER"] == "kubernetes"
    (runner_map,) = [c for c in of_kind(docs, "ConfigMap") if c["metadata"]["name"].endswith("-shard-runner")]
    orchestrator = next(d for d in of_kind(docs, "Deployment") if d["metadata"]["labels"][COMPONENT_LABEL] == "orchestrator")
    mounts = {m["name"]: m["mountPath"] for m in orchestrator["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]}
    assert data["IRFORGE_SHARD_RUNNER_CONFIG"] == f"{mounts['shard-runner']}/runner.yaml"
    runner = make_shard_runner("kubernetes", **yaml.safe_load(runner_map["data"]["runner.yaml"])).config
    assert runner.image == orchestrator["spec"]["template"]["spec"]["containers"][0]["image"]
    assert runner.work_volume_claim == f"{RELEASE}-irforge-cache" and runner.work_mount_path == data["IRFORGE_CACHE_DIR"]
    assert runner.gpu_per_shard == values["sharding"]["kubernetes"]["gpuPerShard"]
    assert runner.tolerations == values["sharding"]["kubernetes"]["tolerations"]
    assert runner.extra_volume_claims == {values["persistence"]["datasets"]["existingClaim"]: "/datasets"}
    assert config_map(render(chart, {}))["data"]["IRFORGE_SHARD_RUNNER"] == "local"


def test_judge_spec_is_mounted_and_loads(chart, tmp_path):
    """The LLM judge's spec reaches the judge pod as a file irforge.judge.spec accepts; its key
    variable is filled from the Secret; a spec naming another variable is refused at render."""
    from irforge.judge.spec import JudgeSpec

    values = gpu_values()
    docs = render(chart, values)
    (spec_map,) = [c for c in of_kind(docs, "ConfigMap") if c["metadata"]["name"].endswith("-judge-spec")]
    (path := tmp_path / "judge.yaml").write_text(spec_map["data"]["judge.yaml"])
    spec = JudgeSpec.from_file(path)
    assert (spec.model, spec.api_key_env) == (values["judge"]["spec"]["model"], values["judge"]["apiKey"]["env"])
    judge = next(d for d in of_kind(docs, "Deployment") if d["metadata"]["labels"][COMPONENT_LABEL] == "judge")
    args = judge["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[args.index("--judge") + 1] == "/etc/irforge/judge/judge.yaml"

    values["judge"]["spec"]["api_key_env"] = "OTHER_KEY"
    with pytest.raises(helm.HelmRenderError, match="api_key_env is OTHER_KEY"):
        render(chart, values)


def test_client_dry_run_install(chart, tmp_path):
    """A release installs (client-side dry run: no cluster; the kubeconfig does not exist)."""
    config = helm.Config(kubeconfig_path=tmp_path / "no-cluster.kubeconfig")
    for value_set, values in VALUE_SETS.items():
        release = config.install(chart, RELEASE, values(), dry_run="client", namespace=NAMESPACE)
        kinds = sorted(doc["kind"] for doc in yaml.safe_load_all(release["manifest"]) if doc)
        assert kinds == sorted(doc["kind"] for doc in render(chart, values())), value_set
        assert "irforge submit --server" in release["notes"]


VARIANTS = {
    "everything-off": {"networkPolicy": {"enabled": False}, "podDisruptionBudget": {"enabled": False}, "metrics": {"enabled": False}},
    "rayservice-cpu-no-autoscaler": {"models": {"mode": "rayservice", "rayService": {"autoscaler": {"enabled": False}}}},
    "existing-claims-and-pull-secrets": {
        "persistence": {k: {"existingClaim": f"mine-{k}"} for k in ("data", "cache", "state", "judge")},
        "imagePullSecrets": [{"name": "registry"}], "fullnameOverride": "ir",
        "models": {"modelVolume": {"existingClaim": "models", "hubCache": "/models/hf"}},
        "sharding": {"kubernetes": {"enabled": True}}},
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_other_value_combinations_render_valid_manifests(chart, variant):
    docs = render(chart, VARIANTS[variant])
    for doc in docs:
        if doc["kind"] not in CRD_KINDS:
            validate_strictly(doc, f"{variant}: {doc['kind']}/{doc['metadata']['name']}")
    check_pod_security(docs)
    check_deployment_probes(docs)
    check_secrets_referenced_only(docs, VARIANTS[variant])
    if variant.startswith("existing-claims"):
        assert not of_kind(docs, "PersistentVolumeClaim"), "existing claims are used, not created"
        claims = {v["persistentVolumeClaim"]["claimName"] for spec in pod_specs(docs).values()
                  for v in spec["volumes"] if "persistentVolumeClaim" in v}
        assert claims == {"mine-data", "mine-cache", "mine-state", "mine-judge", "models"}


@pytest.mark.parametrize("typo", [
    {"corpus": {"replica": 2}},                          # replicas misspelt
    {"models": {"mode": "raysevice"}},                   # not one of deployment|rayservice
    {"networkPolicy": {"enabeld": False}},
    {"securityContext": {"runAsUser": 0}},               # root
])
def test_values_schema_rejects_typos(chart, typo):
    with pytest.raises(helm.HelmValuesError):
        chart.validate_schema(typo)
    with pytest.raises(helm.HelmError):
        chart.render(typo, name=RELEASE, namespace=NAMESPACE)
    report = helm.lint(CHART, typo, strict=True, kube_version=f"v{KUBE_VERSION}")
    assert report["errors"] or any(m["severity"] >= 3 for m in report["messages"]), report


def test_checks_catch_broken_values(chart):
    """Each property check fails on values that break the property it guards."""
    broken = copy.deepcopy(gpu_values())
    broken["models"]["rayService"]["workers"].update(gpusPerWorker=0)
    with pytest.raises(AssertionError, match="nvidia.com/gpu"):
        check_gpu_worker_group(render(chart, broken))

    broken = copy.deepcopy(gpu_values())
    broken["models"]["rayService"]["workers"].update(tolerations=[])
    with pytest.raises(AssertionError, match="toleration"):
        check_gpu_worker_group(render(chart, broken))

    with pytest.raises(AssertionError, match="without a NetworkPolicy"):
        check_network_policies(render(chart, {"networkPolicy": {"enabled": False}}))

    docs = render(chart, {})
    docs_without_probe = copy.deepcopy(docs)
    del of_kind(docs_without_probe, "Deployment")[0]["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]
    with pytest.raises(KeyError):
        check_deployment_probes(docs_without_probe)

    writable_root = copy.deepcopy(docs)
    of_kind(writable_root, "Deployment")[1]["spec"]["template"]["spec"]["containers"][0]["securityContext"]["readOnlyRootFilesystem"] = False
    with pytest.raises(AssertionError, match="evaluator"):
        check_pod_security(writable_root)

    leaked = copy.deepcopy(docs)
    of_kind(leaked, "Deployment")[0]["spec"]["template"]["spec"]["containers"][0]["env"].append({"name": "IRFORGE_JUDGE_API_KEY", "value": "sk-literal"})
    with pytest.raises(AssertionError, match="not a secret reference"):
        check_secrets_referenced_only(leaked, {})
