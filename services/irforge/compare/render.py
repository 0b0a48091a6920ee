"""A comparison as text: the terminal table, Markdown, LaTeX (booktabs), CSV (one row per
comparison, every p-value) and JSON. Every format shows the same numbers; the table's means are
over the queries compared (the ones every system answered). Labels and measure names come from
the inputs: each is written as one cell of its format (irforge.results.cells)."""

from __future__ import annotations

import json

from irforge.results.cells import csv_text, latex_cell as _tex, markdown_cell as _md, text_cell as _one

FORMATS = ("text", "markdown", "latex", "csv", "json")
TEST_NAMES = {"t": "paired t-test", "wilcoxon": "Wilcoxon signed-rank", "randomization": "randomization test",
              "bootstrap": "paired bootstrap"}
CORRECTION_NAMES = {"holm": "Holm", "bonferroni": "Bonferroni", "bh": "Benjamini-Hochberg", "none": "no"}


def render(comparison: dict, fmt: str) -> str:
    return {"text": text, "markdown": markdown, "latex": latex, "csv": csv_rows, "json": as_json}[fmt](comparison)


def legend(comparison: dict) -> str:
    s = comparison["settings"]
    correction = CORRECTION_NAMES[s["correction"]]
    base = f"against the baseline {_one(comparison['baseline'])}" if comparison["baseline"] else "all pairs"
    return (f"{comparison['queries']['compared']} queries compared, {base}; letters: significantly better than that system "
            f"({TEST_NAMES[s['significance_test']]}, {correction} correction, alpha {s['alpha']:g}); best per column in bold")


def _title(comparison: dict) -> str:
    datasets = sorted({str(s["dataset"]) for s in comparison["systems"] if s["dataset"]})
    splits = sorted({str(s["split"]) for s in comparison["systems"] if s["split"]})
    return _one(" · ".join(filter(None, [", ".join(datasets), ", ".join(splits)])) or "comparison")


def text(comparison: dict) -> str:
    measures = [_one(m) for m in comparison["measures"]]
    rows = [{**r, "system": _one(r["system"]), "values": {_one(m): v for m, v in r["values"].items()}}
            for r in comparison["table"]]
    label_width = max(len("system"), *(len(r["system"]) for r in rows))
    cells = {(r["system"], m): _cell(r["values"][m], lambda v: f"{v:.4f}", "*", lambda ls: f" [{','.join(ls)}]")
             for r in rows for m in measures}
    widths = {m: max(len(m), *(len(cells[(r["system"], m)]) for r in rows)) for m in measures}
    out = [_title(comparison), "   " + f"{'system':<{label_width}}  " + "  ".join(f"{m:<{widths[m]}}" for m in measures)]
    for r in rows:
        out.append(f"{r['letter']:<2} {r['system']:<{label_width}}  " + "  ".join(f"{cells[(r['system'], m)]:<{widths[m]}}" for m in measures))
    out.append(legend(comparison).replace("in bold", "marked *"))
    out.append("")
    out.append("pairwise (difference = system - against; p corrected within each measure and test)")
    tests = comparison["settings"]["tests"]
    for c in comparison["comparisons"]:
        ci = c["tests"].get("bootstrap", {}).get("ci")
        interval = f" CI [{ci[0]:+.4f}, {ci[1]:+.4f}]" if ci else ""
        effect = "n/a" if c["effect_size"] is None else f"{c['effect_size']:+.3f}"
        ps = "  ".join(f"{t} p={c['tests'][t]['p']:.3g}→{c['tests'][t]['p_corrected']:.3g}{'*' if c['tests'][t]['significant'] else ''}"
                       for t in tests)
        out.append(f"  {_one(c['measure'])}: {_one(c['system'])} vs {_one(c['against'])}: {c['difference']:+.4f}{interval} d={effect} "
                   f"W/T/L {c['wins']}/{c['ties']}/{c['losses']}  {ps}")
    return "\n".join(out) + "\n"


def markdown(comparison: dict) -> str:
    measures = comparison["measures"]
    out = [f"| | system | {' | '.join(map(_md, measures))} |", "|---|---|" + "---:|" * len(measures)]
    for r in comparison["table"]:
        values = [_cell(r["values"][m], lambda v: f"{v:.4f}", None, lambda ls: f"<sup>{','.join(ls)}</sup>", bold=("**", "**"))
                  for m in measures]
        out.append(f"| {r['letter']} | {_md(r['system'])} | {' | '.join(values)} |")
    out += ["", f"{_md(legend(comparison))}.", ""]
    tests = comparison["settings"]["tests"]
    header = ["measure", "system", "against", "difference", "95% CI" if _has_ci(comparison) else None, "effect size", "W/T/L",
              *[f"{t} p (corrected)" for t in tests]]
    header = [h for h in header if h]
    out += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for c in comparison["comparisons"]:
        row = [_md(c["measure"]), _md(c["system"]), _md(c["against"]), f"{c['difference']:+.4f}"]
        if _has_ci(comparison):
            ci = c["tests"]["bootstrap"]["ci"]
            row.append(f"[{ci[0]:+.4f}, {ci[1]:+.4f}]")
        row += ["n/a" if c["effect_size"] is None else f"{c['effect_size']:+.3f}", f"{c['wins']}/{c['ties']}/{c['losses']}"]
        row += [f"{c['tests'][t]['p']:.3g} ({c['tests'][t]['p_corrected']:.3g}){' *' if c['tests'][t]['significant'] else ''}"
                for t in tests]
        out.append("| " + " | ".join(row) + " |")
    return "\n".join(out) + "\n"


def latex(comparison: dict) -> str:
    """A booktabs table: best per column in bold, superscript letters for significance (as ranx)."""
    measures = comparison["measures"]
    out = [r"\begin{table}[t]", r"\centering", r"\begin{tabular}{cl" + "c" * len(measures) + "}", r"\toprule",
           " & System & " + " & ".join(_tex(m) for m in measures) + r" \\", r"\midrule"]
    for r in comparison["table"]:
        values = [_cell(r["values"][m], lambda v: f"{v:.4f}", None, lambda ls: r"\textsuperscript{" + ",".join(ls) + "}",
                        bold=(r"\textbf{", "}")) for m in measures]
        out.append(f"{r['letter']} & {_tex(r['system'])} & " + " & ".join(values) + r" \\")
    out += [r"\bottomrule", r"\end{tabular}", r"\caption{" + _tex(legend(comparison)) + ".}", r"\end{table}"]
    return "\n".join(out) + "\n"


def csv_rows(comparison: dict) -> str:
    """One row per (measure, pair), with every test's p-value before and after correction."""
    return csv_text([csv_header(comparison), *csv_records(comparison)])


def csv_header(comparison: dict) -> list[str]:
    tests = comparison["settings"]["tests"]
    header = ["measure", "system", "against", "n", "mean", "mean_against", "difference", "effect_size", "wins", "ties", "losses"]
    for t in tests:
        header += [f"{t}_p", f"{t}_p_corrected", f"{t}_significant"]
    if "bootstrap" in tests:
        header += ["bootstrap_ci_low", "bootstrap_ci_high"]
    return header


def csv_records(comparison: dict) -> list[list]:
    """csv_rows' rows, as values (csv_text writes floats in full precision)."""
    tests = comparison["settings"]["tests"]
    rows = []
    for c in comparison["comparisons"]:
        row = [c["measure"], c["system"], c["against"], c["n"], c["mean"], c["mean_against"], c["difference"],
               c["effect_size"], c["wins"], c["ties"], c["losses"]]
        for t in tests:
            row += [c["tests"][t]["p"], c["tests"][t]["p_corrected"], c["tests"][t]["significant"]]
        if "bootstrap" in tests:
            row += list(c["tests"]["bootstrap"]["ci"])
        rows.append(row)
    return rows


def as_json(comparison: dict) -> str:
    return json.dumps(comparison, indent=1, allow_nan=False) + "\n"


def _cell(value: dict, number, best_mark, letters, bold=None) -> str:
    text = number(value["mean"])
    if value["best"]:
        text = f"{bold[0]}{text}{bold[1]}" if bold else text + best_mark
    return text + (letters(value["better_than"]) if value["better_than"] else "")


def _has_ci(comparison: dict) -> bool:
    return "bootstrap" in comparison["settings"]["tests"]


# -- a comparison across a suite (kind "suite-comparison"): one table per measure, systems by datasets

def render_suite(comparison: dict, fmt: str) -> str:
    if fmt == "json":
        return as_json(comparison)
    if fmt == "csv":
        first = next(iter(comparison["comparisons"].values()))   # every dataset has the same settings, so columns
        rows = [[dataset, *row] for dataset, c in comparison["comparisons"].items() for row in csv_records(c)]
        return csv_text([["dataset", *csv_header(first)], *rows])
    tables = [_suite_table(comparison, measure, fmt) for measure in comparison["measures"]]
    note = (f"letters: significantly better than that system on that dataset "
            f"({TEST_NAMES[comparison['settings']['significance_test']]}, {CORRECTION_NAMES[comparison['settings']['correction']]} "
            f"correction within each dataset, alpha {comparison['settings']['alpha']:g}); Mean: over the {len(comparison['datasets'])} datasets")
    if fmt == "latex":
        return "\n".join(tables).replace("%CAPTION%", _tex(note))
    details = [f"\n## {(_md if fmt == 'markdown' else _one)(dataset)}\n\n" + (markdown(c) if fmt == "markdown" else text(c))
               for dataset, c in comparison["comparisons"].items()]
    return "\n".join(tables) + f"\n{note}\n" + "".join(details)


def _suite_table(comparison: dict, measure: str, fmt: str) -> str:
    datasets = comparison["datasets"]
    systems = comparison["systems"]
    mean_best = max(comparison["mean"][s["label"]][measure] for s in systems)
    rows = []
    for s in systems:
        cells = []
        for dataset in datasets:
            row = next(r for r in comparison["comparisons"][dataset]["table"] if r["system"] == s["label"])
            cells.append(row["values"][measure])
        mean = comparison["mean"][s["label"]][measure]
        cells.append({"mean": mean, "best": mean == mean_best, "better_than": []})
        rows.append((s, cells))
    columns = [*datasets, "Mean"]
    if fmt == "latex":
        out = [r"\begin{table}[t]", r"\centering", r"\begin{tabular}{cl" + "c" * len(columns) + "}", r"\toprule",
               f"\\multicolumn{{{len(columns) + 2}}}{{c}}{{{_tex(measure)}}} \\\\", r"\midrule",
               " & System & " + " & ".join(_tex(c) for c in columns) + r" \\", r"\midrule"]
        for s, cells in rows:
            values = [_cell(c, lambda v: f"{v:.4f}", None, lambda ls: r"\textsuperscript{" + ",".join(ls) + "}",
                            bold=(r"\textbf{", "}")) for c in cells]
            out.append(f"{s['letter']} & {_tex(s['label'])} & " + " & ".join(values) + r" \\")
        out += [r"\bottomrule", r"\end{tabular}", r"\caption{%CAPTION%}", r"\end{table}", ""]
        return "\n".join(out)
    if fmt == "markdown":
        out = [f"**{_md(measure)}**", "", f"| | system | {' | '.join(map(_md, columns))} |", "|---|---|" + "---:|" * len(columns)]
        for s, cells in rows:
            values = [_cell(c, lambda v: f"{v:.4f}", None, lambda ls: f"<sup>{','.join(ls)}</sup>", bold=("**", "**")) for c in cells]
            out.append(f"| {s['letter']} | {_md(s['label'])} | {' | '.join(values)} |")
        return "\n".join(out) + "\n"
    texts = [[_cell(c, lambda v: f"{v:.4f}", "*", lambda ls: f" [{','.join(ls)}]") for c in cells] for _, cells in rows]
    columns = [_one(c) for c in columns]
    labels = [_one(s["label"]) for s, _ in rows]
    label_width = max(len("system"), *map(len, labels))
    widths = [max(len(col), *(len(t[i]) for t in texts)) for i, col in enumerate(columns)]
    out = [_one(measure), "   " + f"{'system':<{label_width}}  " + "  ".join(f"{c:<{w}}" for c, w in zip(columns, widths))]
    for (s, _), label, t in zip(rows, labels, texts):
        out.append(f"{s['letter']:<2} {label:<{label_width}}  " + "  ".join(f"{v:<{w}}" for v, w in zip(t, widths)))
    return "\n".join(out) + "\n"

