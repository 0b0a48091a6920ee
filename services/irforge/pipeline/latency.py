"""Latency and throughput where each query is answered: results.json's `latency`.

    recorder = LatencyRecorder()
    with recorder.answering(len(queries)):                         # one retrieve(): a pass
        for query_id, hits in recorder.batched("bm25 search", len(queries), SEARCH_CHUNK,
                                               lambda start, end: search(queries[start:end])):
            ...
    recorder.summary()   # {"end_to_end": ..., "stages": {...}, "encoding": {...}, ...}

What a sample means depends on how the stage answers, and each stage says so in its `basis`:
- one request per query (a search endpoint): the answered attempt's own time, network included;
- one call for a batch of queries (embedded BM25, vector search, a reranker call, fusion): the
  call's time split evenly, batch time / queries in the batch. That is a cost per query, not the
  wait of a query sent alone: a batch's queries all wait for the whole batch.
- requests that are not one per query (embeddings, rerank endpoints' document batches) form
  stages of unit "request": their samples are requests, not queries.
`end_to_end` adds, per query of a pass, the per-query samples of every stage it went through.
Throughput is queries (or texts) over the stage's wall time, so concurrent requests raise it
above 1 / mean latency. Raw samples stay in memory (8 bytes a query per stage), never in
results.json: percentiles are what a reader compares, and the per-query map would double the file.

Composite retrievers share one recorder with their parts (`share`), so the stages of a hybrid or
a reranked run land in one summary. The recorder is thread-safe (endpoint requests run in threads).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

PERCENTILES = (50, 95, 99)
PERCENTILE_METHOD = "linear"
METHOD = (f"numpy.percentile(samples, q, method={PERCENTILE_METHOD!r}): numpy's default, interpolating "
          "between the two nearest samples; milliseconds")
PER_REQUEST = "one request per query; the answered attempt's time (request sent to answer decoded and checked, " \
              "network included); retries and backoff are counted in the endpoint's calls, not here"


def batch_basis(size: int, what: str, how: str = "") -> str:
    return f"{what} of up to {size} queries{f' ({how})' if how else ''}; time per query = the batch's time / queries in it"


@dataclass
class _Stage:
    unit: str                                   # "query" or "request"
    basis: str
    samples: list[float] = field(default_factory=list)
    keys: list[tuple[int, str] | None] = field(default_factory=list)   # (pass, query id) of query samples
    wall_s: float = 0.0
    calls: int = 0
    texts: int = 0                              # texts or documents the requests carried (request stages)


class LatencyRecorder:
    def __init__(self):
        self._lock = threading.Lock()
        self._stages: dict[str, _Stage] = {}
        self._encoding: dict[str, list] = {}     # what -> [texts, seconds]
        self._depth = 0
        self._pass = 0
        self._wall_s = 0.0
        self._queries = 0

    # -- passes: one retrieve() of the outermost retriever ------------------------------------
    @contextmanager
    def answering(self, queries: int) -> Iterator[None]:
        """Around a retrieve(): the outermost one opens a pass (instruction jobs retrieve the same
        query ids once per mode: each mode is its own pass) and its wall time is end_to_end's."""
        outer = self._depth == 0
        if outer:
            self._pass += 1
        self._depth += 1
        started = time.perf_counter()
        try:
            yield
        finally:
            self._depth -= 1
            if outer:
                self._wall_s += time.perf_counter() - started
                self._queries += queries

    # -- samples ------------------------------------------------------------------------------
    def _stage(self, name: str, unit: str, basis: str) -> _Stage:
        stage = self._stages.get(name)
        if stage is None:
            stage = self._stages[name] = _Stage(unit, basis)
        return stage

    def batch(self, name: str, query_ids: list[str], seconds: float, basis: str, *, overlapping: bool = False) -> None:
        """One call answered `query_ids`: each gets seconds / len. `overlapping`: calls run
        concurrently, the stage's wall time comes from `section` instead of adding them up."""
        if not query_ids:
            return
        share = seconds / len(query_ids)
        with self._lock:
            stage = self._stage(name, "query", basis)
            stage.samples.extend([share] * len(query_ids))
            stage.keys.extend((self._pass, query_id) for query_id in query_ids)
            stage.calls += 1
            if not overlapping:
                stage.wall_s += seconds

    def request(self, name: str, seconds: float, basis: str, *, query_id: str | None = None, texts: int = 0) -> None:
        """One request: a query's own (query_id given) or one of a stage of unit "request". Its
        stage's wall time comes from `section` (requests overlap)."""
        with self._lock:
            stage = self._stage(name, "query" if query_id is not None else "request", basis)
            stage.samples.append(seconds)
            stage.keys.append((self._pass, query_id) if query_id is not None else None)
            stage.calls += 1
            stage.texts += texts

    @contextmanager
    def section(self, name: str, unit: str, basis: str) -> Iterator[None]:
        """The wall time of a stage's concurrent requests (for its throughput); not recorded when
        they fail (a gRPC endpoint without BatchSearch is asked again query by query)."""
        started = time.perf_counter()
        yield
        with self._lock:
            self._stage(name, unit, basis).wall_s += time.perf_counter() - started

    def batched(self, name: str, count: int, size: int, call: Callable[[int, int], Iterable[tuple[str, object]]],
                basis: str | None = None) -> Iterator[tuple[str, object]]:
        """call(start, end) for consecutive ranges of `size` over range(count), each answer (an
        iterable of (query id, answer)) read whole and timed as one batch, then yielded on."""
        basis = basis or batch_basis(size, "batches")
        for start in range(0, count, size):
            started = time.perf_counter()
            answers = list(call(start, min(count, start + size)))
            self.batch(name, [query_id for query_id, _ in answers], time.perf_counter() - started, basis)
            yield from answers

    def timed_chunks(self, name: str, chunks: Iterator[tuple[list[str], object]], basis: str) -> Iterator[tuple[list[str], object]]:
        """(ids, payload) chunks from an iterator whose every step computes a chunk, each timed as
        one batch (query encoding through the embedding cache)."""
        while True:
            started = time.perf_counter()
            try:
                ids, payload = next(chunks)
            except StopIteration:
                return
            self.batch(name, list(ids), time.perf_counter() - started, basis)
            yield ids, payload

    def encoded(self, what: str, texts: int, seconds: float) -> None:
        """Texts the encoder really encoded (cache hits excluded) and the time it took."""
        with self._lock:
            totals = self._encoding.setdefault(what, [0, 0.0])
            totals[0] += texts
            totals[1] += seconds

    # -- the record ---------------------------------------------------------------------------
    def summary(self) -> dict | None:
        """results.json's `latency`, or None when nothing was recorded."""
        with self._lock:
            if not self._stages and not self._encoding:
                return None
            stages = {name: _stage_summary(stage) for name, stage in self._stages.items()}
            totals: dict[tuple[int, str], float] = {}
            for stage in self._stages.values():
                for key, seconds in zip(stage.keys, stage.samples):
                    if key is not None:
                        totals[key] = totals.get(key, 0.0) + seconds
            record = {"method": METHOD}
            if totals:
                record["end_to_end"] = {
                    **summarise(list(totals.values())),
                    **_throughput(self._queries, self._wall_s, "queries"),
                    "basis": "per query, the sum of its per-query stage times below; throughput = queries / "
                             "the retriever's wall time (irforge's own work between stages included)",
                }
            record["stages"] = stages
            if self._encoding:
                record["encoding"] = {what: {"texts": texts, "seconds": round(seconds, 3),
                                             "texts_per_s": round(texts / seconds, 1) if texts and seconds > 0 else None}
                                      for what, (texts, seconds) in self._encoding.items()}
            return record


def summarise(samples: list[float]) -> dict:
    """{"count", "p50_ms", "p95_ms", "p99_ms", "max_ms", "mean_ms"} of samples in seconds."""
    values = np.asarray(samples, dtype=np.float64) * 1000.0
    if values.size == 0:
        return {"count": 0}
    points = np.percentile(values, PERCENTILES, method=PERCENTILE_METHOD)
    return {"count": int(values.size), **{f"p{q}_ms": round(float(v), 3) for q, v in zip(PERCENTILES, points)},
            "max_ms": round(float(values.max()), 3), "mean_ms": round(float(values.mean()), 3)}


def _throughput(count: int, wall_s: float, unit: str) -> dict:
    return {"wall_s": round(wall_s, 3), f"{unit}_per_s": round(count / wall_s, 1) if wall_s > 0 and count else None}


def _stage_summary(stage: _Stage) -> dict:
    record = {"unit": stage.unit, **summarise(stage.samples), "calls": stage.calls}
    record.update(_throughput(len(stage.samples), stage.wall_s, "queries" if stage.unit == "query" else "requests"))
    if stage.texts:
        record["texts"] = stage.texts
        record["texts_per_s"] = round(stage.texts / stage.wall_s, 1) if stage.wall_s > 0 else None
    record["basis"] = stage.basis
    return record


def share(recorder: LatencyRecorder, *parts) -> None:
    """Point `parts` (retrievers, encoders, rerankers: anything with `use_latency`) at `recorder`."""
    for part in parts:
        use = getattr(part, "use_latency", None)
        if use is not None:
            use(recorder)


def latency_of(retriever) -> dict | None:
    """results.json's `latency` for a retriever: None for one that records nothing (a stored run);
    {"absent": why} for one that cannot (a run file given as the system was timed elsewhere)."""
    absent = getattr(retriever, "latency_absent", None)
    if isinstance(absent, str):
        return {"absent": absent}
    recorder = getattr(retriever, "latency", None)
    return recorder.summary() if isinstance(recorder, LatencyRecorder) else None


def latency_lines(latency: dict | None) -> list[str]:
    """The printed summary of results.json's `latency` (eval's and eval-instructions' tables)."""
    if not latency:
        return []
    if "absent" in latency:
        return [f"latency: not measured ({latency['absent']})"]

    def figures(record: dict, unit: str) -> str:
        if not record.get("count"):
            return "no samples"
        rate = record.get(f"{unit}_per_s")
        points = "/".join(f"{record[name]:.1f}" for name in ("p50_ms", "p95_ms", "p99_ms", "max_ms"))
        return f"{points} ms" + (f" · {rate:,.1f} {unit}/s" if rate else "")

    lines = ["latency p50/p95/p99/max (results.json `latency`: how each stage was timed):"]
    if "end_to_end" in latency:
        lines.append(f"  per query, end to end   {figures(latency['end_to_end'], 'queries')}")
    for name, stage in latency.get("stages", {}).items():
        unit = "queries" if stage["unit"] == "query" else "requests"
        how = ("per request" if stage["unit"] == "request" or stage["calls"] == stage.get("count")
               else f"batch time / size, {stage['calls']} batches")
        texts = f" · {stage['texts_per_s']:,.1f} texts/s" if stage.get("texts_per_s") else ""
        lines.append(f"  {name:<23} {figures(stage, unit)}{texts} ({how})")
    encoding = latency.get("encoding", {})
    if encoding:
        parts = [f"{what} {e['texts_per_s']:,.1f} texts/s ({e['texts']} texts)" if e.get("texts_per_s")
                 else f"{what}: none encoded (cache)" for what, e in encoding.items()]
        lines.append("  encoding: " + " · ".join(parts))
    return lines


def merged_latency(summaries: list[dict | None]) -> dict | None:
    """One `latency` from the summaries of separate steps (an orchestrator job encodes, retrieves
    and reranks in steps of their own): stages and encoding side by side. Percentiles of separate
    steps cannot be added up per query, so `end_to_end` stays only when one step answered."""
    present = [summary for summary in summaries if summary]
    if not present:
        return None
    if all("absent" in summary for summary in present):   # a run file as the system: nothing was timed
        return present[0]
    record: dict = {"method": METHOD}
    answered = [summary["end_to_end"] for summary in present if "end_to_end" in summary]
    if len(answered) == 1:
        record["end_to_end"] = answered[0]
    elif answered:
        record["end_to_end_note"] = "the queries were answered in separate steps (retrieve, rerank): see each stage"
    record["stages"] = {name: stage for summary in present for name, stage in summary.get("stages", {}).items()}
    encoding = {what: figures for summary in present for what, figures in summary.get("encoding", {}).items()}
    if encoding:
        record["encoding"] = encoding
    return record
