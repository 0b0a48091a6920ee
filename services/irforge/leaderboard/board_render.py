"""A Board as the CLI prints it (text or Markdown: `render_board_text`) and as HTML cells and a
table for the web page and the report (`board_rows`, `board_table`, reports/markup.py's cells), so
both fronts show the same columns, marks and legend. Labels come from teams: every one is one
cell of its format (irforge.results.cells; markup escapes)."""

from __future__ import annotations

from irforge.compare.render import CORRECTION_NAMES, TEST_NAMES
from irforge.leaderboard.board import Board, Row, Score
from irforge.reports.markup import MISSING, Cell, Markup, esc, join, metric, p_value, tag, table
from irforge.results.cells import markdown_cell, text_cell

TABLE_NAME = "leaderboard"


def board_headers(board: Board) -> list[str]:
    headers = ["rank", "", "team", "system", "category"]
    for column in board.columns:
        headers += [f"{column.dataset} {column.main_metric}", f"{column.dataset} Judged@10"]
    if board.mean_metric:
        confidence = round(board.settings.get("confidence", 0.95) * 100)
        headers += [f"mean {board.mean_metric}", f"{confidence}% CI", "rank range", "vs next"]
    return headers


def legend(board: Board, best: str = "* marks the column's best") -> str:
    s = board.settings
    baseline = f" and against the baseline {board.baseline}" if board.baseline else ""
    parts = [f"Per dataset: {best}; letters: significantly better than that row ({TEST_NAMES[s['test']]} "
             f"over the dataset's queries, against the column's best{baseline}, {CORRECTION_NAMES[s['correction']]} "
             f"correction per column, alpha {s['alpha']:g})."]
    if board.mean_metric:
        parts.append(f"Mean: over the {len(board.columns)} datasets shown; CI and rank range from {s['resamples']} "
                     f"bootstrap resamples of each dataset's queries (seed {s['seed']}); vs next: > the row below is "
                     f"significantly lower ({CORRECTION_NAMES[s['correction']]} over neighbouring pairs), = not told apart.")
    return " ".join(parts + list(board.notes))


# ---- text and Markdown (the CLI) --------------------------------------------------------------------

def render_board_text(board: Board, fmt: str = "text") -> str:
    """The board as an aligned text table (`fmt="text"`) or a GFM table (`"markdown"`), with its legend."""
    if fmt not in ("text", "markdown"):
        raise ValueError(f"unknown format {fmt!r}: text or markdown")
    one = text_cell if fmt == "text" else markdown_cell
    headers = [one(h) for h in board_headers(board)]
    rows = [[one(value) for value in _plain_row(board, row)] for row in board.rows]
    if fmt == "markdown":
        lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
    else:
        widths = [max(len(h), *(len(r[n]) for r in rows)) if rows else len(h) for n, h in enumerate(headers)]
        lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip()]
        lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    if not board.rows:
        lines.append("(no done submission matches the filters)")
    lines += [""] + [one(r.key) + ": " + one(r.note) for r in board.rows if r.note]
    return "\n".join(lines + ["", legend(board) if fmt == "text" else markdown_cell(legend(board))]).replace("\n\n\n", "\n\n") + "\n"


def _plain_row(board: Board, row: Row) -> list[str]:
    values = [str(row.rank) if row.rank is not None else MISSING, row.letter, row.team,
              row.system + (" (baseline)" if row.key == board.baseline else ""), row.category]
    for column in board.columns:
        score = row.scores.get(column.dataset)
        values += [_plain_score(score), metric(score.judged_at_10) if score else MISSING]
    if board.mean_metric:
        values += [metric(row.mean), _interval(row.mean_ci), _ranks(row.rank_interval), _next(board, row)]
    return values


def _plain_score(score: Score | None) -> str:
    if score is None:
        return MISSING
    return metric(score.value) + ("*" if score.best else "") + (f" [{','.join(score.better_than)}]" if score.better_than else "")


def _interval(ci) -> str:
    return f"[{metric(ci[0])}, {metric(ci[1])}]" if ci else MISSING


def _ranks(interval) -> str:
    if not interval:
        return MISSING
    return str(interval[0]) if interval[0] == interval[1] else f"{interval[0]}–{interval[1]}"


def _next(board: Board, row: Row) -> str:
    test = row.versus_next
    if test is None:
        return MISSING
    below = next(r.letter for r in board.rows if r.key == test.below)
    return f"{'>' if test.significant else '='} {below} (p {p_value(test.p_corrected)})"


# ---- HTML (the web page and the report) --------------------------------------------------------------

def board_rows(board: Board) -> list[list[Cell]]:
    """One list of cells per row, in board_headers' order: numbers sortable as numbers, the best
    of a column in bold with class "best", letters as superscripts (as the report's comparison)."""
    rows = []
    for row in board.rows:
        label = esc(row.system)
        if row.key == board.baseline:
            label = label + " " + tag("span", "(baseline)", class_="baseline")
        cells = [Cell(esc(row.rank if row.rank is not None else MISSING), row.rank, row.rank is not None),
                 Cell(tag("span", row.letter, class_="letter"), row.letter), Cell(esc(row.team), row.team), Cell(label, row.system),
                 Cell(esc(row.category), row.category)]
        for column in board.columns:
            score = row.scores.get(column.dataset)
            cells += [_score_cell(score), Cell(esc(metric(score.judged_at_10)), score.judged_at_10, True) if score
                      else Cell(esc(MISSING), None, True)]
        if board.mean_metric:
            title = row.note or None
            cells += [Cell(tag("span", metric(row.mean), title=title), row.mean, True),
                      Cell(esc(_interval(row.mean_ci)), row.mean_ci[0] if row.mean_ci else None, True),
                      Cell(esc(_ranks(row.rank_interval)), row.rank_interval[0] if row.rank_interval else None, True),
                      Cell(esc(_next(board, row)), row.versus_next.p_corrected if row.versus_next else None, True,
                           "significant" if row.versus_next and row.versus_next.significant else None)]
        rows.append(cells)
    return rows


def _score_cell(score: Score | None) -> Cell:
    if score is None:
        return Cell(esc(MISSING), None, True)
    shown = tag("strong", metric(score.value)) if score.best else esc(metric(score.value))
    if score.better_than:
        shown += tag("sup", ",".join(score.better_than), title="significantly better than " + ", ".join(score.better_than))
    return Cell(Markup(shown), score.value, True, "best" if score.best else None)


def board_table(board: Board, caption=None, rows: list[list[Cell]] | None = None) -> Markup:
    """The board as the report's data table (data-table="leaderboard"), its legend below it;
    `rows`: board_rows(board) as a front changed them (the web page links each system)."""
    shown = table(TABLE_NAME, board_headers(board), board_rows(board) if rows is None else rows, caption, header_first=False)
    notes = [tag("p", f"{r.key}: {r.note}", class_="note") for r in board.rows if r.note]
    return join([shown, *notes, tag("p", legend(board, "bold marks the column's best"), class_="legend")])
