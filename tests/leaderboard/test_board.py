"""The board's rows, ranks, filters and rows missing a dataset, against hand counts written here."""

from __future__ import annotations

import pytest

from irforge.leaderboard.board import BoardError, Entry, build_board, choices, main_metric_for, sort_board

QUERIES = [f"q{n}" for n in range(4)]


def entry(sid, team, system, dataset, values, *, category="retrieval", created="2026-11-20T10:00:00+00:00",
          language="en", task="qa", metric="nDCG@10", judged=1.0) -> Entry:
    """A done submission whose per-query values are `values` on q0..q3 (its value: their mean)."""
    per_query = dict(zip(QUERIES, values))
    return Entry(sid, team, system, category, dataset, task, language, metric, sum(values) / len(values), judged,
                 per_query, created)


def ranks(board):
    return [(r.key, r.rank) for r in board.rows]


def test_rank_by_mean_over_datasets_with_ties_sharing_a_rank():
    # means by hand: alpha (0.5 + 0.5)/2 = 0.5; beta (0.75 + 0.25)/2 = 0.5; gamma (0.25 + 0.25)/2 = 0.25;
    # delta (1 + 0.5)/2 = 0.75. Order: delta 1, then alpha and beta tied at 2 (by name), gamma 4.
    entries = [
        entry("1", "t1", "alpha", "d1", [1, 0, 1, 0]), entry("2", "t1", "alpha", "d2", [0, 1, 0, 1]),
        entry("3", "t2", "beta", "d1", [1, 1, 1, 0]), entry("4", "t2", "beta", "d2", [0, 0, 1, 0]),
        entry("5", "t1", "gamma", "d1", [1, 0, 0, 0]), entry("6", "t1", "gamma", "d2", [0, 0, 0, 1]),
        entry("7", "t3", "delta", "d1", [1, 1, 1, 1]), entry("8", "t3", "delta", "d2", [1, 1, 0, 0]),
    ]
    board = build_board(entries, resamples=200)
    assert ranks(board) == [("t3/delta/retrieval", 1), ("t1/alpha/retrieval", 2), ("t2/beta/retrieval", 2),
                            ("t1/gamma/retrieval", 4)]
    assert [r.mean for r in board.rows] == [0.75, 0.5, 0.5, 0.25]
    assert [r.letter for r in board.rows] == ["a", "b", "c", "d"]
    assert [c.dataset for c in board.columns] == ["d1", "d2"]
    assert board.mean_metric == "nDCG@10"
    assert board.rows[0].scores["d1"].best and board.rows[0].scores["d1"].value == 1.0
    # a tie at the top of a column (delta and alpha: 0.5 on d2): both marked best, the first in
    # the board's order is the one the column's tests compare against
    assert [r.scores["d2"].best for r in board.rows] == [True, True, False, False]
    assert [c.best for c in board.columns] == ["t3/delta/retrieval", "t3/delta/retrieval"]


def test_latest_done_submission_per_dataset_and_the_date_filter():
    entries = [
        entry("old", "t1", "s", "d1", [0, 0, 0, 0], created="2026-11-01T09:00:00Z"),
        entry("new", "t1", "s", "d1", [1, 1, 1, 1], created="2026-11-10T09:00:00Z"),
        entry("other", "t2", "s", "d1", [0.5] * 4, created="2026-11-05T09:00:00Z"),
    ]
    assert build_board(entries, resamples=100).row("t1/s").scores["d1"].submission_id == "new"
    # until a date: that whole day counts, the later one does not exist yet
    before = build_board(entries, until="2026-11-09", resamples=100)
    assert before.row("t1/s").scores["d1"].submission_id == "old"
    assert [r.key for r in build_board(entries, since="2026-11-02", until="2026-11-06", resamples=100).rows] == ["t2/s/retrieval"]
    assert build_board(entries, until="2026-11-01", resamples=100).row("t1/s").scores["d1"].submission_id == "old"
    with pytest.raises(BoardError, match="since 'last week' is not an ISO date"):
        build_board(entries, since="last week")


def test_filters_by_category_language_task_and_dataset():
    entries = [
        entry("1", "t1", "s", "d1", [1, 0, 0, 0]),
        entry("2", "t1", "s", "d1", [1, 1, 0, 0], category="reranking"),
        entry("3", "t1", "s", "de", [1, 1, 1, 0], language="de"),
        entry("4", "t1", "s", "long", [1, 1, 1, 1], task="long-doc", metric="R@10"),
    ]
    assert [r.key for r in build_board(entries, category="reranking", resamples=100).rows] == ["t1/s/reranking"]
    board = build_board(entries, language="de", resamples=100)
    assert [c.dataset for c in board.columns] == ["de"] and board.rows[0].mean == 0.75
    assert [c.dataset for c in build_board(entries, task="long-doc", resamples=100).columns] == ["long"]
    kept = build_board(entries, datasets=["long", "d1"], resamples=100)
    assert [c.dataset for c in kept.columns] == ["long", "d1"]         # the order asked for
    # nDCG@10 and R@10 are not averaged together: no mean, no rank, and the board says why
    assert kept.mean_metric is None and all(r.rank is None for r in kept.rows)
    assert "different main metrics" in kept.notes[0]
    assert choices(entries) == {"datasets": ["d1", "de", "long"], "categories": ["reranking", "retrieval"],
                                "languages": ["de", "en"], "tasks": ["long-doc", "qa"]}
    with pytest.raises(BoardError, match="unknown dataset 'nope': the board has d1, de, long"):
        build_board(entries, datasets=["nope"])
    with pytest.raises(BoardError, match="unknown category 'dense'"):
        build_board(entries, category="dense")


def test_a_row_missing_a_dataset_has_no_mean_and_comes_last():
    entries = [
        entry("1", "a", "full", "d1", [1, 1, 0, 0]), entry("2", "a", "full", "d2", [1, 0, 0, 0]),
        entry("3", "b", "best", "d1", [1, 1, 1, 1]),                         # never submitted on d2
        entry("4", "c", "low", "d1", [0, 0, 0, 0]), entry("5", "c", "low", "d2", [0, 0, 0, 1]),
    ]
    board = build_board(entries, resamples=100)
    assert ranks(board) == [("a/full/retrieval", 1), ("c/low/retrieval", 2), ("b/best/retrieval", None)]
    missing = board.rows[-1]
    assert missing.mean is None and missing.missing == ("d2",) and missing.note == "no mean: no done submission on d2"
    assert missing.mean_ci is None and missing.rank_interval is None
    # it still has its cell, and is the best of d1
    assert missing.scores["d1"].best and board.columns[0].best == "b/best/retrieval"
    assert "d2" not in missing.scores


def test_sorting_keeps_letters_with_rows():
    entries = [entry("1", "z", "s", "d1", [1, 1, 0, 0]), entry("2", "a", "s", "d1", [1, 1, 1, 0]),
               entry("3", "m", "s", "d2", [1, 0, 0, 0])]
    board = build_board(entries, datasets=["d1"], resamples=100)
    assert [(r.team, r.letter) for r in board.rows] == [("a", "a"), ("z", "b")]
    assert [(r.team, r.letter) for r in sort_board(board, "team", descending=True).rows] == [("z", "b"), ("a", "a")]
    assert [r.team for r in sort_board(board, "d1", descending=False).rows] == ["z", "a"]
    assert [r.team for r in sort_board(board, "rank", descending=False).rows] == ["z", "a"]
    with pytest.raises(BoardError, match="cannot sort by 'd9'"):
        sort_board(board, "d9")


def test_main_metric_per_task_is_air_bench_s():
    assert main_metric_for("qa") == "nDCG@10" and main_metric_for("long-doc") == "R@10"
    assert main_metric_for("qa", "RR@10") == "RR@10"
    with pytest.raises(BoardError, match="task 'chat' has no default main metric"):
        main_metric_for("chat")


def test_a_baseline_must_name_one_row():
    entries = [entry("1", "t", "s", "d1", [1, 0, 0, 0]), entry("2", "t", "s", "d1", [1, 1, 0, 0], category="reranking")]
    with pytest.raises(BoardError, match="several categories"):
        build_board(entries, baseline="t/s")
    with pytest.raises(BoardError, match="no row 'x/y' on this board"):
        build_board(entries, baseline="x/y")
    assert build_board(entries, baseline="t/s/reranking", resamples=100).baseline == "t/s/reranking"


# ---- rendering ----------------------------------------------------------------------------------------

def rendered_entries():
    return [entry("1", "t1", "top", "d1", [1, 1, 1, 1]), entry("2", "t1", "top", "d2", [1, 1, 0, 0]),
            entry("3", "<script>x</script>", "a|b", "d1", [0, 0, 0, 1], judged=0.25)]


def test_text_and_markdown_show_marks_judged_and_why_a_row_has_no_mean():
    from irforge.leaderboard.board_render import render_board_text

    board = build_board(rendered_entries(), resamples=100)
    lines = render_board_text(board).splitlines()
    assert lines[0].split() == ["rank", "team", "system", "category", "d1", "nDCG@10", "d1", "Judged@10", "d2", "nDCG@10",
                                "d2", "Judged@10", "mean", "nDCG@10", "95%", "CI", "rank", "range", "vs", "next"]
    # by hand: top is 1.0 on d1 (best), 0.5 on d2, mean 0.75; the other row 0.25 on d1, Judged@10 0.25, no d2
    assert lines[1].split()[:10] == ["1", "a", "t1", "top", "retrieval", "1.0000*", "1.0000", "0.5000*", "1.0000", "0.7500"]
    assert lines[2].split() == ["—", "b", "<script>x</script>", "a|b", "retrieval", "0.2500", "0.2500", "—", "—", "—", "—",
                                "—", "—"]
    assert "<script>x</script>/a|b/retrieval: no mean: no done submission on d2" in lines
    markdown = render_board_text(board, "markdown").splitlines()
    assert markdown[3].startswith("| — | b | <script>x</script> | a\\|b | retrieval | 0.2500 | 0.2500 | — |")


def test_html_table_is_the_report_s_table_with_escaped_labels():
    from html.parser import HTMLParser

    from irforge.leaderboard.board_render import board_headers, board_table

    class Cells(HTMLParser):
        def __init__(self):
            super().__init__()
            self.tables, self.rows, self.tags = [], [], []

        def handle_starttag(self, name, attrs):
            self.tags.append(name)
            if name == "table":
                self.tables.append(dict(attrs))
            if name == "tr":
                self.rows.append([])
            if name in ("td", "th"):
                self.rows[-1].append("")

        def handle_data(self, data):
            if self.rows and self.rows[-1]:
                self.rows[-1][-1] += data

    board = build_board(rendered_entries(), resamples=100, baseline="t1/top")
    html = board_table(board)
    parsed = Cells()
    parsed.feed(html)
    assert parsed.tables == [{"class": "data sortable", "data-table": "leaderboard"}]
    assert "script" not in parsed.tags                                   # a team's name is text, never markup
    assert parsed.rows[0] == board_headers(board)
    assert parsed.rows[1][:6] == ["1", "a", "t1", "top (baseline)", "retrieval", "1.0000"]
    assert parsed.rows[2][:7] == ["—", "b", "<script>x</script>", "a|b", "retrieval", "0.2500", "0.2500"]
    assert '<td class="num best" data-sort="1.0"><strong>1.0000</strong></td>' in html
