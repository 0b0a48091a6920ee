"""irforge.models.serve_app: the Serve application builder a RayService names in serveConfigV2,
and the flags of the Encoder front the chart runs beside it (irforge.cli.encoder_front). Builds applications without starting
Ray (binding a deployment is pure configuration)."""

from __future__ import annotations

import pytest

from irforge.cli.encoder_front import parse_front_args
from irforge.models.serve import DEPLOYMENT_NAME
from irforge.models.serve_app import app

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def test_fixed_replicas_without_autoscaling():
    deployment = app({"model": "all-MiniLM-L6-v2", "num_cpus": 2, "min_replicas": 2, "max_replicas": 2})._bound_deployment
    assert deployment.name == DEPLOYMENT_NAME
    assert deployment.num_replicas == 2 and deployment._deployment_config.autoscaling_config is None
    assert deployment.ray_actor_options["num_cpus"] == 2.0 and deployment.ray_actor_options["num_gpus"] == 0.0
    assert deployment.ray_actor_options["runtime_env"]["env_vars"]["HF_HUB_OFFLINE"] == "1"


def test_spec_fields_reach_the_replicas():
    spec = app({"model": "intfloat/e5-small-v2", "query_prefix": "query: ", "passage_prefix": "passage: ",
                "normalize": False, "max_seq_length": 128})._bound_deployment.init_args[0]
    assert (spec.model, spec.query_prefix, spec.passage_prefix, spec.normalize, spec.max_seq_length) == \
        ("intfloat/e5-small-v2", "query: ", "passage: ", False, 128)


def test_defaults_serve_the_packaged_model_on_one_cpu_replica():
    deployment = app({})._bound_deployment
    assert deployment.init_args[0].model == "sentence-transformers/all-MiniLM-L6-v2"
    assert deployment.num_replicas == 1


@pytest.mark.parametrize("args, message", [
    ({"num_gpu": 1}, r"unknown args \['num_gpu'\]"),
    ({"min_replicas": 3, "max_replicas": 2}, "min_replicas <= max_replicas"),
    ({"min_replicas": 0}, "min_replicas <= max_replicas"),
])
def test_bad_args_are_refused_by_name(args, message):
    with pytest.raises(ValueError, match=message):
        app(args)


def test_front_flags():
    args = parse_front_args(["front", "--ray-address", "ray://irf-irforge-ray-head-svc:10001", "--host", "0.0.0.0", "--port", "50053"])
    assert (args.ray_address, args.app, args.host, args.port) == ("ray://irf-irforge-ray-head-svc:10001", "encoder", "0.0.0.0", 50053)
    with pytest.raises(SystemExit):
        parse_front_args(["front"])  # --ray-address is required
