"""The leaderboard's pages over app/leaderboard.py: `/` the board (filters and sort as GET
parameters, so a view is a link), and `/systems/<team>/<system>` a system's page (its
per-dataset results and tests; for one's own systems, or an operator, also its configuration,
per-query values where the dataset's policy shows them, and difference plots against another).

Public is what the Board holds: aggregates and p-values. A system's submissions, jobs and
per-query values are read through the use cases as the bound caller, so another team's answer
SubmissionNotFound/JobNotFound and are simply not shown."""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import quote, urlencode

from irforge.leaderboard.board import CATEGORIES, Board, build_board, choices, resolve_row, sort_board
from irforge.leaderboard.board_render import board_rows, board_table
from irforge.reports.markup import Cell, Markup, cell, esc, join, key_value_table, p_value, signed, table, tag
from irforge.reports.plots import difference_plot
from irforge.web.pages import paragraph

SORTS = ("rank", "mean", "team", "system", "category")


class BadQuery(ValueError):
    """A filter or sort the board cannot take (the message says which): HTTP 400."""


def system_href(team: str, system: str, category: str | None = None, **query) -> str:
    path = f"/systems/{quote(team, safe='')}/{quote(system, safe='')}"
    params = {"category": category, **query}
    params = {k: v for k, v in params.items() if v}
    return path + (f"?{urlencode(params)}" if params else "")


def board_filters(params: Mapping[str, str], datasets: list[str]) -> dict:
    """GET parameters -> build_board's keywords (empty ones left out)."""
    chosen = [d for d in datasets if d] or None
    return {"category": params.get("category") or None, "datasets": chosen, "language": params.get("language") or None,
            "task": params.get("task") or None, "since": params.get("since") or None, "until": params.get("until") or None,
            "baseline": params.get("baseline") or None}


def leaderboard_body(leaderboard, params: Mapping[str, str], datasets: list[str]) -> Markup:
    if leaderboard is None:
        return paragraph("This platform has no leaderboard (the orchestrator runs without one).", class_="note")
    entries = leaderboard.entries()
    options = choices(entries)
    filters = board_filters(params, datasets)
    try:
        board = build_board(entries, **filters)
        board = sort_board(board, params.get("sort") or "rank",
                           {"asc": False, "desc": True}.get(params.get("order") or "", None))
    except ValueError as error:     # BoardError: an unknown dataset, baseline, date or sort
        raise BadQuery(str(error)) from None
    parts = [filter_form(params, datasets, options, board)]
    if not board.rows:
        parts.append(paragraph("No done submission matches these filters.", class_="note"))
    parts.append(board_html(board))
    parts.append(tag("h2", "Datasets"))
    parts.append(datasets_table(leaderboard))
    return join(parts)


def board_html(board: Board) -> Markup:
    """rank's cells (board_rows), the system's name a link to its page."""
    rows = board_rows(board)
    for row, cells in zip(board.rows, rows):
        label = tag("a", row.system, href=system_href(row.team, row.system, row.category))
        if row.key == board.baseline:
            label = label + " " + tag("span", "(baseline)", class_="baseline")   # (left to right: Markup + str escapes the str)
        cells[3] = Cell(label, row.system)
    return board_table(board, caption(board), rows)


def caption(board: Board) -> str:
    kept = {k: v for k, v in board.filters.items() if v}
    return "Systems ranked by " + (f"their mean {board.mean_metric}" if board.mean_metric else "dataset") + (
        "; filters: " + ", ".join(f"{k} {', '.join(v) if isinstance(v, list) else v}" for k, v in kept.items()) if kept else "")


def filter_form(params: Mapping[str, str], datasets: list[str], options: dict, board: Board) -> Markup:
    def select(name: str, values, chosen, empty: str = "any", multiple: bool = False) -> Markup:
        items = [] if multiple else [tag("option", empty, value="")]
        items += [tag("option", v, value=v, selected="" if (v in chosen if multiple else v == chosen) else None) for v in values]
        return tag("label", join([name, select_element(name, join(items), multiple)]))

    def date(name: str) -> Markup:
        return tag("label", join([name, Markup(f'<input type="date" name="{esc(name)}" value="{esc(params.get(name, ""))}">')]))

    sorts = [*SORTS, *options["datasets"]]
    fields = [select("dataset", options["datasets"], datasets, multiple=True),
              select("category", CATEGORIES, params.get("category", "")),
              select("language", options["languages"], params.get("language", "")),
              select("task", options["tasks"], params.get("task", "")), date("since"), date("until"),
              select("baseline", [r.key for r in board.rows], params.get("baseline", ""), empty="none"),
              select("sort", sorts, params.get("sort", "rank"), empty="rank"),
              select("order", ("desc", "asc"), params.get("order", ""), empty="default"),
              tag("button", "Show", type="submit"), tag("a", "reset", href="/")]
    return tag("form", join(fields), method="get", action="/", class_="filters")


def select_element(name: str, options: Markup, multiple: bool = False) -> Markup:
    # (markup's tag() takes the element's name as its first argument: a `name` attribute is written here)
    return Markup(f'<select name="{esc(name)}"{" multiple" if multiple else ""}>') + options + Markup("</select>")


def datasets_table(leaderboard) -> Markup:
    rows = [[d.name, d.task, d.language, d.main_metric, "closed" if d.closed else "open", d.per_query, d.queries,
             d.documents, Cell(tag("code", d.candidates_sha256[:16] + "…", title=d.candidates_sha256))]
            for d in leaderboard.list_datasets()]
    return table("datasets", ["dataset", "task", "language", "main metric", "qrels", "per-query values", "queries",
                              "documents", "BM25 top-100 sha256"], rows)


# ---- a system's page -------------------------------------------------------------------------------

def system_body(leaderboard, orchestrator, team: str, system: str, params: Mapping[str, str]) -> Markup:
    if leaderboard is None:
        raise LookupError("no leaderboard")
    entries = leaderboard.entries()
    category = params.get("category") or None
    mine = [e for e in entries if e.team == team and e.system == system and (category is None or e.category == category)]
    if not mine:
        raise LookupError(f"{team}/{system}")
    category = category or sorted({e.category for e in mine})[0]
    key = f"{team}/{system}/{category}"
    others = sorted({f"{e.team}/{e.system}/{e.category}" for e in entries if e.category == category} - {key})
    against = params.get("against") or None
    try:
        board = build_board([e for e in entries if e.category == category], baseline=against)
        against_key = resolve_row(board, against) if against else None
    except ValueError as error:
        raise BadQuery(str(error)) from None
    row = board.row(key)
    parts = [paragraph(f"Team {team}, category {category}. ", tag("a", "Back to the leaderboard", href="/"))]
    parts.append(tag("h2", "Results per dataset"))
    parts.append(results_table(board, row, against_key))
    parts.append(against_form(team, system, category, others, against))
    shown = [leaderboard_submission(leaderboard, board, row, d) for d in row.scores]
    shown = [s for s in shown if s is not None]
    if shown:   # the caller's own system (or an operator): what was submitted, how it ran
        parts.append(tag("h2", "Configuration"))
        for status in shown:
            parts.append(submission_block(orchestrator, status))
        parts.append(tag("h2", "Per query"))
        for status in shown:
            parts.append(per_query_block(status))
    else:
        parts.append(paragraph("Another team's system: its configuration and per-query values are theirs; the "
                               "leaderboard shows its aggregates and tests.", class_="note"))
    if against_key:
        parts.append(tag("h2", f"Against {against_key}"))
        parts.append(difference_block(leaderboard, board, row, board.row(against_key)))
    return join(parts)


def results_table(board: Board, row, against_key: str | None) -> Markup:
    rows = []
    for column in board.columns:
        score = row.scores.get(column.dataset)
        if score is None:
            continue
        versus = score.vs_baseline
        rows.append([column.dataset, column.main_metric, cell(score.value), cell(score.judged_at_10),
                     "yes" if score.best else "", ",".join(score.better_than) or "—",
                     signed(score.vs_best.difference) if score.vs_best else "—",
                     p_value(score.vs_best.p_corrected) if score.vs_best else "—",
                     signed(versus.difference) if versus else "—", p_value(versus.p_corrected) if versus else "—",
                     score.created])
    return table("system-results", ["dataset", "main metric", "value", "Judged@10", "best", "better than",
                                    "vs best Δ", "vs best p", f"vs {against_key or 'other'} Δ",
                                    f"vs {against_key or 'other'} p", "submitted"], rows,
                 caption=f"Letter {row.letter}; p-values Holm-corrected within each dataset's column")


def against_form(team: str, system: str, category: str, others: list[str], against: str | None) -> Markup:
    options = [tag("option", "choose a system", value="")]
    options += [tag("option", o, value=o, selected="" if o == against else None) for o in others]
    return tag("form", join([Markup(f'<input type="hidden" name="category" value="{esc(category)}">'),
                             tag("label", join(["Compare against", select_element("against", join(options))])),
                             tag("button", "Compare", type="submit")]),
               method="get", action=system_href(team, system), class_="filters")


def leaderboard_submission(leaderboard, board: Board, row, dataset: str):
    """The SubmissionStatus behind a cell, if the caller may read it (own, or an operator); else None."""
    from irforge.leaderboard.errors import SubmissionNotFound

    try:
        return leaderboard.submission(row.scores[dataset].submission_id)
    except SubmissionNotFound:
        return None


def submission_block(orchestrator, status) -> Markup:
    record = status.record
    facts = {"dataset": record.dataset, "kind": record.kind, "submitted": record.created, "sha256": record.fingerprint,
             "bytes": record.size, "job": record.job_id}
    parts = [tag("h3", f"{record.dataset}: submission {record.submission_id}"), key_value_table("submission", facts)]
    if record.job_id:
        parts.append(paragraph(tag("a", "its job", href=f"/jobs/{quote(record.job_id, safe='')}")))
        spec = orchestrator.get(record.job_id).spec   # the caller's own job (JobNotFound otherwise)
        parts.append(key_value_table("configuration", configuration(spec.get("pipeline") or {})))
    return join(parts)


def configuration(pipeline: dict) -> dict:
    """The settings that made this system: those differing from irforge's defaults (a reader
    compares systems by them; forty default lines would hide them), plus its retriever unless it
    was a run file. Server paths are shown by their last part only."""
    from pathlib import PurePath

    from irforge.orchestrator.spec import JobSpec
    from irforge.reports.markup import flatten

    defaults = dict(flatten(JobSpec.of(dataset="-").as_dict()["pipeline"]))
    ran = bool((pipeline.get("given") or {}).get("runs"))
    shown = {}
    for key, value in flatten(pipeline):
        if key == "dataset" and value:
            value = PurePath(str(value)).name
        elif key == "given.runs" and isinstance(value, list):
            value = [PurePath(str(p)).name for p in value]
        if key in ("dataset", "split") or (key == "retriever" and not ran) or value != defaults.get(key):
            shown[key] = value
    if ran:
        shown["given.runs"] = [f"{name} (the submitted run file: no retrieval ran on the server)" for name in shown["given.runs"]]
    return shown


def per_query_block(status) -> Markup:
    record = status.record
    if not status.per_query:
        return paragraph(f"{record.dataset}: per-query values are withheld by the dataset's policy (closed-book).",
                         class_="note")
    rows = [[query, cell(value)] for query, value in sorted(status.per_query.items())]
    return table(f"per-query-{record.dataset}", ["query", status.main_metric], rows,
                 caption=f"{record.dataset}: {status.main_metric} per query ({len(rows)} queries)")


def difference_block(leaderboard, board: Board, row, other) -> Markup:
    """Per-query difference plots where the caller may read both systems' per-query values."""
    parts = []
    for dataset in row.scores:
        if dataset not in other.scores:
            continue
        mine = leaderboard_submission(leaderboard, board, row, dataset)
        theirs = leaderboard_submission(leaderboard, board, other, dataset)
        if mine is None or theirs is None or not mine.per_query or not theirs.per_query:
            parts.append(paragraph(f"{dataset}: no per-query plot (per-query values withheld by the dataset's policy, "
                                   "or the other system is another team's).", class_="note"))
            continue
        shared = sorted(set(mine.per_query) & set(theirs.per_query))
        differences = [mine.per_query[q] - theirs.per_query[q] for q in shared]
        wins = sum(d > 0 for d in differences)
        losses = sum(d < 0 for d in differences)
        parts.append(difference_plot(differences, f"{mine.main_metric} ({dataset})", row.key, other.key, wins,
                                     len(differences) - wins - losses, losses))
    return tag("div", join(parts), class_="charts") if parts else paragraph("No dataset in common.", class_="note")
