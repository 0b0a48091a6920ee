"""A run file as the system (`irforge eval --run FILE`): each query's ranking is the file's, cut to
--top-k by the tie rule, so the run is scored exactly as irforge's own retrievers' runs are and
results.json has the same fields. Nothing is indexed or retrieved, so no latency is measured:
results.json says so instead of giving none.

What does not line up with the split is counted, never dropped in silence: queries of the run
that the split does not evaluate (another split's, or ids that differ in spelling), and queries of
the split the run has no ranking for (each scores 0, as trec_eval -c scores them).
"""

from __future__ import annotations

from irforge.data import BeirDataset
from irforge.data.types import Query, Run
from irforge.ranking import Ranking
from irforge.runs import GivenRun

EXAMPLES = 5
LATENCY_ABSENT = ("the ranking was read from a run file, not retrieved here: the time the system that made it took "
                  "per query is not known to irforge")


class GivenRunRetriever:
    name = "given"
    latency_absent = LATENCY_ABSENT   # irforge.pipeline.latency.latency_of records this instead of figures

    def __init__(self, given: GivenRun):
        self.given = given
        self._asked: list[str] = []

    def prepare(self, dataset: BeirDataset, fingerprint: str, tracker) -> None:
        """Nothing to build: the eval job notes which judged documents exist by streaming the corpus."""

    def retrieve(self, queries: list[Query], k: int) -> Run:
        run = self.given.run
        self._asked = [query.query_id for query in queries]
        return {query_id: _top(run[query_id], k) for query_id in self._asked if query_id in run}

    def describe(self) -> dict:
        given = self.given
        return {"name": self.name, "run_file": given.path, "format": given.format, "sha256": given.sha256,
                "producer": given.producer or None, "queries": given.queries, "entries": given.entries}

    def counts(self) -> dict:
        asked = set(self._asked)
        outside = sorted(query_id for query_id in self.given.run if query_id not in asked)
        missing = [query_id for query_id in self._asked if query_id not in self.given.run]
        return {"run_queries": self.given.queries, "run_entries": self.given.entries,
                "run_queries_not_in_split": len(outside), "run_queries_not_in_split_examples": outside[:EXAMPLES],
                "split_queries_not_in_run": len(missing), "split_queries_not_in_run_examples": missing[:EXAMPLES]}


def _top(scores: dict[str, float], k: int) -> Ranking:
    """The query's k best documents by the tie rule (score descending, then doc id descending)."""
    return Ranking.of(scores).head(k)
