"""trec_eval's numbers for a TREC run: `irforge metrics QRELS RUN` and `irforge.metrics`.

Both files are read (qrels in TREC or BEIR layout), the run evaluated with the evaluator core,
and the one Results comes back: `metrics` (aggregate), `per_query`, the `measures` evaluated, the
run's tag, the qrels layout read and the evaluation options. What the user should know about the
input (the layout read, qrels queries the run has no ranking for) goes to `notes`, a callable
taking one line (the command prints it to stderr; the Python API stays quiet).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from irforge.app.errors import UsageError
from irforge.data import DataFormatError, Qrels, Run
from irforge.data.qrels_layout import QrelsFile, looks_like_qrels, looks_like_run, read_qrels_file
from irforge.evaluator import EvaluationOptions, Evaluator
from irforge.evaluator.measures import DEFAULT_MEASURES
from irforge.results import Results
from irforge.runs import read_run_file


def listed(value: str | Path | Iterable | None) -> tuple | None:
    """A keyword that takes one value or several (as a repeatable flag does) as a tuple; None stays None."""
    if value is None:
        return None
    if isinstance(value, (str, Path)):
        return (value,)
    return tuple(value)


@dataclass(frozen=True)
class MetricsOptions:
    """`irforge metrics`' flags, typed: -m (measures), -c (complete), -M (max_docs), -l
    (relevance_level), --keep-identical-ids. (-q only changes what the command prints.)"""
    measures: tuple[str, ...] | None = None      # None: eval's default measures (-m official: trec_eval's set)
    complete: bool = False
    max_docs: int = 0                            # 0: every document
    relevance_level: int = 1
    keep_identical_ids: bool = False

    def check(self) -> None:
        """UsageError for a bad option, naming its flag (before the files are read)."""
        if not isinstance(self.max_docs, int) or self.max_docs < 0:
            raise UsageError(f"-M must be 0 (every document) or more, got {self.max_docs}")
        if not isinstance(self.relevance_level, int) or self.relevance_level < 1:
            raise UsageError(f"-l must be at least 1, got {self.relevance_level}")

    @property
    def measure_list(self) -> list[str]:
        """The measures asked for; when none were, `irforge eval`'s defaults, so the command shows
        eval's numbers for eval's run (trec_eval's own default set is `-m official`)."""
        return list(self.measures) if self.measures else list(DEFAULT_MEASURES)

    def evaluation(self) -> EvaluationOptions:
        return EvaluationOptions(drop_identical_ids=not self.keep_identical_ids, complete=self.complete,
                                 relevance_level=self.relevance_level, max_docs_per_query=self.max_docs)


def read_qrels(qrels_path: str | Path, run_path: str | Path) -> QrelsFile:
    """The qrels in either layout; when they cannot be read and the two files look swapped, the
    error says so (a run given as QRELS fails on its first line, which alone says nothing of the order)."""
    qrels_path, run_path = Path(qrels_path), Path(run_path)
    try:
        return read_qrels_file(qrels_path)
    except DataFormatError as error:
        if looks_like_run(qrels_path) and looks_like_qrels(run_path):
            raise DataFormatError(error.path, f"{error.reason}; {qrels_path} looks like a run and {run_path} like qrels: "
                                              "were they given in the wrong order? The order is: irforge metrics QRELS RUN",
                                  error.line) from None
        raise


def unranked_note(qrels: Qrels, run: Run, complete: bool) -> str | None:
    """What happens to qrels queries the run has no ranking for, which changes the averages:
    trec_eval leaves them out, -c (and so `irforge eval`) scores them 0. None when there are none."""
    missing = sorted(set(qrels) - set(run))
    if not missing:
        return None
    one = len(missing) == 1
    examples = ", ".join(repr(q) for q in missing[:3]) + (", ..." if len(missing) > 3 else "")
    note = (f"{len(missing)} of {len(qrels)} qrels queries {'has' if one else 'have'} no ranking in the run "
            f"({'' if one else 'e.g. '}{examples}); ")
    subject, object_ = ("it is", "it") if one else ("they are", "them")
    if complete:
        return note + f"-c counts {object_} as 0"
    return note + f"{subject} left out of the averages (trec_eval's default); -c counts {object_} as 0, as irforge eval does"


def measure(qrels: str | Path, run: str | Path, *, measures: str | Iterable[str] | None = None, complete: bool = False,
            max_docs: int = 0, relevance_level: int = 1, keep_identical_ids: bool = False,
            notes: Callable[[str], None] | None = None) -> Results:
    """`irforge metrics QRELS RUN`: check the options (UsageError before the files are read),
    read both files, evaluate; returns the Results (`metrics`, `per_query`, `measures`, `run_tag`,
    `qrels_layout`, `options`)."""
    options = MetricsOptions(measures=listed(measures), complete=complete, max_docs=max_docs,
                             relevance_level=relevance_level, keep_identical_ids=keep_identical_ids)
    return measure_with(qrels, run, options, notes)


def measure_with(qrels: str | Path, run: str | Path, options: MetricsOptions,
                 notes: Callable[[str], None] | None = None) -> Results:
    """`measure` over a MetricsOptions."""
    options.check()
    tell = notes or (lambda line: None)
    qrels_file = read_qrels(qrels, run)
    tell(f"read {qrels} as {qrels_file.layout}")
    trec_run = read_run_file(run)
    evaluation = options.evaluation()
    result = Evaluator().evaluate(qrels_file.qrels, trec_run.run, options.measure_list, evaluation)
    if note := unranked_note(qrels_file.qrels, trec_run.run, options.complete):
        tell(note)
    return Results({"metrics": dict(result.aggregate), "per_query": {q: dict(v) for q, v in result.per_query.items()},
                    "measures": list(result.measure_names), "run_tag": trec_run.producer,
                    "qrels_layout": qrels_file.layout, "options": evaluation.as_dict()})
