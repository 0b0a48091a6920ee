"""What a team is shown of a job on a closed dataset: aggregate metrics, per-query values only as
the dataset's policy says, and never a line of its qrels, whichever door it asks through.

- results.json: `per_query` withheld (removed) or coarsened (each value floored to its 0.1 bucket:
  0.63 -> 0.6; 1.0 stays 1.0), `data.qrels_problems.examples` (qrels lines naming unknown
  queries or documents) and `holes` removed. Any other results file but the job's runs
  (qrels.judged.tsv, a judged layer's provenance) is not served at all.
- Messages (a job's error and warnings, its events, a refusal) are scrubbed line by line: a line
  naming a query id and one of its judged document ids together is replaced, whatever put it
  there (a checker quoting a line, an evaluator naming a pair).
- A team's own job spec may not name a path inside the leaderboard's folder (the registered
  copies, their qrels, other teams' submitted files): a team reaches a closed dataset only
  through a submission, where the daily limit counts it.
Operators see everything: they hold the qrels anyway.
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from irforge.accounts.identity import Identity, current_identity, Unauthenticated
from irforge.data import read_beir_qrels
from irforge.orchestrator.errors import JobSpecError

WITHHELD_LINE = "[a line withheld: it named a judged query-document pair of a closed dataset]"
COARSE_STEP = 0.1
SERVED_RUN_SUFFIXES = (".trec",)   # a job's runs: the system's own output, no label in them
_TOKEN = re.compile(r"[^\s\"'`,;:()\[\]{}<>=/\\|]+")


def coarsened(value: float, step: float = COARSE_STEP) -> float:
    """The lower edge of value's bucket of width `step` (1.0 is its own bucket)."""
    return round(math.floor(value / step + 1e-9) * step, 10)


def disclosed_results(results: dict, policy: str) -> dict:
    """results.json as a team may read it for a closed dataset under `policy`."""
    shown = {key: value for key, value in results.items() if key not in ("per_query", "holes")}
    if policy == "shown":
        shown["per_query"] = results.get("per_query", {})
    elif policy == "coarsened":
        shown["per_query"] = {query: {measure: coarsened(value) for measure, value in values.items()}
                              for query, values in results.get("per_query", {}).items()}
        shown["per_query_policy"] = f"coarsened: each value floored to a multiple of {COARSE_STEP:g}"
    else:
        shown["per_query_policy"] = "withheld: this dataset's qrels are closed; only aggregate metrics are shown"
    problems = shown.get("data", {}).get("qrels_problems")
    if isinstance(problems, dict) and "examples" in problems:
        shown["data"] = {**shown["data"], "qrels_problems": {k: v for k, v in problems.items() if k != "examples"}}
    return shown


class QrelsGuard:
    """One closed dataset's judged pairs, to tell whether a text quotes one."""

    def __init__(self, qrels_path: Path):
        self.pairs = {query: set(documents) for query, documents in read_beir_qrels(qrels_path).items()}

    def quotes(self, line: str) -> bool:
        tokens = set(_TOKEN.findall(line))
        return any(query in self.pairs and not self.pairs[query].isdisjoint(tokens) for query in tokens)

    def scrub(self, text: str) -> str:
        if not text:
            return text
        return "\n".join(WITHHELD_LINE if self.quotes(line) else line for line in text.split("\n"))


class Disclosure:
    """The orchestrator's front door asks this before answering a caller (orchestrator/server.py):
    which jobs are on a closed dataset, and what of them the caller may read."""

    def __init__(self, leaderboard_root: Path, closed_datasets: Callable[[], dict[str, tuple[Path, str]]],
                 default_identity: Identity | None = None):
        """closed_datasets() -> {registered data folder: (its qrels file, per-query policy)}."""
        self.root = Path(leaderboard_root)
        self.closed_datasets = closed_datasets
        self.default_identity = default_identity   # the caller when no front door bound one (--auth none)
        self._guards: dict[Path, QrelsGuard] = {}
        self._lock = threading.Lock()

    # -- who asks -----------------------------------------------------------------------------
    def caller(self) -> Identity:
        try:
            return current_identity()
        except Unauthenticated:
            if self.default_identity is None:
                raise
            return self.default_identity

    def sees_everything(self) -> bool:
        return self.caller().is_operator

    # -- submissions straight to the orchestrator -----------------------------------------------
    def admit(self, spec) -> None:
        """Refuse a team's job spec naming a path inside the leaderboard's folder."""
        if self.sees_everything():
            return
        root = self.root.resolve()
        for where, value in spec.paths().items():
            if Path(value).resolve().is_relative_to(root):
                raise JobSpecError(f"job spec field {where!r}: {value} lies in the leaderboard's own folder, which holds "
                                   "closed datasets and other teams' submissions; submit to a registered dataset with "
                                   "`irforge leaderboard submit`")

    # -- what a job shows -----------------------------------------------------------------------
    def closed_job(self, spec: dict) -> tuple[QrelsGuard, str] | None:
        """(the qrels guard, the per-query policy) when the caller is a team and the job (its
        stored spec) runs on a closed dataset; None when nothing is to be hidden."""
        if self.sees_everything():
            return None
        folder = (spec.get("pipeline") or {}).get("dataset") or ""
        if not folder:
            return None
        resolved = Path(folder).resolve()
        for data_dir, (qrels, policy) in self.closed_datasets().items():
            if resolved == Path(data_dir).resolve():
                return self._guard(Path(qrels)), policy
        return None

    def _guard(self, qrels: Path) -> QrelsGuard:
        with self._lock:
            if qrels not in self._guards:
                self._guards[qrels] = QrelsGuard(qrels)
            return self._guards[qrels]

    def record(self, record):
        """A JobRecord as the caller may read it: error and warnings scrubbed on a closed dataset."""
        closed = self.closed_job(record.spec)
        if closed is None:
            return record
        guard, _ = closed
        return replace(record, error=guard.scrub(record.error), warnings=tuple(guard.scrub(w) for w in record.warnings))

    def event(self, spec: dict, event):
        closed = self.closed_job(spec)
        return event if closed is None else replace(event, message=closed[0].scrub(event.message))

    def result_file(self, spec: dict, name: str, path: Path) -> Path | bytes | None:
        """What the caller may read of a results file: the file (its path), other bytes, or nothing (None)."""
        closed = self.closed_job(spec)
        if closed is None:
            return path
        guard, policy = closed
        if name.endswith("results.json"):
            shown = disclosed_results(json.loads(path.read_text(encoding="utf-8")), policy)
            return guard.scrub(json.dumps(shown, indent=2)).encode("utf-8")
        if name.endswith(SERVED_RUN_SUFFIXES):
            return path
        return None
