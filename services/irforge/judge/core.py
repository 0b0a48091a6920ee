"""The judge service's core, transport-free: the store first, the backend only for what it lacks.

    with JudgeCore(backend, JudgementStore(path)) as core:
        outcome = core.judge(pairs)        # JudgeOutcome: judgements in input order + JudgeStats
        outcome.stats.calls                # requests actually sent: 0 on a re-run

For each judge() call:
1. every pair is looked up in the store (same query text, document text and judge identity);
   a labelled one comes back with from_store=True and calls=0;
2. the misses are deduplicated (the same texts twice in one request are judged once; the copy
   reports calls=0 so stats count each request once) and sent to the backend in chunks;
3. each chunk's judgements are written to the store before the next chunk is sent, so a run
   killed half way keeps (and a re-run reuses) everything judged before the kill.

The server, the hole filler, calibration and quality control all go through this class, so a
label paid for once is never paid for again, whichever command asked first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from irforge.judge.base import JudgeBackend, Judgement, JudgeOutcome, JudgePair, JudgeStats, Progress, identity_sha256
from irforge.judge.errors import JudgeError, JudgeRequestError
from irforge.judge.store import JudgementStore, pair_key

# Pairs per backend call between store commits: small enough that a kill loses little, large
# enough to keep the LLM backend's max_concurrency busy.
CHUNK_PAIRS = 64


class JudgeCore:
    def __init__(self, backend: JudgeBackend, store: JudgementStore | None = None, *, chunk_pairs: int = CHUNK_PAIRS):
        self.backend = backend
        self.store = store          # None: judge without reuse or provenance records (record_id stays None)
        self.chunk_pairs = chunk_pairs

    def identity(self) -> dict[str, str]:
        return dict(self.backend.identity())

    @property
    def judge_id(self) -> str:
        return identity_sha256(self.identity())

    def describe(self) -> dict:
        """What results record about the judge: its identity, the backend's own account, the store."""
        details = self.backend.describe() if hasattr(self.backend, "describe") else {}
        return {**details, "identity": self.identity(), "judge_id": self.judge_id,
                "store": str(self.store.path) if self.store is not None else None}

    def judge(self, pairs: Sequence[JudgePair], progress: Progress | None = None) -> JudgeOutcome:
        pairs = list(pairs)
        check_pairs(pairs)
        identity = self.identity()
        judge_id = identity_sha256(identity)
        results: list[Judgement | None] = (self.store.lookup(pairs, judge_id) if self.store is not None
                                           else [None] * len(pairs))
        if progress is not None and any(results):
            progress(sum(result is not None for result in results))

        # The first pair of each (query text, document text) asks; later copies take its answer.
        first_of: dict[tuple[str, str], int] = {}
        copies: list[tuple[int, int]] = []
        for index, (pair, result) in enumerate(zip(pairs, results)):
            if result is not None:
                continue
            key = pair_key(pair)
            if key in first_of:
                copies.append((index, first_of[key]))
            else:
                first_of[key] = index
        to_ask = list(first_of.values())
        for start in range(0, len(to_ask), self.chunk_pairs):
            chunk = to_ask[start:start + self.chunk_pairs]
            asked = [pairs[index] for index in chunk]
            answers = self.backend.judge(asked, progress)
            if len(answers) != len(asked):
                raise JudgeError(f"judge backend {identity.get('backend', '?')} returned {len(answers)} judgements "
                                 f"for {len(asked)} pairs")
            if self.store is not None:
                answers = self.store.record(answers, asked, identity)
            for index, answer in zip(chunk, answers):
                results[index] = answer
        for index, original in copies:
            results[index] = replace(results[original], query_id=pairs[index].query_id, doc_id=pairs[index].doc_id,
                                     calls=0, prompt_tokens=0, completion_tokens=0, cost_usd=0.0)
        if progress is not None and copies:
            progress(len(copies))

        stats = JudgeStats()
        for result in results:
            stats.add(result)
        return JudgeOutcome(judgements=results, stats=stats)

    def close(self) -> None:
        try:
            self.backend.close()
        finally:
            if self.store is not None:
                self.store.close()

    def __enter__(self) -> JudgeCore:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


def check_pairs(pairs: Sequence[JudgePair]) -> None:
    """Raise JudgeRequestError naming the first malformed pair (by position and ids)."""
    for index, pair in enumerate(pairs):
        if not isinstance(pair, JudgePair):
            raise JudgeRequestError(f"pair {index + 1}: expected a JudgePair, got {type(pair).__name__}")
        for name in ("query_id", "query", "doc_id", "document"):
            if not isinstance(getattr(pair, name), str):
                raise JudgeRequestError(f"pair {index + 1} (query {pair.query_id!r}, document {pair.doc_id!r}): "
                                        f"`{name}` must be text, got {type(getattr(pair, name)).__name__}")
        if not pair.query_id or not pair.doc_id:
            raise JudgeRequestError(f"pair {index + 1}: query_id and doc_id must not be empty "
                                    f"(got {pair.query_id!r}, {pair.doc_id!r})")
        if not pair.query.strip():
            raise JudgeRequestError(f"pair {index + 1} (query {pair.query_id}, document {pair.doc_id}): the query text "
                                    f"is empty; there is nothing to judge relevance to")
