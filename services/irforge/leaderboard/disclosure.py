"""What a team is shown of a job on a closed dataset: aggregate metrics, per-query values only as
the dataset's policy says, and never a line of its qrels, whichever door it asks through.

- results.json: `per_query` withheld (removed) or coarsened (each value floored to its 0.1 bucket:
  0.63 -> 0.6; 1.0 stays 1.0), `data.qrels_problems.examples` (qrels lines naming unknown
  queries or documents) and `holes` removed. Any other results file but the job's runs
  (qrels.judged.tsv, a judged layer's provenance) is not served at all.
- Messages (a job's error and warnings, its events, a refusal, the service's log lines) are
  scrubbed line by line: a line naming a judged query id together with a document id of the
  corpus is replaced, whatever put it there (a checker quoting a line, an evaluator naming a
  pair); see PairGuard for why any document, not only the judged ones.
- A team's own job spec may not name a path inside the leaderboard's folder (the registered
  copies, their qrels, other teams' submitted files): a team reaches a closed dataset only
  through a submission, where the daily limit counts it.
Operators see everything: they hold the qrels anyway.
"""

from __future__ import annotations

import json
import logging
import math
import re
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from irforge.accounts.identity import Identity
from irforge.orchestrator.errors import JobSpecError
from irforge.orchestrator.owners import caller

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


class PairGuard:
    """Tells whether a line names a judged query of a closed dataset together with a document of
    its corpus. Any document, not only the judged ones: a line withheld only when its pair is
    judged would answer "is this pair relevant?" to whoever can put a pair in a message (a
    malformed line of a submitted run, quoted back). Both sets are what a team knows anyway
    (the queries it answers, the corpus it ranks), so what is withheld tells nothing."""

    def __init__(self, data_dir: Path, split: str):
        from irforge.data import BeirDataset

        dataset = BeirDataset.open(data_dir)
        self.queries = frozenset(dataset.qrels(split))
        self.documents = frozenset(document.doc_id for document in dataset.corpus())

    def quotes(self, line: str) -> bool:
        tokens = set(_TOKEN.findall(line))
        return not tokens.isdisjoint(self.queries) and not tokens.isdisjoint(self.documents)

    def scrub(self, text: str) -> str:
        if not text:
            return text
        return "\n".join(WITHHELD_LINE if self.quotes(line) else line for line in text.split("\n"))


class Disclosure:
    """The orchestrator's front door asks this before answering a caller (orchestrator/server.py):
    which jobs are on a closed dataset, and what of them the caller may read."""

    def __init__(self, leaderboard_root: Path, closed_datasets: Callable[[], dict[str, tuple[str, str]]]):
        """closed_datasets() -> {registered data folder: (its split, per-query policy)}."""
        self.root = Path(leaderboard_root)
        self.closed_datasets = closed_datasets
        self._guards: dict[tuple[str, str], PairGuard] = {}
        self._lock = threading.Lock()

    # -- who asks -----------------------------------------------------------------------------
    def caller(self) -> Identity:
        """Who asks: the front door's caller (the orchestrator's rule: none bound, the local operator)."""
        return caller()

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
    def closed_job(self, spec: dict) -> tuple[PairGuard, str] | None:
        """(the qrels guard, the per-query policy) when the caller is a team and the job (its
        stored spec) runs on a closed dataset; None when nothing is to be hidden."""
        if self.sees_everything():
            return None
        folder = (spec.get("pipeline") or {}).get("dataset") or ""
        if not folder:
            return None
        resolved = Path(folder).resolve()
        for data_dir, (split, policy) in self.closed_datasets().items():
            if resolved == Path(data_dir).resolve():
                return self._guard(data_dir, split), policy
        return None

    def scrub_all(self, text: str) -> str:
        """`text` with every line naming a judged pair of any closed dataset withheld."""
        for data_dir, (split, _) in self.closed_datasets().items():
            text = self._guard(data_dir, split).scrub(text)
        return text

    def _guard(self, data_dir: str, split: str) -> PairGuard:
        with self._lock:   # a registered copy never changes: read once per process
            if (data_dir, split) not in self._guards:
                self._guards[(data_dir, split)] = PairGuard(Path(data_dir), split)
            return self._guards[(data_dir, split)]

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


class LogScrubber(logging.Filter):
    """A log handler's filter: a line naming a judged pair of any closed dataset is withheld, so
    the service's logs (which `irforge serve` keeps under the state dir, and a cluster ships
    elsewhere) never carry one, whatever logged it (a job's failure, a traceback)."""

    def __init__(self, disclosure: Disclosure):
        super().__init__()
        self.disclosure = disclosure

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        scrubbed = self.disclosure.scrub_all(text)
        if scrubbed != text:
            record.msg, record.args = scrubbed, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.disclosure.scrub_all(record.exc_text)
        return True


def scrub_logs(disclosure: Disclosure, logger: logging.Logger | None = None) -> LogScrubber:
    """Install a LogScrubber on every handler of `logger` (the root logger's: where the service's
    logging is configured, irforge.common.logs)."""
    scrubber = LogScrubber(disclosure)
    for handler in (logger or logging.getLogger()).handlers:
        handler.addFilter(scrubber)
    return scrubber
