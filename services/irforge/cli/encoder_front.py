"""The command line of the Encoder gRPC front of a KubeRay encoder application (the Helm chart's
models Deployment in rayservice mode):

    python -m irforge.cli.encoder_front front --ray-address ray://HEAD:10001 [--app ...] [--host ...] [--port ...]

What it runs is irforge.models.serve_app.run_front."""

from __future__ import annotations

import argparse
import logging
import os
import sys

from irforge.models.serve import DEFAULT_APP_NAME


def parse_front_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m irforge.cli.encoder_front")
    sub = parser.add_subparsers(dest="command", required=True)
    front = sub.add_parser("front", help="serve a Ray cluster's encoder application as irforge.v1.Encoder over gRPC")
    front.add_argument("--ray-address", required=True, help="the cluster's Ray Client address, e.g. ray://irforge-models-head-svc:10001")
    front.add_argument("--app", default=DEFAULT_APP_NAME, help=f"Serve application name (default {DEFAULT_APP_NAME})")
    front.add_argument("--host", default="127.0.0.1")
    front.add_argument("--port", type=int, default=50053)
    front.add_argument("--workers", type=int, default=8, help="request-handling threads")
    front.add_argument("--connect-timeout", type=float, default=900.0, help="seconds to wait for the cluster and the app")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    args = parse_front_args(sys.argv[1:] if argv is None else argv)
    from irforge.models.serve_app import run_front

    return run_front(args.ray_address, args.app, args.host, args.port, args.workers, args.connect_timeout)


if __name__ == "__main__":
    sys.exit(main())
