"""The reproducibility section: every configuration, data fingerprint and version the inputs
recorded, as tables to read and as the full records (pretty JSON in <details>) to copy."""

from __future__ import annotations

import json

from irforge.reports.inputs import ReportInput, System, distinct_systems
from irforge.reports.markup import MISSING, Cell, Markup, esc, join, json_details, key_value_table, table, tag
from irforge.reports.sections import paragraph, section, union
from irforge.results import describe_retriever

DATA_KEYS = ("path", "corpus_fingerprint_sha256", "qrels_sha256", "queries_in_split", "qrels_judgements")


def reproducibility_section(anchor: str, inputs: list[ReportInput], made: dict) -> Markup:
    # Each evaluated run once, however many inputs hold it (the input column lists them all).
    systems = [(", ".join(map(str, numbers)), s) for numbers, s in distinct_systems(inputs)]
    input_rows = [[n, item.given, item.kind, Cell(tag("code", str(item.path))), Cell(tag("code", item.sha256, class_="hash"))]
                  for n, item in enumerate(inputs, start=1)]
    parts = [tag("h3", "This report"), key_value_table("report-made", made),
             tag("h3", "Inputs"), table("inputs-files", ["#", "input", "kind", "file", "sha256"], input_rows,
                                        "The files read", header_first=False)]
    if systems:
        parts += [tag("h3", "Configuration"), configuration_table(systems),
                  tag("h3", "Data fingerprints"), data_table(systems),
                  tag("h3", "Versions"), versions_table([s for _, s in systems])]
    for n, item in enumerate(inputs, start=1):
        parts += input_settings(item, n)
    if systems:
        parts += [tag("h3", "Full records"), *[system_details(s, n) for n, s in systems]]
    return section(anchor, "Reproducibility", paragraph(
        "What each input recorded about how it was made: retriever, evaluation options, data fingerprints "
        "(corpus and qrels), settings and package versions. Each system's full record is in its block at the end."), *parts)


def input_settings(item: ReportInput, n: int) -> list[Markup]:
    record = item.record
    if item.kind == "comparison":
        made = {key: record.get(key) for key in ("created_at", "irforge_version", "baseline", "pairs", "measures")}
        settings = {**made, "settings": record.get("settings", {}), "queries.compared": record.get("queries", {}).get("compared")}
        return [tag("h3", f"Input {n}: compare's settings"), key_value_table(f"input{n}-settings", settings, item.given)]
    if item.kind == "suite":
        made = {key: record.get(key) for key in ("name", "created_at", "split", "measures")}
        parts = [tag("h3", f"Input {n}: bench's settings"),
                 key_value_table(f"input{n}-settings", {**made, "system": record.get("system", {})}, item.given)]
        if record.get("versions"):
            parts.append(key_value_table(f"input{n}-suite-versions", record["versions"], "bench's versions"))
        dataset_rows = [[e.get("label"), e.get("dataset"), Cell(tag("code", str(e.get("path", MISSING)))), e.get("split"),
                         e.get("results")] for e in record["datasets"]]
        parts.append(table(f"input{n}-suite-datasets", ["dataset", "name", "path", "split", "results"], dataset_rows,
                           "Datasets as the suite named them"))
        return parts
    return []


def configuration_table(systems: list[tuple[str, System]]) -> Markup:
    rows = []
    for n, s in systems:
        evaluation = s.get("evaluation", {})
        options = evaluation.get("options", {})
        retriever = s.get("retriever", {})
        rows.append([s.label, n, s.get("dataset"), s.get("split"), describe_retriever(retriever), retriever.get("top_k"),
                     " ".join(evaluation.get("measures", [])) or MISSING,
                     ", ".join(f"{k}={v}" for k, v in options.items()) or MISSING,
                     evaluation.get("identical_ids", MISSING), s.get("mode", MISSING), s.get("created_at", MISSING)])
    return table("configuration", ["system", "inputs", "dataset", "split", "retriever", "top k", "measures",
                                   "evaluation options", "identical ids", "mode", "created"], rows,
                 "Per system (the full retriever description is in its record below)")


def data_table(systems: list[tuple[str, System]]) -> Markup:
    rows = [[s.label, n, *[Cell(tag("code", str(s.get("data", {})[k]), class_="hash" if k.endswith("sha256") else None))
                           if k in s.get("data", {}) else MISSING for k in DATA_KEYS]] for n, s in systems]
    return table("data-fingerprints", ["system", "inputs", *DATA_KEYS], rows,
                 "The data each system was evaluated on: corpus and qrels fingerprints (SHA-256)", sortable=False)


def versions_table(systems: list[System]) -> Markup:
    """Package × set of versions: systems recorded with the same versions share a column, and a
    row whose versions differ between columns is marked."""
    groups: dict[str, list[System]] = {}
    for s in systems:
        groups.setdefault(json.dumps(s.get("versions", {}), sort_keys=True), []).append(s)
    columns = list(groups.values())
    packages = union(members[0].get("versions", {}) for members in columns)
    rows = []
    for package in packages:
        values = [members[0].get("versions", {}).get(package) for members in columns]
        differs = len({str(v) for v in values}) > 1
        rows.append([Cell(esc(package) + (tag("span", " differs", class_="differs") if differs else ""), package),
                     *[Cell(tag("code", v if v is not None else MISSING), v, False, "differs" if differs else None)
                       for v in values]])
    headers = [tag("span", ", ".join(s.label for s in members)) for members in columns]
    caption = ("Every system recorded the same versions" if len(columns) == 1
               else f"{len(columns)} different sets of versions; marked rows differ")
    return table("versions", ["package", *headers], rows, caption, sortable=False)


def system_details(s: System, n: str) -> Markup:
    configuration = {"retriever": s.get("retriever", {}), "evaluation": s.get("evaluation", {}), "data": s.get("data", {})}
    holes = s.record.get("holes")
    if holes:
        configuration["holes"] = {key: holes.get(key) for key in ("depth", "relevant_from", "judge", "label_mapping")}
    summary = join([tag("strong", s.label), f" (input{'s' if ',' in n else ''} {n}) — {s.source}"])
    body = key_value_table("system-configuration", configuration) + json_details("full record (JSON)", s.record)
    return tag("details", tag("summary", summary) + body, class_="system")
