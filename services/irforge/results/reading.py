"""Reading results.json back, checked once: every field a reader uses (compare, agreement, report,
bench's reuse, `Results.load`) has its type checked here, so a hand-edited or hostile file is
refused at the door, naming the file and the field (`results.json: metrics.nDCG@10: expected a
number, got "high"`), instead of being rendered, averaged or crashing halfway through a page.

JSON deeper than MAX_DEPTH is refused too: json.loads raises RecursionError on very deep input,
and a merely deep one would make the report's recursive walks do so later."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

from irforge.common.files import not_a_regular_file

MAX_DEPTH = 64          # results.json nests about 8 deep (a reranked hybrid retriever's encoder)
MAX_NAME = 1024         # a label, measure name, query id, dataset or split
MAX_TEXT = 8192         # a path, a date, a description

Check = Callable[[object, str], None]   # (value, its field path): raises _FieldError naming the path


class ResultsFileError(ValueError):
    """A results.json (or another JSON record irforge wrote) that cannot be read back: the message
    names the file and, where one is at fault, the field."""


def read_json_object(path: str | Path, what: str | None = None) -> dict:
    """The JSON object in `path`, its nesting bounded; `what` names it in errors (default: the path)."""
    path = Path(path)
    where = str(path) if what in (None, str(path)) else f"{what}: {path}"
    kind = not_a_regular_file(path)
    if kind:   # a FIFO would block the read, /dev/zero never end it
        raise ResultsFileError(f"{where}: is {kind}, not a regular file")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ResultsFileError(f"{where}: cannot be read: {getattr(error, 'strerror', None) or error}") from None
    try:
        record = json.loads(text)
    except json.JSONDecodeError as error:
        raise ResultsFileError(f"{where}: is not JSON (line {error.lineno}, column {error.colno}: {error.msg})") from None
    except RecursionError:
        raise ResultsFileError(f"{where}: nested deeper than {MAX_DEPTH} levels") from None
    if not isinstance(record, dict):
        raise ResultsFileError(f"{where}: holds a JSON {type(record).__name__}, not an object")
    field = _too_deep(record)
    if field is not None:
        raise ResultsFileError(f"{where}: {field}: nested deeper than {MAX_DEPTH} levels")
    return record


def read_results(path: str | Path, required: tuple[str, ...] = ("metrics",)) -> dict:
    """results.json of `irforge eval` or `eval-instructions`, every field it has that irforge reads checked."""
    record = read_json_object(path)
    check_results(record, str(path), required)
    return record


def check_results(record: dict, file: str, required: tuple[str, ...] = ("metrics",)) -> None:
    missing = [key for key in required if key not in record]
    if missing:
        raise ResultsFileError(f"{file}: not an irforge results.json: no {', '.join(missing)}")
    check_record(RESULTS, record, file)


def check_compared_system(record: dict, where: str) -> None:
    """A system of comparison.json, which carries its results.json's record: the same checks."""
    check_record(COMPARED_SYSTEM, record, where)


def check_record(check: Check, record, where: str) -> None:
    """`record` through `check` (built from the checks below): ResultsFileError naming `where` and the field."""
    try:
        check(record, "")
    except _FieldError as error:
        raise ResultsFileError(f"{where}: {error}") from None


# ---- the checks: each takes (value, field path) and raises _FieldError naming the path ---------------

class _FieldError(ValueError):
    pass


def _fail(where: str, expected: str, value) -> None:
    shown = json.dumps(value, ensure_ascii=False)
    raise _FieldError(f"{where or '(top)'}: expected {expected}, got {shown if len(shown) <= 60 else shown[:57] + '...'}")


def number(value, where: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        _fail(where, "a number", value)


def count(value, where: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        _fail(where, "a count (a whole number, 0 or more)", value)


def text(limit: int) -> Check:
    def check(value, where: str) -> None:
        if not isinstance(value, str):
            _fail(where, "a string", value)
        if len(value) > limit:
            raise _FieldError(f"{where}: longer than {limit} characters ({len(value)})")
    return check


name = text(MAX_NAME)
long_text = text(MAX_TEXT)


def optional(check: Check) -> Check:
    def checked(value, where: str) -> None:
        if value is not None:
            check(value, where)
    return checked


def seconds(value, where: str) -> None:
    """A timing: seconds, or seconds per step (the orchestrator's `steps_s`)."""
    if isinstance(value, dict):
        mapping(number)(value, where)
    elif value is not None:
        number(value, where)


def any_object(value, where: str) -> None:
    if not isinstance(value, dict):
        _fail(where, "an object", value)


def mapping(values: Check) -> Check:
    """An object whose keys are names and whose values all pass `values`."""
    def check(value, where: str) -> None:
        any_object(value, where)
        for key, inner in value.items():
            field = _join(where, key)
            name(key, field)
            values(inner, field)
    return check


def fields(spec: dict[str, Check]) -> Check:
    """An object whose keys listed in `spec`, where present, pass their check (others are not read)."""
    def check(value, where: str) -> None:
        any_object(value, where)
        for key, inner_check in spec.items():
            if key in value:
                inner_check(value[key], _join(where, key))
    return check


def list_of(items: Check) -> Check:
    def check(value, where: str) -> None:
        if not isinstance(value, list):
            _fail(where, "a list", value)
        for n, inner in enumerate(value):
            items(inner, f"{where}[{n}]")
    return check


def _join(where: str, key: str) -> str:
    shown = key if len(key) <= 60 else key[:57] + "..."
    return f"{where}.{shown}" if where else shown


COUNTS = ("holes", "judged", "from_store", "judge_calls", "unparsed", "failed", "queries")

# Every field of results.json that a reader of it uses (results/render.py, compare/, reports/, bench/).
RESULTS_FIELDS = {
    "kind": optional(name), "dataset": optional(name), "split": optional(name), "layout": optional(name),
    "mode": optional(name), "created_at": optional(name),
    "retriever": fields({"name": optional(name), "top_k": optional(count)}),
    "metrics": mapping(number),
    "per_query": mapping(mapping(number)),
    "evaluation": fields({"measures": list_of(name), "options": any_object, "queries_evaluated": count,
                          "identical_ids": optional(name), "identical_ids_dropped": count}),
    "data": fields({"path": optional(long_text), "corpus_fingerprint_sha256": optional(name), "qrels_sha256": optional(name),
                    "queries_in_split": count, "qrels_judgements": count,
                    "qrels_problems": fields({"unknown_queries": count, "unknown_documents": count})}),
    "counts": any_object,
    "timings": mapping(seconds),
    "versions": mapping(optional(long_text)),
    "files": fields({"run": name, "runs": mapping(mapping(name))}),
    "holes": optional(fields({"dataset": optional(name), "split": optional(name), "depth": count,
                              **{key: count for key in COUNTS}, "judge": any_object,
                              "metrics_before": mapping(number), "metrics_after": mapping(number)})),
    "dimensions": mapping(fields({"metrics": mapping(number), "queries": count})),
    "latency": optional(any_object),
}
RESULTS = fields(RESULTS_FIELDS)
# A system of comparison.json (compare/comparison.py's _describe): results.json's fields it copies, and its own.
COMPARED_SYSTEM = fields({**RESULTS_FIELDS, "label": name, "letter": name, "source": long_text,
                          "metrics_reported": mapping(number), "judged": mapping(number), "queries": count})


def _too_deep(value) -> str | None:
    """The path of the first value nested deeper than MAX_DEPTH, else None (a walk without recursion)."""
    stack: list[tuple[dict | list, str, int]] = [(value, "", 1)]
    while stack:
        current, where, depth = stack.pop()
        if depth > MAX_DEPTH:
            return where or "(top)"
        items = current.items() if isinstance(current, dict) else enumerate(current)
        for key, inner in items:   # only containers go on the stack: a million numbers cost no path each
            if isinstance(inner, (dict, list)):
                stack.append((inner, _join(where, str(key)) if isinstance(current, dict) else f"{where}[{key}]", depth + 1))
    return None
