"""Sharding errors a user or an operator can act on; each names the shard(s) concerned."""

from __future__ import annotations


class ShardingError(RuntimeError):
    """Base class: a sharded encode could not produce every shard's vectors."""


class ShardingConfigError(ShardingError, ValueError):
    """A runner or worker setting is invalid (bad name, path outside the shared volume, ...)."""


class ShardOutputError(ShardingError):
    """Shard outputs are missing or inconsistent with the plan (merge refuses them all)."""


class ShardFailed(ShardingError):
    """Shards failed after every retry; `failures` maps shard index to what went wrong."""

    def __init__(self, message: str, failures: dict[int, str]):
        super().__init__(message)
        self.failures = dict(failures)


class ShardingCancelled(ShardingError):
    """The caller cancelled the run; its workers were stopped (processes killed, Job deleted)."""


def describe_failures(what: str, failures: dict[int, str], shard_count: int) -> str:
    """One message naming every failed shard and, briefly, why."""
    lines = [f"{what}: {len(failures)} of {shard_count} shard(s) failed ({', '.join(map(str, sorted(failures)))})"]
    for index in sorted(failures):
        lines.append(f"  shard {index} of {shard_count}: {failures[index]}")
    return "\n".join(lines)
