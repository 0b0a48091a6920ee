"""The report's section of published MTEB figures beside the team's (`irforge report --mteb`):
means only, said in the section (MTEB publishes no per-query values)."""

from __future__ import annotations

from irforge.reports.inputs import ReportInput
from irforge.reports.markup import Markup, signed, table
from irforge.reports.sections import paragraph, section
from irforge.results.mteb import beside_published


def figures_of_inputs(inputs: list[ReportInput]) -> list[dict]:
    """Every system's own means per dataset in the inputs: results and comparisons (each system's
    reported metrics), suites (each dataset's row) and suite comparisons (their comparisons)."""
    rows = []
    for item in inputs:
        if item.kind == "suite":
            name = str(item.record.get("name") or item.given)
            for entry in item.record.get("datasets") or []:
                rows.append({"system": name, "dataset": entry.get("dataset") or entry.get("label"),
                             "split": entry.get("split") or item.record.get("split"), "metrics": entry.get("metrics") or {}})
            continue
        for child in (item.children or [item]):
            for system in child.systems:
                rows.append({"system": system.label, "dataset": system.get("dataset"), "split": system.get("split"),
                             "metrics": system.reported})
    return rows


def published_section(anchor: str, inputs: list[ReportInput], published: list) -> Markup:
    beside = beside_published(figures_of_inputs(inputs), published)
    rows = [[r["system"], r["dataset"], r["task"], r["split"], r["measure"], r["team"], r["mteb"], signed(r["difference"]),
             f"{r['mteb_model'] or '?'} @ {r['mteb_revision'] or '?'}"] for r in beside["rows"]]
    notes = [paragraph(f"Not shown: {line}", class_="note") for line in beside["unmatched"]]
    return section(
        anchor, "Published MTEB figures",
        paragraph(f"Each system's own mean beside the figure MTEB published for the task ({beside['note']}). "
                  f"Files: {', '.join(beside['files'])}.", class_="note"),
        table("mteb-published", ["system", "dataset", "MTEB task", "split", "measure", "team", "MTEB", "team − MTEB",
                                 "MTEB model"], rows, "Team and MTEB, per dataset and measure (means)"),
        *notes)
