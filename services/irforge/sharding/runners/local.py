"""Shards as local processes: the same `irforge shard-worker` command a Kubernetes pod runs.

At most `max_parallel` workers at once; a failed shard is rerun up to `retries` times (a rerun
overwrites atomically, see output.py). Each attempt's stderr goes to
<work_dir>/logs/<shard>.attempt-<n>.log; the tail of the last one is in the error.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from irforge.common.progress import ProgressFactory, no_progress
from irforge.sharding.errors import ShardFailed, ShardingCancelled, ShardingConfigError, describe_failures
from irforge.sharding.job import RunOutcome, ShardJob
from irforge.sharding.plan import Shard

POLL_S = 0.05
STDERR_TAIL_CHARS = 1500


def stderr_tail(path: Path, limit: int = STDERR_TAIL_CHARS) -> str:
    try:
        with open(path, "rb") as handle:
            handle.seek(max(0, handle.seek(0, os.SEEK_END) - limit))
            text = handle.read().decode("utf-8", "replace")
    except OSError:
        return "(no stderr captured)"
    # tqdm redraws with carriage returns: keep only what each line ended as.
    lines = [line.rsplit("\r", 1)[-1] for line in text.splitlines()]
    return "\n".join(line for line in lines if line.strip()) or "(stderr empty)"


@dataclass
class _Attempt:
    shard: Shard
    number: int
    process: subprocess.Popen
    log_path: Path
    log_handle: object


@dataclass
class LocalShardRunner:
    max_parallel: int = 1
    retries: int = 1                     # reruns of a failed shard (0: none)
    python: str = sys.executable
    env: dict[str, str] = field(default_factory=dict)
    threads_per_worker: int | None = None  # torch/BLAS threads; None: the machine's CPUs shared out
    name: str = "local"

    def __post_init__(self):
        if isinstance(self.max_parallel, bool) or not isinstance(self.max_parallel, int) or self.max_parallel < 1:
            raise ShardingConfigError(f"local runner: max_parallel must be a positive integer, got {self.max_parallel!r}")
        if isinstance(self.retries, bool) or not isinstance(self.retries, int) or self.retries < 0:
            raise ShardingConfigError(f"local runner: retries must be a non-negative integer, got {self.retries!r}")

    def describe(self) -> dict:
        return {"runner": self.name, "max_parallel": self.max_parallel, "retries": self.retries,
                "threads_per_worker": self.threads_per_worker}

    def _start(self, job: ShardJob, shard: Shard, number: int) -> _Attempt:
        logs = Path(job.work_dir) / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        log_path = logs / f"{shard.name}.attempt-{number}.log"
        handle = open(log_path, "wb")  # noqa: SIM115  (open while the worker runs; closed when it ends)
        # Workers each using every core spin against each other (measured: 3x slower encoding on 2 cores).
        threads = self.threads_per_worker or max(1, (os.cpu_count() or 1) // self.max_parallel)
        environment = {"OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads), **os.environ,
                       "HF_HUB_OFFLINE": "1", **self.env}
        environment.pop("JOB_COMPLETION_INDEX", None)  # the index is passed explicitly here
        command = [self.python, "-m", "irforge.cli.main", *job.worker_arguments(shard.index)]
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=handle, stderr=subprocess.STDOUT,
                                   env=environment)
        return _Attempt(shard, number, process, log_path, handle)

    def run(self, job: ShardJob, pending: list[Shard], *, progress: ProgressFactory | None = None,
            cancel: threading.Event | None = None) -> RunOutcome:
        queue = list(pending)
        running: list[_Attempt] = []
        attempts: dict[int, int] = {}
        failures: dict[int, str] = {}
        bar = (progress or no_progress)(f"encode {len(pending)} shard(s) locally", sum(s.size for s in pending), "doc")
        try:
            while queue or running:
                if cancel is not None and cancel.is_set():
                    raise ShardingCancelled(f"sharded encode of {job.facts.dataset} cancelled; "
                                            f"{len(running)} running worker(s) stopped")
                while queue and len(running) < self.max_parallel:
                    shard = queue.pop(0)
                    attempts[shard.index] = attempts.get(shard.index, 0) + 1
                    running.append(self._start(job, shard, attempts[shard.index]))
                for attempt in [a for a in running if a.process.poll() is not None]:
                    running.remove(attempt)
                    attempt.log_handle.close()
                    if attempt.process.returncode == 0:
                        failures.pop(attempt.shard.index, None)
                        bar.update(attempt.shard.size)
                        continue
                    failures[attempt.shard.index] = (
                        f"exit status {attempt.process.returncode} after {attempt.number} attempt(s); "
                        f"log {attempt.log_path}:\n{stderr_tail(attempt.log_path)}")
                    if attempt.number <= self.retries:
                        queue.append(attempt.shard)
                time.sleep(POLL_S)
        finally:
            for attempt in running:     # cancelled, interrupted or crashed: stop our own workers
                attempt.process.kill()
                attempt.process.wait()
                attempt.log_handle.close()
            bar.close()
        if failures:
            raise ShardFailed(describe_failures(f"local shard workers for {job.facts.dataset}", failures,
                                                job.shard_count), failures)
        return RunOutcome(self.describe(), attempts)
