"""Which documents each shard encodes: contiguous ordinals of the corpus stream.

A document's ordinal is its position in `iter_corpus` (0-based, blank lines not counted), so
every process that streams the same corpus file agrees on it without a shared index.

    plan_shards(10, 3) -> [Shard(0, 3, 0, 4), Shard(1, 3, 4, 7), Shard(2, 3, 7, 10)]

Sizes differ by at most one, the larger shards first. More shards than documents is allowed:
the surplus shards are empty (a Kubernetes Indexed Job needs `completions` fixed before anyone
counts the corpus, and an empty shard costs one short pod, not a failed job).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Shard:
    """Documents [start, stop) of the corpus stream; shard `index` of `count`."""

    index: int
    count: int
    start: int
    stop: int

    @property
    def size(self) -> int:
        return self.stop - self.start

    @property
    def name(self) -> str:
        """File stem of this shard's output: `shard-<index>-of-<count>`."""
        return f"shard-{self.index}-of-{self.count}"

    def describe(self) -> str:
        if self.size == 0:
            return f"shard {self.index} of {self.count} (empty)"
        return f"shard {self.index} of {self.count} (documents {self.start}-{self.stop - 1})"

    def as_dict(self) -> dict:
        return {"index": self.index, "count": self.count, "start": self.start, "stop": self.stop}


def plan_shards(total_documents: int, shard_count: int) -> list[Shard]:
    """Split ordinals [0, total_documents) into `shard_count` contiguous shards covering each once."""
    for name, value, least in (("total_documents", total_documents, 0), ("shard_count", shard_count, 1)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{name} must be an integer, got {value!r}")
        if value < least:
            raise ValueError(f"{name} must be at least {least}, got {value}")
    base, larger = divmod(total_documents, shard_count)
    shards, start = [], 0
    for index in range(shard_count):
        stop = start + base + (1 if index < larger else 0)
        shards.append(Shard(index, shard_count, start, stop))
        start = stop
    return shards


def shard_for(total_documents: int, shard_count: int, shard_index: int) -> Shard:
    """The one shard a worker encodes; raises ValueError for an index outside [0, shard_count)."""
    if isinstance(shard_index, bool) or not isinstance(shard_index, int) or not 0 <= shard_index < shard_count:
        raise ValueError(f"shard index must be in [0, {shard_count}), got {shard_index!r}")
    return plan_shards(total_documents, shard_count)[shard_index]
