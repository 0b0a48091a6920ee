"""The chart's web page (web.*): the orchestrator's container serves it (`--web-port`, parsed by
the real irforge parser) on a named port, its Service carries it as `http`, the NetworkPolicy lets
webFrom reach exactly that port, and the optional Ingress routes its host to that Service port
(TLS from a Secret, annotations passed through); every object valid Kubernetes in strict mode.
With web.enabled false none of it is rendered."""

from __future__ import annotations

import pytest
import helm_python as helm

from .test_chart import (RELEASE, check_network_policies, check_pod_security, chart, of_kind, render,
                         validate_strictly)

__all__ = ["chart"]   # the module fixture, shared
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

INGRESS = {"web": {"port": 8088, "ingress": {
    "enabled": True, "className": "nginx", "host": "leaderboard.example.org", "tls": {"secretName": "leaderboard-tls"},
    "annotations": {"nginx.ingress.kubernetes.io/auth-url": "https://$host/oauth2/auth",
                    "nginx.ingress.kubernetes.io/auth-signin": "https://$host/oauth2/start?rd=$escaped_request_uri"}}}}


def orchestrator_objects(docs: list[dict]) -> tuple[dict, dict, dict]:
    name = f"{RELEASE}-irforge-orchestrator"
    (deployment,) = [d for d in of_kind(docs, "Deployment") if d["metadata"]["name"] == name]
    (service,) = [s for s in of_kind(docs, "Service") if s["metadata"]["name"] == name]
    (policy,) = [p for p in of_kind(docs, "NetworkPolicy") if p["metadata"]["name"] == name]
    return deployment, service, policy


def test_the_orchestrator_serves_the_web_page_behind_an_ingress(chart):
    from irforge.cli.main import build_parser

    docs = render(chart, INGRESS)
    for doc in docs:
        if doc["kind"] not in ("RayService", "ServiceMonitor"):
            validate_strictly(doc, f"{doc['kind']}/{doc['metadata']['name']}")
    check_pod_security(docs)
    check_network_policies(docs)
    deployment, service, policy = orchestrator_objects(docs)
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    args = build_parser().parse_args(container["args"])
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert args.web_port == ports["http"] == 8088 and args.host == "0.0.0.0"
    http = next(p for p in service["spec"]["ports"] if p["name"] == "http")
    assert (http["port"], http["targetPort"]) == (8088, "http")

    (ingress,) = of_kind(docs, "Ingress")
    assert ingress["spec"]["ingressClassName"] == "nginx"
    assert ingress["spec"]["tls"] == [{"hosts": ["leaderboard.example.org"], "secretName": "leaderboard-tls"}]
    assert ingress["metadata"]["annotations"] == INGRESS["web"]["ingress"]["annotations"]
    (rule,) = ingress["spec"]["rules"]
    backend = rule["http"]["paths"][0]["backend"]["service"]
    assert rule["host"] == "leaderboard.example.org"
    assert backend == {"name": service["metadata"]["name"], "port": {"name": "http"}}

    # The web port is reachable from webFrom (the ingress controller's namespace by default), gRPC from orchestratorFrom.
    rules = {tuple(p["port"] for p in rule["ports"]): rule["from"] for rule in policy["spec"]["ingress"]}
    assert any(peer.get("namespaceSelector", {}).get("matchLabels", {}).get("kubernetes.io/metadata.name") == "ingress-nginx"
               for peer in rules[(8088,)])
    assert rules[(50050,)] == [{"podSelector": {}}]


def test_defaults_serve_the_page_inside_the_cluster_only(chart):
    docs = render(chart, {})
    deployment, service, _ = orchestrator_objects(docs)
    assert "--web-port" in deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "http" in {p["name"] for p in service["spec"]["ports"]}
    assert not of_kind(docs, "Ingress")


def test_without_the_web_page_nothing_of_it_is_rendered(chart):
    docs = render(chart, {"web": {"enabled": False, "ingress": {"enabled": True}}})
    deployment, service, policy = orchestrator_objects(docs)
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert "--web-port" not in container["args"] and {p["name"] for p in container["ports"]} <= {"grpc", "metrics"}
    assert {p["name"] for p in service["spec"]["ports"]} <= {"grpc", "metrics"}
    assert not of_kind(docs, "Ingress")
    assert all(rule["ports"][0]["port"] != 8080 for rule in policy["spec"]["ingress"])


@pytest.mark.parametrize("typo", [{"web": {"ingress": {"hots": "x"}}}, {"web": {"port": 0}},
                                  {"web": {"ingress": {"tls": "secret"}}}])
def test_the_schema_rejects_web_typos(chart, typo):
    with pytest.raises(helm.HelmValuesError):
        chart.validate_schema(typo)
