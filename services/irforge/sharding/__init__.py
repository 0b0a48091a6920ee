"""Big-corpus encoding in shards: local processes on one machine, a Kubernetes Indexed Job in a cluster.

    runner = make_shard_runner("local", max_parallel=2)          # or "kubernetes", image=..., work_volume_claim=...
    report = encode_corpus_in_shards(dataset_dir, encoder_spec, cache_path, shard_count=8,
                                     runner=runner, work_dir=work_dir, encoder_key=encoder.identity_key)
    # every document's vector is now in the embedding cache: DenseRetriever encodes 0 documents

See docs/sharding.md.
"""

from __future__ import annotations

from irforge.sharding.coordinator import ShardingReport, encode_corpus_in_shards
from irforge.sharding.errors import ShardFailed, ShardingCancelled, ShardingConfigError, ShardingError, ShardOutputError
from irforge.sharding.job import RunOutcome, ShardJob, ShardRunner
from irforge.sharding.merge import check_shard_outputs, merge_shards
from irforge.sharding.plan import Shard, plan_shards, shard_for

RUNNERS = ("local", "kubernetes")


def make_shard_runner(kind: str, **options) -> ShardRunner:
    """A runner by name. local: max_parallel, retries, env. kubernetes: KubernetesRunnerConfig's fields."""
    if kind == "local":
        from irforge.sharding.runners.local import LocalShardRunner

        return _construct(LocalShardRunner, kind, options)
    if kind == "kubernetes":
        from irforge.common.extras import require_extra

        require_extra("kubernetes", "kubernetes", "the kubernetes shard runner")
        from irforge.sharding.runners.kubernetes import KubernetesShardRunner
        from irforge.sharding.runners.kubernetes_job import KubernetesRunnerConfig

        return KubernetesShardRunner(_construct(KubernetesRunnerConfig, kind, options))
    raise ShardingConfigError(f"unknown shard runner {kind!r}; choose one of {', '.join(RUNNERS)}")


def _construct(cls, kind: str, options: dict):
    import dataclasses

    allowed = {f.name for f in dataclasses.fields(cls) if f.init and f.name != "name"}
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise ShardingConfigError(f"{kind} shard runner: unknown option(s) {', '.join(unknown)}; "
                                  f"allowed: {', '.join(sorted(allowed))}")
    missing = sorted(f.name for f in dataclasses.fields(cls)
                     if f.init and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
                     and f.name not in options)
    if missing:
        raise ShardingConfigError(f"{kind} shard runner: missing option(s) {', '.join(missing)}")
    return cls(**options)


__all__ = [
    "RUNNERS", "RunOutcome", "Shard", "ShardFailed", "ShardJob", "ShardOutputError", "ShardRunner", "ShardingCancelled",
    "ShardingConfigError", "ShardingError", "ShardingReport", "check_shard_outputs", "encode_corpus_in_shards",
    "make_shard_runner", "merge_shards", "plan_shards", "shard_for",
]
