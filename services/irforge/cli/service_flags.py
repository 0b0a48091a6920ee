"""Flags of `irforge service` shared by its roles: observability (every service process) and the
orchestrator's, turned into the plain values irforge.common.observability and
irforge.orchestrator.config take."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from irforge.accounts.authenticate import MODES as AUTH_MODES
from irforge.common.logs import LOG_FORMATS
from irforge.orchestrator.config import ROLES, OrchestratorSettings


def add_observability_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--metrics-port", type=int, default=0,
                        help="serve Prometheus metrics at http://HOST:PORT/metrics on the service's --host "
                        "(default 0: off; the chart uses 9100)")
    parser.add_argument("--log-format", choices=LOG_FORMATS,
                        help="json: one JSON object per line (time, level, logger, message, service, request_id, "
                        "job_id); text: for people. Default: text on a terminal, json otherwise")


def add_orchestrator_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("orchestrator")
    for role in ROLES:
        group.add_argument(f"--{role}-server", metavar="HOST:PORT",
                           help=f"the {role} service the orchestrator calls (default $IRFORGE_{role.upper()}_SERVER)")
    group.add_argument("--state-dir", type=Path, help="job store (jobs.sqlite3) and job folders "
                       "(default $IRFORGE_STATE_DIR or the user data dir's irforge/orchestrator)")
    group.add_argument("--job-workers", type=int, default=2, help="jobs run at once (default 2)")
    group.add_argument("--web-port", type=int, metavar="PORT",
                       help="also serve the web page (leaderboard, jobs, reports) over HTTP on --host at PORT, in this "
                            "process, with the gRPC server's TLS certificate if given (0: a free port, printed; default: off)")
    group.add_argument("--web-proxy-user-header", metavar="HEADER",
                       help="the web page believes this request header (e.g. X-Auth-Request-Email, set by oauth2-proxy "
                            "in front of an Ingress) as the signed-in user, mapped to a team by --web-proxy-mapping; set it "
                            "only when every route to the web port passes the proxy (docs/accounts.md)")
    group.add_argument("--web-proxy-groups-header", metavar="HEADER", default="X-Auth-Request-Groups",
                       help="the header with the user's comma-separated groups (default X-Auth-Request-Groups)")
    group.add_argument("--web-proxy-mapping", type=Path, metavar="YAML",
                       help="users, groups and operators -> teams (docs/accounts.md); required with --web-proxy-user-header")
    group.add_argument("--auth", choices=AUTH_MODES, default=os.environ.get("IRFORGE_AUTH") or "none",
                       help="who may call: none (every caller is the local operator: one person's machine) or tokens "
                            "(a team's or operator's token, or a client certificate mapped to a team; docs/accounts.md) "
                            "(default $IRFORGE_AUTH or none)")
    group.add_argument("--operator-token-file", type=Path, metavar="FILE",
                       default=os.environ.get("IRFORGE_OPERATOR_TOKEN_FILE") or None,
                       help="--auth tokens: the operator's token; written there (mode 0600) when the platform has none "
                            "yet, registered when it holds a new one (a Secret) (default STATE_DIR/operator.token)")
    group.add_argument("--allowed-root", dest="allowed_roots", type=Path, action="append", metavar="DIR",
                       help="refuse jobs whose dataset, spec files or output lie outside DIR (repeatable; default "
                            "$IRFORGE_ALLOWED_ROOTS, colon-separated; none: any path — set it on a shared platform)")
    group.add_argument("--call-timeout", type=float, default=600.0, help="deadline of a call to a service, seconds")
    group.add_argument("--long-call-timeout", type=float, default=6 * 3600.0,
                       help="deadline of the calls that grow with the corpus (the Ingest stream, a judge batch), seconds")
    group.add_argument("--max-attempts", type=int, default=3, help="tries of a step whose service is unavailable")
    group.add_argument("--retry-backoff", type=float, default=2.0, help="seconds before the first retry (doubling)")
    group.add_argument("--shard-runner", choices=("local", "kubernetes"), default=os.environ.get("IRFORGE_SHARD_RUNNER", "local"),
                       help="where sharded corpus encoding runs: local processes or a Kubernetes Indexed Job")
    group.add_argument("--daily-submission-limit", type=int, default=10, metavar="N",
                       help="leaderboard submissions a team may make per UTC day, refused ones included (default 10; "
                       "a team's own limit, where set, wins; docs/leaderboard.md)")
    group.add_argument("--shard-runner-config", type=Path, default=os.environ.get("IRFORGE_SHARD_RUNNER_CONFIG") or None,
                       help="YAML mapping of the shard runner's options (local: max_parallel, retries; kubernetes: image, "
                            "work_volume_claim, gpu_per_shard, node_selector, tolerations, ...; see docs/sharding.md)")


def orchestrator_settings(args: argparse.Namespace) -> OrchestratorSettings:
    allowed = getattr(args, "allowed_roots", None)
    return OrchestratorSettings(
        servers={role: getattr(args, f"{role}_server", None) for role in ROLES},
        state_dir=args.state_dir, job_workers=args.job_workers, allowed_roots=tuple(allowed) if allowed else None,
        call_timeout_s=args.call_timeout, long_call_timeout_s=args.long_call_timeout, max_attempts=args.max_attempts,
        retry_backoff_s=args.retry_backoff, shard_runner=args.shard_runner, shard_runner_config=args.shard_runner_config,
    )
