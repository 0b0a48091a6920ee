"""The report's sections, one function each: comparison, suite, results, and the per-system tables
they share (Judged@k and holes, timings, counts). Each returns Markup: an escaped HTML fragment."""

from __future__ import annotations

from irforge.bench.record import DATASET_STATUSES
from irforge.reports.inputs import ReportInput, System
from irforge.reports.markup import (
    MISSING, Cell, Markup, esc, is_number, join, metric, p_value, seconds, signed, table, tag,
)
from irforge.reports.plots import bar_chart, difference_plot
from irforge.results import describe_retriever

TEST_NAMES = {"t": "paired t-test", "wilcoxon": "Wilcoxon signed-rank test",
              "randomization": "paired randomization test", "bootstrap": "paired bootstrap test"}


def union(names_lists) -> list[str]:
    names: list[str] = []
    for names_list in names_lists:
        names += [name for name in names_list if name not in names]
    return names


def section(anchor: str, heading, *parts) -> Markup:
    return tag("section", tag("h2", heading) + join(parts), id=anchor)


def paragraph(*parts, class_: str | None = None) -> Markup:
    return tag("p", join(parts), class_=class_)


# ---- per-system tables, shared by every kind of input ---------------------------------------------

def judged_holes_table(name: str, systems: list[System]) -> Markup:
    """Judged@k as evaluated and, where `--fill-holes` ran, what judging the holes changed."""
    judged_names = union(s.judged for s in systems)
    filled = [s for s in systems if s.record.get("holes")]
    headers = ["system", "dataset", *judged_names]
    if filled:
        headers += ["holes filled in", "holes", "labelled", "not labelled", "judge", "Judged@k (k: the depth filled) before → after",
                    "first measure before → after"]
    rows = []
    for s in systems:
        row = [s.label, s.get("dataset", MISSING), *[s.judged.get(n) for n in judged_names]]
        holes = s.record.get("holes")
        if filled and not holes:
            row += ["not filled"] + [MISSING] * 6
        elif holes:
            depth = holes.get("depth")
            before, after = holes.get("metrics_before", {}), holes.get("metrics_after", {})
            first = next((m for m in before if not m.startswith(("Judged@", "Hole@"))), None)
            judge = holes.get("judge", {})
            row += [f"top {depth}", holes.get("holes"), holes.get("judged"),
                    (holes.get("unparsed") or 0) + (holes.get("failed") or 0),
                    " ".join(str(judge.get(k)) for k in ("backend", "model") if judge.get(k)) or MISSING,
                    _before_after(before, after, f"Judged@{depth}", named=False), _before_after(before, after, first)]
        rows.append(row)
    caption = "Judged@k: the share of each query's top k that has a label (1 − Hole@k)"
    caption += "; holes judged by irforge eval --fill-holes K" if filled else \
        "; no system had its holes filled (irforge eval --fill-holes K)"
    return table(name, headers, rows, caption)


def _before_after(before: dict, after: dict, measure: str | None, named: bool = True) -> Cell:
    if measure is None or measure not in before:
        return Cell(esc(MISSING))
    text = f"{measure} " if named else ""
    text += f"{metric(before[measure])} → {metric(after.get(measure))}"
    if is_number(after.get(measure)) and is_number(before[measure]):
        text += f" ({signed(after[measure] - before[measure])})"
    return Cell(esc(text), after.get(measure), True)


def timings_table(name: str, systems: list[System]) -> Markup:
    keys = union(s.get("timings", {}) for s in systems)
    modes = any(s.get("mode") for s in systems)   # a comparison's systems do not carry it
    rows = [[s.label, *([s.get("mode", MISSING)] if modes else []),
             *[_seconds_cell(s.get("timings", {}).get(k), s.record if k == INDEX_TIMING else None) for k in keys]]
            for s in systems]
    caption = "Timings (seconds of wall time)"
    if INDEX_TIMING in keys:
        caption += f"; {INDEX_TIMING}: building the index, or opening one built before (reused), none for a run file"
    return table(name, ["system", *(["mode"] if modes else []), *keys], rows, caption)


INDEX_TIMING = "index_s"


def index_state(record: dict | None) -> str | None:
    """Why a results record's index_s is not an index build: 'reused' (ingest skipped: the time is the
    reuse check and loading) or 'run file' (a given run: nothing was indexed)."""
    if not record:
        return None
    if (record.get("retriever") or {}).get("name") == "given":
        return "run file"
    if (record.get("counts") or {}).get("ingest_skipped"):
        return "reused"
    return None


def _seconds_cell(value, record: dict | None = None) -> Cell:
    state = index_state(record)
    if state == "run file":
        return Cell(esc("no index (run file)"))
    if not is_number(value):
        return Cell(esc(MISSING))
    if state == "reused":
        return Cell(esc(f"reused index, opened in {seconds(value)}"), value, True)
    return Cell(esc(seconds(value)), value, True)


def counts_table(name: str, systems: list[System]) -> Markup:
    keys = union(s.get("counts", {}) for s in systems)
    rows = []
    for s in systems:
        counts = s.get("counts", {})
        rows.append([s.label, s.queries, *[_count(counts.get(k)) for k in keys]])
    return table(name, ["system", "queries evaluated", *keys], rows, "Counts (lists, such as document errors, by length)")


def _count(value):
    if isinstance(value, bool):
        return "yes" if value else "no"
    return len(value) if isinstance(value, (list, dict)) else value


# ---- comparison -----------------------------------------------------------------------------------

def comparison_section(anchor: str, item: ReportInput) -> Markup:
    comparison = item.record
    settings = comparison.get("settings", {})
    systems = {s.label: s for s in item.systems}
    queries = comparison.get("queries", {})
    left_out = {label: ids for label, ids in queries.get("left_out", {}).items() if ids}
    summary = paragraph(
        f"{len(item.systems)} systems {compared_on(item.systems)}, "
        f"{queries.get('compared', MISSING)} queries compared; pairs: {comparison.get('pairs', MISSING)}"
        + (f", baseline {comparison['baseline']}" if comparison.get("baseline") else "") + ". "
        + ("Left out (not in every system): " + "; ".join(f"{k}: {len(v)}" for k, v in left_out.items()) if left_out
           else "No query was left out."))
    return section(
        anchor, f"Comparison: {item.given}", summary,
        tag("h3", "Systems × measures"), systems_measures_table(comparison, systems), significance_legend(settings, queries),
        tag("h3", "Pairwise comparisons"), pairs_table(comparison),
        tag("h3", "Per-query differences"), difference_plots(comparison),
        tag("h3", "Judged@k and holes"), judged_holes_table("comparison-judged", item.systems),
        tag("h3", "Timings"), timings_table("comparison-timings", item.systems),
    )


def compared_on(systems: list[System]) -> str:
    """"on scifact (test)"; run files compared against a qrels file record no dataset or split."""
    datasets = sorted({str(s.get("dataset")) for s in systems if s.get("dataset")})
    splits = sorted({str(s.get("split")) for s in systems if s.get("split")})
    if datasets:
        return f"on {', '.join(datasets)}" + (f" ({', '.join(splits)})" if splits else "")
    qrels = sorted({str(s.get("data", {}).get("qrels")) for s in systems if s.get("data", {}).get("qrels")})
    return ("(run files) judged by " + ", ".join(qrels) if qrels else "(run files)") + ", no dataset recorded"


def systems_measures_table(comparison: dict, systems: dict[str, System]) -> Markup:
    measures = comparison["measures"]
    rows = []
    for entry in comparison["table"]:
        label = entry.get("system")
        system = systems.get(label)
        row = [Cell(tag("span", f"({entry.get('letter')})", class_="letter") + " " + esc(label), label),
               system.get("dataset") if system else MISSING]
        for measure in measures:
            value = entry.get("values", {}).get(measure, {})
            mean = value.get("mean")
            shown = tag("strong", metric(mean)) if value.get("best") else esc(metric(mean))
            better = value.get("better_than") or []
            if better:
                shown += tag("sup", ",".join(better), title="significantly better than " + ", ".join(better))
            row.append(Cell(shown, mean, True, "best" if value.get("best") else None))
        rows.append(row)
    return table("comparison-systems", ["system", "dataset", *measures], rows,
                 "Mean per measure over the compared queries")


def significance_legend(settings: dict, queries: dict) -> Markup:
    test = settings.get("significance_test")
    described = TEST_NAMES.get(test, test)
    if test == "randomization" and settings.get("permutations"):
        described += f", {settings['permutations']} permutations"
    if test == "bootstrap" and settings.get("bootstrap_samples"):
        described += f", {settings['bootstrap_samples']} samples"
    correction = settings.get("correction")
    return paragraph(
        tag("strong", "Legend. "), "Bold: the highest mean of the column. A superscript letter: significantly better "
        f"than the system with that letter by the {described} ({test}), p-values corrected by {correction}"
        + (f" ({settings['correction_family']})" if settings.get("correction_family") else "")
        + f", alpha = {settings.get('alpha', MISSING)}, over {queries.get('compared', MISSING)} queries "
        f"(seed {settings.get('seed', MISSING)}).", class_="legend")


def pairs_table(comparison: dict) -> Markup:
    tests = comparison.get("settings", {}).get("tests") or union(c.get("tests", {}) for c in comparison["comparisons"])
    confidence = comparison.get("settings", {}).get("confidence")
    ci_header = f"{round(confidence * 100)}% CI (bootstrap)" if is_number(confidence) else "CI (bootstrap)"
    headers = ["measure", "system", "against", "n", "means (system − against)", "difference", ci_header,
               "effect size (d_z)", "W / T / L"]
    headers += [f"{test}: p (corrected)" for test in tests]
    rows = []
    for c in comparison["comparisons"]:
        ci = c.get("tests", {}).get("bootstrap", {}).get("ci")
        ci_text = f"[{signed(ci[0])}, {signed(ci[1])}]" if isinstance(ci, list) and len(ci) == 2 else MISSING
        row = [c.get("measure"), c.get("system"), c.get("against"), c.get("n"),
               Cell(esc(f"{metric(c.get('mean'))} − {metric(c.get('mean_against'))}"), c.get("mean"), True),
               Cell(esc(signed(c.get("difference"))), c.get("difference"), True), ci_text,
               Cell(esc(signed(c.get("effect_size"), 3)), c.get("effect_size"), True),
               Cell(esc(f"{c.get('wins', MISSING)} / {c.get('ties', MISSING)} / {c.get('losses', MISSING)}"), c.get("wins"), True)]
        for test in tests:
            result = c.get("tests", {}).get(test, {})
            corrected = result.get("p_corrected")
            significant = bool(result.get("significant"))
            # p, then the corrected p on a line of its own: four tests' columns stay narrow enough
            # for the table to fit a 1,400 px window beside the others (never cut at its edge).
            shown = join([p_value(result.get('p')), Markup("<br>"), "(", tag("strong", p_value(corrected)) if significant
                          else p_value(corrected), ")",
                          tag("span", "*", class_="sig", title="significant after correction") if significant else ""])
            row.append(Cell(shown, corrected, True, "significant" if significant else None))
        rows.append(row)
    return table("comparison-pairs", headers, rows,
                 "difference = mean − mean against; W / T / L: queries where the system scores higher / the same / "
                 "lower; p (corrected p), * significant after correction", header_first=False)


def difference_plots(comparison: dict) -> Markup:
    per_query = comparison.get("per_query", {})
    figures, missing = [], []
    for c in comparison["comparisons"]:
        measure, system, against = c.get("measure"), c.get("system"), c.get("against")
        values = per_query.get(measure, {})
        differences = [v[system] - v[against] for v in values.values()
                       if is_number(v.get(system)) and is_number(v.get(against))]
        if not differences:
            missing.append(f"{measure}: {system} − {against}")
            continue
        figures.append(difference_plot(differences, measure, system, against,
                                       c.get("wins", sum(d > 0 for d in differences)),
                                       c.get("ties", sum(d == 0 for d in differences)),
                                       c.get("losses", sum(d < 0 for d in differences))))
    note = paragraph("No per-query values recorded for: " + "; ".join(missing), class_="note") if missing else ""
    return tag("div", join(figures), class_="charts") + note


# ---- suite ----------------------------------------------------------------------------------------

def suite_comparison_section(anchor: str, item: ReportInput) -> Markup:
    """Systems compared over a suite: per measure, systems as rows and datasets (plus the mean) as
    columns, each dataset's cell marked by that dataset's own tests; the per-dataset comparisons follow."""
    record = item.record
    datasets, measures = record["datasets"], record["measures"]
    systems = record["systems"]
    tables = []
    for measure in measures:
        means = {s["label"]: record["mean"].get(s["label"], {}).get(measure) for s in systems}
        best_mean = max((v for v in means.values() if is_number(v)), default=None)
        rows = []
        for s in systems:
            row = [Cell(tag("span", f"({s.get('letter')})", class_="letter") + " " + esc(s["label"]), s["label"])]
            for dataset in datasets:
                entry = next((r for r in record["comparisons"][dataset].get("table", []) if r.get("system") == s["label"]), {})
                value = entry.get("values", {}).get(measure, {})
                shown = tag("strong", metric(value.get("mean"))) if value.get("best") else esc(metric(value.get("mean")))
                if value.get("better_than"):
                    shown += tag("sup", ",".join(value["better_than"]), title="significantly better than " + ", ".join(value["better_than"]))
                row.append(Cell(shown, value.get("mean"), True, "best" if value.get("best") else None))
            mean = means[s["label"]]
            row.append(Cell(tag("strong", metric(mean)) if mean == best_mean else esc(metric(mean)), mean, True))
            rows.append(row)
        tables.append(table(f"{anchor}-{measure}", ["system", *datasets, "Mean"], rows,
                            f"{measure}: per dataset (letters from that dataset's tests) and the mean over datasets"))
    left_out = {label: names for label, names in record.get("datasets_left_out", {}).items() if names}
    return section(anchor, f"Suites compared: {item.given}",
                   paragraph(f"{len(systems)} systems on {len(datasets)} shared datasets ({', '.join(datasets)})"
                             + ("; datasets not in every suite: " + "; ".join(f"{k}: {', '.join(v)}" for k, v in left_out.items())
                                if left_out else "") + ". Each dataset's comparison follows."),
                   *tables, significance_legend(record.get("settings", {}), {"compared": "each dataset's"}))


def suite_section(anchor: str, item: ReportInput) -> Markup:
    suite = item.record
    measures = suite["measures"]
    entries = suite["datasets"]
    rows = [[e.get("label"), e.get("dataset"), Cell(esc(e.get("status", MISSING)), e.get("status"), False,
                                                    "status-ok" if e.get("status") in DATASET_STATUSES else "status-bad"),
             e.get("queries"), *[(e.get("metrics") or {}).get(m) for m in measures]] for e in entries]
    mean = suite.get("mean") or {}
    ok = sum(e.get("status") in DATASET_STATUSES for e in entries)
    foot = [["mean", f"{ok} of {len(entries)} datasets ok", "", "", *[mean.get(m) for m in measures]]]
    datasets_table = table("suite-datasets", ["dataset", "name", "status", "queries", *measures], rows,
                           f"{suite.get('name', 'suite')} · split {suite.get('split', MISSING)}", foot=foot)
    timing_keys = union(e.get("timings") or {} for e in entries)
    records = {s.source: s.record for s in item.systems}
    timing_rows = [[e.get("label"), e.get("status"), e.get("error") or "",
                    *[_seconds_cell((e.get("timings") or {}).get(k),
                                    records.get(str(item.path.parent / str(e.get("results")))) if k == INDEX_TIMING else None)
                      for k in timing_keys]] for e in entries]
    main = measures[0] if measures else None
    chart = bar_chart([(str(e.get("label")), (e.get("metrics") or {}).get(main), str(e.get("status", "no value")))
                       for e in entries], main or "", f"{main} per dataset", mean.get(main)) if main else ""
    notes = [paragraph(note, class_="note") for note in item.notes]
    system = suite.get("system") or {}
    return section(
        anchor, f"Suite: {suite.get('name', item.given)}",
        paragraph(f"{describe_retriever(system)} on {len(entries)} datasets; made {suite.get('created_at', MISSING)}."),
        tag("h3", "Datasets × measures"), datasets_table,
        tag("h3", f"{main} per dataset"), tag("div", chart, class_="charts"),
        tag("h3", "Status and timings"),
        table("suite-status", ["dataset", "status", "error", *timing_keys], timing_rows, "Per dataset"),
        tag("h3", "Judged@k and holes"), judged_holes_table("suite-judged", item.systems) if item.systems else "",
        *notes,
    )


# ---- results --------------------------------------------------------------------------------------

def results_section(anchor: str, items: list[ReportInput]) -> Markup:
    systems = [s for item in items for s in item.systems]
    measures = union(s.metrics for s in systems)
    rows = [[s.label, s.get("dataset"), s.get("split"), describe_retriever(s.get("retriever", {})), s.queries,
             *[s.metrics.get(m) for m in measures]] for s in systems]
    evaluated = [s for item in items if item.kind == "results" for s in item.systems]
    instructions = [item.given for item in items if item.kind == "instructions"]
    parts = [tag("h3", "Metrics"),
             table("results-metrics", ["system", "dataset", "split", "retriever", "queries", *measures], rows,
                   "Mean over the evaluated queries, as results.json reports it")]
    if instructions:
        parts.append(paragraph("Instruction-following results (" + ", ".join(instructions) + ") are shown by their "
                               "metrics only; their per-dimension figures are in results.json.", class_="note"))
    if evaluated:
        parts += [tag("h3", "Judged@k and holes"), judged_holes_table("results-judged", evaluated),
                  tag("h3", "Timings"), timings_table("results-timings", evaluated),
                  tag("h3", "Counts"), counts_table("results-counts", evaluated)]
    return section(anchor, "Results", *parts)
