"""The chart's orchestrator.auth: tokens by default, and the operator's token from a Secret,
rendered by the real Helm engine, validated as Kubernetes objects, and its command line parsed by
the real `irforge` parser (the flags the orchestrator then reads)."""

from __future__ import annotations

from pathlib import Path

import helm_python as helm
import kubernetes_validate
import pytest
import yaml

CHART = Path(__file__).resolve().parents[2] / "helm" / "irforge"
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _orchestrator(values: dict) -> dict:
    with helm.Chart.load(CHART) as chart:
        manifests = chart.render(values, name="irf", namespace="eval", is_install=True)
    docs = [doc for name, text in manifests.items() if not name.endswith("NOTES.txt") for doc in yaml.safe_load_all(text) if doc]
    (deployment,) = [d for d in docs if d["kind"] == "Deployment"
                     and d["metadata"]["labels"]["app.kubernetes.io/component"] == "orchestrator"]
    kubernetes_validate.validate(deployment, "1.30.0", strict=True)
    return deployment["spec"]["template"]["spec"]


def test_the_chart_starts_the_orchestrator_with_tokens_and_the_operators_secret():
    from irforge.cli.main import build_parser

    default = _orchestrator({})
    args = build_parser().parse_args(default["containers"][0]["args"])
    assert (args.auth, args.operator_token_file) == ("tokens", None)   # its token then goes to the state claim

    spec = _orchestrator({"orchestrator": {"auth": {"operatorToken": {"existingSecret": "irforge-operator", "key": "tok"}}}})
    (container,) = spec["containers"]
    args = build_parser().parse_args(container["args"])
    assert str(args.operator_token_file) == "/etc/irforge/operator-token/tok"
    mount = next(m for m in container["volumeMounts"] if m["name"] == "operator-token")
    assert (mount["mountPath"], mount["readOnly"]) == ("/etc/irforge/operator-token", True)
    volume = next(v for v in spec["volumes"] if v["name"] == "operator-token")
    assert volume["secret"] == {"secretName": "irforge-operator", "defaultMode": 0o440}

    assert build_parser().parse_args(_orchestrator({"orchestrator": {"auth": {"mode": "none"}}})["containers"][0]["args"]).auth == "none"
