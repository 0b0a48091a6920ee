"""What a runner is asked to run: one worker command per shard, and the runner interface."""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from irforge.common.progress import ProgressFactory
from irforge.models.encoder import EncoderSpec
from irforge.sharding.corpus_facts import CorpusFacts
from irforge.sharding.errors import ShardingConfigError
from irforge.sharding.plan import Shard


def encoder_flags(spec: EncoderSpec) -> list[str]:
    """The `irforge` encoder flags (the encoder section of irforge.config.pipeline) that rebuild `spec`.

    String values use `--flag=value` so a prefix starting with "-" is not read as a flag.
    """
    if spec.extra:
        raise ShardingConfigError(f"EncoderSpec.extra {spec.extra!r} has no command-line flag; a shard worker cannot receive it")
    flags = [f"--model={spec.model}", f"--encode-batch-size={spec.batch_size}", f"--precision={spec.precision}"]
    if spec.revision:
        flags.append(f"--model-revision={spec.revision}")
    # None (the model's own) sends no flag; "" (none) is sent: the model's own may not be empty.
    if spec.query_prefix is not None:
        flags.append(f"--query-prefix={spec.query_prefix}")
    if spec.passage_prefix is not None:
        flags.append(f"--passage-prefix={spec.passage_prefix}")
    if spec.max_seq_length:
        flags.append(f"--max-seq-length={spec.max_seq_length}")
    if not spec.normalize:
        flags.append("--no-normalize")
    if spec.device:
        flags.append(f"--device={spec.device}")
    return flags


@dataclass(frozen=True)
class ShardJob:
    """One sharded encode: the corpus, the plan, the encoder, where outputs go."""

    dataset_dir: Path
    work_dir: Path
    facts: CorpusFacts
    shards: tuple[Shard, ...]
    encoder_spec: EncoderSpec
    sparse: bool = False                    # a SparseEncoder (SPLADE): workers get --sparse
    max_active_dims: int | None = None

    @property
    def shard_count(self) -> int:
        return len(self.shards)

    @property
    def job_id(self) -> str:
        """Stable for the same corpus bytes, plan, encoder and work folder: a restarted
        coordinator finds (and adopts) the run it started before."""
        parts = [self.facts.fingerprint, str(self.shard_count), repr(sorted(vars(self.encoder_spec).items())),
                 str(Path(self.work_dir).resolve())]
        if self.sparse:  # dense jobs keep the ids they had
            parts.append(f"sparse:{self.max_active_dims}")
        key = "\n".join(parts)
        return hashlib.sha256(key.encode()).hexdigest()[:12]

    def worker_arguments(self, shard_index: int | None) -> list[str]:
        """`irforge` arguments of the worker; None leaves the index to $JOB_COMPLETION_INDEX."""
        arguments = ["shard-worker", f"--dataset={self.dataset_dir}", f"--out={self.work_dir}",
                     f"--shard-count={self.shard_count}", f"--total-documents={self.facts.total_documents}",
                     f"--fingerprint={self.facts.fingerprint}"]
        if shard_index is not None:
            arguments.append(f"--shard-index={shard_index}")
        sparse = ["--sparse"] + ([f"--max-active-dims={self.max_active_dims}"] if self.max_active_dims else []) if self.sparse else []
        return arguments + encoder_flags(self.encoder_spec) + sparse


@dataclass
class RunOutcome:
    runner: dict                        # where and how it ran, for results.json
    attempts: dict[int, int]            # shard index -> worker runs it took


class ShardRunner(Protocol):
    """Runs the worker of every `pending` shard to completion, or raises.

    Raises ShardFailed (naming each failed shard, with its error) when shards still fail after
    the runner's retries, ShardingCancelled when `cancel` is set (workers stopped).
    """

    name: str

    def run(self, job: ShardJob, pending: list[Shard], *, progress: ProgressFactory | None = None,
            cancel: threading.Event | None = None) -> RunOutcome: ...
