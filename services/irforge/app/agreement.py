"""Do two label sets (or two collections) rank the same systems the same way? `irforge agreement`
and `irforge.agreement`.

Three ways to give the systems' scores under A (the reference: human labels, the original
collection) and under B:
  runs with qrels_a and qrels_b   the same TREC runs evaluated under two label sets (a set may be
                                  several files: human qrels plus a judged layer such as qrels.judged.tsv)
  a and b                         results of the same systems, in the same order, on two
                                  collections (an original and its generated or QC-corrected version)
  table                           a TSV/CSV: system, score under A, score under B

The use case returns the report (`irforge agreement --format json`'s content); errors are
AgreementError or ComparisonError (ValueErrors) naming the flag or input.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from irforge.compare.agreement import AgreementError, AgreementSettings, agreement as rank_agreement

DEFAULT_MEASURE = "nDCG@10"


@dataclass(frozen=True)
class AgreementOptions:
    """`irforge agreement`'s flags, typed (--format only changes what the command prints)."""
    runs: tuple[str | Path, ...] = ()               # RUN...
    qrels_a: tuple[str | Path, ...] = ()            # --qrels-a FILE (repeatable: layers)
    qrels_b: tuple[str | Path, ...] = ()            # --qrels-b FILE
    a: tuple[str | Path, ...] = ()                  # --a RESULTS...
    b: tuple[str | Path, ...] = ()                  # --b RESULTS...
    table: str | Path | None = None                 # --table FILE
    lower_is_better: bool = False                   # --lower-is-better (--table only)
    measure: str = DEFAULT_MEASURE                  # -m/--measure
    keep_identical_ids: bool = False                # --keep-identical-ids (RUN inputs)
    permutations: int = AgreementSettings.permutations
    seed: int = AgreementSettings.seed

    def form(self) -> str:
        """'runs', 'results' or 'table': the one input form given (AgreementError otherwise)."""
        forms = {"runs": bool(self.runs or self.qrels_a or self.qrels_b), "results": bool(self.a or self.b),
                 "table": self.table is not None}
        if self.lower_is_better and not forms["table"]:
            raise AgreementError("--lower-is-better applies to --table only (measures from runs and results are scores)")
        if sum(forms.values()) != 1:
            raise AgreementError("give one of: RUN... with --qrels-a and --qrels-b; --a RESULTS... --b RESULTS...; "
                                 "or --table FILE")
        if self.permutations < 100:
            raise AgreementError(f"--permutations must be at least 100, got {self.permutations}")
        return next(name for name, given in forms.items() if given)


def agreement(runs: Iterable[str | Path] = (), *, qrels_a: str | Path | Iterable[str | Path] | None = None,
              qrels_b: str | Path | Iterable[str | Path] | None = None,
              a: str | Path | Iterable[str | Path] | None = None, b: str | Path | Iterable[str | Path] | None = None,
              table: str | Path | None = None, lower_is_better: bool = False, measure: str = DEFAULT_MEASURE,
              keep_identical_ids: bool = False, permutations: int = AgreementSettings.permutations,
              seed: int = AgreementSettings.seed) -> dict:
    """`irforge agreement`: the systems' scores under A and B (from runs and two label sets, from
    results, or from a table), ranked and compared; returns the report (Kendall's tau, Spearman's
    rho, tau_AP with p-values, each system's scores and ranks)."""
    # app.metrics and compare.systems here, not at the top: `irforge --help` reads DEFAULT_MEASURE.
    from irforge.app.metrics import listed

    options = AgreementOptions(runs=tuple(runs), qrels_a=_paths(qrels_a), qrels_b=_paths(qrels_b),
                               a=listed(a) or (), b=listed(b) or (), table=Path(table) if table is not None else None, lower_is_better=lower_is_better,
                               measure=measure, keep_identical_ids=keep_identical_ids, permutations=permutations,
                               seed=seed)
    return agreement_with(options)


def _paths(value) -> tuple[Path, ...]:
    from irforge.app.metrics import listed

    return tuple(map(Path, listed(value) or ()))


def agreement_with(options: AgreementOptions) -> dict:
    """`agreement` over an AgreementOptions."""
    form = options.form()
    if form == "runs":
        systems, a, b, source = _from_runs(options)
    elif form == "results":
        systems, a, b, source = _from_results(options)
    else:
        systems, a, b, source = _from_table(Path(options.table), options.lower_is_better)
    result = rank_agreement(systems, a, b, AgreementSettings(options.permutations, options.seed),
                            lower_is_better=options.lower_is_better)
    return {"kind": "agreement", "measure": None if form == "table" else options.measure, "source": source, **result}


def _from_runs(options: AgreementOptions) -> tuple[list[str], list[float], list[float], str]:
    from irforge.compare.systems import load_run

    if not (options.runs and options.qrels_a and options.qrels_b):
        raise AgreementError("RUN inputs need both --qrels-a and --qrels-b")
    label_sets = {side: merged_qrels(files) for side, files in (("A", options.qrels_a), ("B", options.qrels_b))}
    scored = {side: [load_run(run, qrels, side, [options.measure], options.keep_identical_ids) for run in options.runs]
              for side, qrels in label_sets.items()}
    names = [system.label for system in scored["A"]]
    scores = {side: [system.record["metrics"][options.measure] for system in systems] for side, systems in scored.items()}
    source = f"A: {' + '.join(map(str, options.qrels_a))}; B: {' + '.join(map(str, options.qrels_b))}"
    return names, scores["A"], scores["B"], source


def merged_qrels(files: Iterable[str | Path]):
    """A label set given as several files: the first, then layers whose pairs must be new or agree."""
    from irforge.data.qrels_layout import read_qrels_file

    merged: dict[str, dict[str, int]] = {}
    for path in map(Path, files):
        for query_id, judged in read_qrels_file(path).qrels.items():
            target = merged.setdefault(query_id, {})
            for doc_id, label in judged.items():
                if target.get(doc_id, label) != label:
                    raise AgreementError(f"{path}: ({query_id}, {doc_id}) is labelled {label} here and {target[doc_id]} "
                                         "in an earlier file of the same label set")
                target[doc_id] = label
    return merged


def _from_results(options: AgreementOptions) -> tuple[list[str], list[float], list[float], str]:
    if not (options.a and options.b):
        raise AgreementError("--a and --b go together")
    if len(options.a) != len(options.b):
        raise AgreementError(f"--a has {len(options.a)} results and --b {len(options.b)}: the same systems, same order")
    from irforge.compare.systems import load_results

    sides = {}
    for side, paths in (("A", options.a), ("B", options.b)):
        sides[side] = [load_results(path) for path in paths]
        for system in sides[side]:
            if options.measure not in system.record.get("metrics", {}):
                raise AgreementError(f"{system.source}: no {options.measure} in its metrics")
    names = [s.label for s in sides["A"]]
    return (names, [s.record["metrics"][options.measure] for s in sides["A"]],
            [s.record["metrics"][options.measure] for s in sides["B"]], "results under A vs under B")


def _from_table(path: Path, lower_is_better: bool) -> tuple[list[str], list[float], list[float], str]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as error:
        raise AgreementError(f"{path}: cannot be read ({error.strerror})") from None
    rows = [row for row in csv.reader(text.splitlines(), delimiter="\t" if "\t" in text else ",") if row and row[0].strip()]
    if len(rows) < 2 or len(rows[0]) != 3:
        raise AgreementError(f"{path}: expected a header and rows of three columns (system, A, B)")
    names, a, b = [], [], []
    for number, row in enumerate(rows[1:], start=2):
        if len(row) != 3:
            raise AgreementError(f"{path}:{number}: expected 3 columns, got {len(row)}")
        try:
            values = [float(row[1]), float(row[2])]
        except ValueError:
            raise AgreementError(f"{path}:{number}: {row[1]!r} or {row[2]!r} is not a number") from None
        names.append(row[0].strip())
        a.append(values[0])
        b.append(values[1])
    return names, a, b, f"{path} ({'ranks' if lower_is_better else 'scores'}; columns {rows[0][1]!r} and {rows[0][2]!r})"
