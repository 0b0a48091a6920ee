"""The orchestrator service's configuration: the settings of `irforge service orchestrator` (its
flags are in irforge.cli.service_flags), each with an environment default (the Helm chart and
`irforge serve` set those), turned into a started Orchestrator."""

from __future__ import annotations

import os
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import platformdirs

if TYPE_CHECKING:
    from irforge.orchestrator.core import Orchestrator

ROLES = ("corpus", "evaluator", "encoder", "judge")


def default_state_dir() -> Path:
    folder = os.environ.get("IRFORGE_STATE_DIR")
    return Path(folder) if folder else Path(platformdirs.user_data_dir("irforge")) / "orchestrator"


@dataclass(frozen=True)
class OrchestratorSettings:
    """What `irforge service orchestrator` was given; None: the environment's default."""

    servers: dict[str, str | None]           # role (ROLES) -> HOST:PORT, else $IRFORGE_<ROLE>_SERVER
    state_dir: Path | None = None            # else $IRFORGE_STATE_DIR or the user data dir's
    job_workers: int = 2
    allowed_roots: tuple[Path, ...] | None = None   # else $IRFORGE_ALLOWED_ROOTS (colon-separated)
    call_timeout_s: float = 600.0
    long_call_timeout_s: float = 6 * 3600.0
    max_attempts: int = 3
    retry_backoff_s: float = 2.0
    shard_runner: str = "local"
    shard_runner_config: Path | None = None


def start_orchestrator(settings: OrchestratorSettings, stack: ExitStack) -> Orchestrator:
    # Here, not at the top: `irforge service`'s flags (ROLES) are read by every `irforge --help`.
    from irforge.orchestrator.context import ServiceAddresses
    from irforge.orchestrator.core import Orchestrator

    services = ServiceAddresses(
        **{role: settings.servers.get(role) or os.environ.get(f"IRFORGE_{role.upper()}_SERVER") or None
           for role in ROLES},
        call_timeout_s=settings.call_timeout_s, long_call_timeout_s=settings.long_call_timeout_s,
        shard_runner=settings.shard_runner, shard_options=_shard_options(settings.shard_runner_config),
    )
    from irforge.models.cache import default_cache_path

    # The embedding cache `irforge eval` uses ($IRFORGE_CACHE_DIR): vectors encoded by either are reused by both.
    orchestrator = Orchestrator(settings.state_dir or default_state_dir(), services, workers=settings.job_workers,
                                max_attempts=settings.max_attempts, backoff_s=settings.retry_backoff_s,
                                cache_path=default_cache_path(), allowed_roots=_allowed_roots(settings.allowed_roots))
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


def _allowed_roots(given: tuple[Path, ...] | None) -> tuple[Path, ...]:
    roots = given or [Path(p) for p in os.environ.get("IRFORGE_ALLOWED_ROOTS", "").split(":") if p]
    return tuple(roots)
