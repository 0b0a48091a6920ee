"""The suite table, BEIR/MTEB style: one row per dataset, one column per measure, a final Mean
row (the unweighted mean over datasets, as BEIR reports it: every dataset counts once, whatever
its number of queries)."""

from __future__ import annotations

from irforge.results import describe_retriever
from irforge.results.cells import csv_text, markdown_cell, text_cell

FORMATS = ("text", "markdown", "csv")


def mean_metrics(datasets: list[dict], measures: list[str]) -> dict[str, float]:
    """Each measure's mean over the datasets (every dataset has every measure: one system, one list)."""
    return {name: sum(d["metrics"][name] for d in datasets) / len(datasets) for name in measures}


def suite_table(record: dict, fmt: str = "text") -> str:
    """suite.json's table as text (aligned columns), Markdown or CSV (full precision)."""
    measures = record["measures"]
    rows = [(d["label"], [d["metrics"][name] for name in measures]) for d in record["datasets"]]
    rows.append(("Mean", [record["mean"][name] for name in measures]))
    if fmt == "csv":
        return csv_text([["dataset", *measures], *([label, *values] for label, values in rows)])
    escape = markdown_cell if fmt == "markdown" else text_cell   # a label from the suite file stays one cell
    cells = [["dataset", *map(escape, measures)]]
    cells += [[escape(label), *(f"{value:.4f}" for value in values)] for label, values in rows]
    if fmt == "markdown":
        lines = [f"| {' | '.join(cells[0])} |", "|" + "---|" + "---:|" * len(measures)]
        lines += [f"| {' | '.join(row)} |" for row in cells[1:-1]]
        lines.append(f"| **{rows[-1][0]}** | " + " | ".join(f"**{cell}**" for cell in cells[-1][1:]) + " |")
        return "\n".join(lines) + "\n"
    if fmt != "text":
        raise ValueError(f"table format {fmt!r} is not one of {', '.join(FORMATS)}")
    widths = [max(len(row[n]) for row in cells) for n in range(len(cells[0]))]
    lines = ["  ".join(cell.ljust(widths[0]) if n == 0 else cell.rjust(widths[n]) for n, cell in enumerate(row))
             for row in cells]
    lines.insert(len(lines) - 1, "-" * len(lines[0]))  # the Mean row set apart, as BEIR tables do
    return "\n".join(lines) + "\n"


def suite_markdown(record: dict) -> str:
    """suite.md: a heading that says what was run, then the table."""
    system = record["system"]
    return (f"# {markdown_cell(record['name'])}\n\n"
            f"{markdown_cell(describe_retriever(system))} · split {markdown_cell(record['split'])} · top_k {system.get('top_k')} · "
            f"{len(record['datasets'])} datasets · {record['created_at']}\n\n" + suite_table(record, "markdown"))


def systems_table(records: dict[str, dict], measure: str, fmt: str = "text") -> str:
    """Several systems' benches on one suite: a row per system, a column per dataset and the Mean,
    each cell the system's `measure` there (its suite.json's figures)."""
    first = next(iter(records.values()))
    labels = [d["label"] for d in first["datasets"]]
    rows = [(name, [*(next(d["metrics"][measure] for d in record["datasets"] if d["label"] == label) for label in labels),
                    record["mean"][measure]]) for name, record in records.items()]
    header = [f"system ({measure})", *labels, "Mean"]
    if fmt == "csv":
        return csv_text([header, *([name, *values] for name, values in rows)])
    escape = markdown_cell if fmt == "markdown" else text_cell
    cells = [list(map(escape, header))] + [[escape(name), *(f"{value:.4f}" for value in values)] for name, values in rows]
    if fmt == "markdown":
        lines = [f"| {' | '.join(cells[0])} |", "|---|" + "---:|" * (len(header) - 1)]
        return "\n".join(lines + [f"| {' | '.join(row)} |" for row in cells[1:]]) + "\n"
    if fmt != "text":
        raise ValueError(f"table format {fmt!r} is not one of {', '.join(FORMATS)}")
    widths = [max(len(row[n]) for row in cells) for n in range(len(header))]
    return "\n".join("  ".join(cell.ljust(widths[0]) if n == 0 else cell.rjust(widths[n]) for n, cell in enumerate(row))
                     for row in cells) + "\n"
