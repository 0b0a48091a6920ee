"""The orchestrator service's configuration: flags of `irforge service orchestrator`, each with
an environment default (the Helm chart and `irforge serve` set those), turned into a started
Orchestrator."""

from __future__ import annotations

import argparse
import os
from contextlib import ExitStack
from pathlib import Path

import platformdirs

from irforge.orchestrator.context import ServiceAddresses
from irforge.orchestrator.core import Orchestrator

ROLES = ("corpus", "evaluator", "encoder", "judge")


def default_state_dir() -> Path:
    folder = os.environ.get("IRFORGE_STATE_DIR")
    return Path(folder) if folder else Path(platformdirs.user_data_dir("irforge")) / "orchestrator"


def add_orchestrator_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("orchestrator")
    for role in ROLES:
        group.add_argument(f"--{role}-server", metavar="HOST:PORT",
                           help=f"the {role} service the orchestrator calls (default $IRFORGE_{role.upper()}_SERVER)")
    group.add_argument("--state-dir", type=Path, help="job store (jobs.sqlite3) and job folders "
                       "(default $IRFORGE_STATE_DIR or the user data dir's irforge/orchestrator)")
    group.add_argument("--job-workers", type=int, default=2, help="jobs run at once (default 2)")
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
    group.add_argument("--shard-runner-config", type=Path, default=os.environ.get("IRFORGE_SHARD_RUNNER_CONFIG") or None,
                       help="YAML mapping of the shard runner's options (local: max_parallel, retries; kubernetes: image, "
                            "work_volume_claim, gpu_per_shard, node_selector, tolerations, ...; see docs/sharding.md)")


def orchestrator_from_args(args: argparse.Namespace, stack: ExitStack) -> Orchestrator:
    services = ServiceAddresses(
        **{role: getattr(args, f"{role}_server", None) or os.environ.get(f"IRFORGE_{role.upper()}_SERVER") or None
           for role in ROLES},
        call_timeout_s=args.call_timeout, long_call_timeout_s=args.long_call_timeout, shard_runner=args.shard_runner,
        shard_options=_shard_options(args.shard_runner_config),
    )
    from irforge.models.cache import default_cache_path

    # The embedding cache `irforge eval` uses ($IRFORGE_CACHE_DIR): vectors encoded by either are reused by both.
    orchestrator = Orchestrator(args.state_dir or default_state_dir(), services, workers=args.job_workers,
                                max_attempts=args.max_attempts, backoff_s=args.retry_backoff,
                                cache_path=default_cache_path(), allowed_roots=_allowed_roots(args))
    stack.callback(orchestrator.shutdown)
    return orchestrator.start()


def _shard_options(path: Path | None) -> dict:
    if path is None:
        return {}
    import yaml

    options = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    if not isinstance(options, dict):
        raise ValueError(f"--shard-runner-config {path}: expected a mapping of runner options, got {type(options).__name__}")
    return options


def _allowed_roots(args: argparse.Namespace) -> tuple[Path, ...]:
    roots = getattr(args, "allowed_roots", None) or [Path(p) for p in os.environ.get("IRFORGE_ALLOWED_ROOTS", "").split(":") if p]
    return tuple(roots)
