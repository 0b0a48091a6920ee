"""The jobs pages over the Orchestrator core: the caller's jobs, one job's live state (steps,
progress, metrics, the failure and its reason), its events for live.js, and its report. The core
decides what the bound Identity may see (another team's job is JobNotFound, as if it did not
exist); these functions only render what it returns."""

from __future__ import annotations

from pathlib import PurePath
from urllib.parse import quote

from irforge.orchestrator.core import Orchestrator
from irforge.orchestrator.store import JobEvent, JobRecord
from irforge.reports.markup import Cell, Markup, cell, join, metric, table, tag
from irforge.web.pages import paragraph

RUNNING_REFRESH_S = 3       # a running job's page reloads this often (no script needed)
MAIN_METRICS = ("nDCG@10", "Recall@10", "MAP", "MRR@10")


def job_href(job_id: str) -> str:
    return f"/jobs/{quote(job_id, safe='')}"


def dataset_name(record: JobRecord) -> str:
    """The dataset's folder name: a server path is no business of the page (nor of another team)."""
    pipeline = record.spec.get("pipeline") or {}
    dataset = pipeline.get("dataset")
    if dataset:
        return PurePath(str(dataset)).name
    suite = record.spec.get("suite") or {}
    members = suite.get("members") or suite.get("datasets") or []
    return ", ".join(str(m.get("label", "?")) for m in members if isinstance(m, dict)) or "—"


def main_metric(record: JobRecord) -> tuple[str, float | None]:
    for name in MAIN_METRICS:
        if name in record.metrics:
            return name, record.metrics[name]
    return "", None


def state_cell(record: JobRecord) -> Cell:
    return Cell(tag("span", record.state.value, class_=f"state-{record.state.value}"), record.state.value)


def jobs_body(orchestrator: Orchestrator, disclosure, limit: int = 100) -> Markup:
    records = [disclosure.record(r) for r in orchestrator.list(limit)]
    if not records:
        return paragraph("No jobs yet.", class_="note")
    rows = []
    for record in records:
        name, value = main_metric(record)
        rows.append([Cell(tag("a", tag("code", record.job_id), href=job_href(record.job_id)), record.job_id),
                     state_cell(record), dataset_name(record), (record.spec.get("pipeline") or {}).get("retriever", "—"),
                     cell(value, f"{name} {metric(value)}" if name else None), record.created_at, record.updated_at,
                     short(record.error)])
    return table("jobs", ["job", "state", "dataset", "retriever", "main metric", "created", "updated", "reason"], rows,
                 caption=f"The newest {len(rows)} job{'s' if len(rows) != 1 else ''} you may see")


def job_body(orchestrator: Orchestrator, job_id: str, disclosure) -> tuple[Markup, bool]:
    """(the page's body, whether the job is still running). `disclosure`: what the caller may read
    of it (a closed-book dataset's job: messages scrubbed of qrels lines)."""
    record = disclosure.record(orchestrator.get(job_id))     # JobNotFound for a job the caller may not see
    events = [disclosure.event(record.spec, e) for e in orchestrator.watch(job_id, 0, is_active=lambda: False)]
    running = not record.state.ended
    parts = [table("job", ["", "this job"], [["job", Cell(tag("code", record.job_id))], ["state", state_cell(record)],
                                     ["dataset", dataset_name(record)], ["created", record.created_at],
                                     ["updated", record.updated_at]], sortable=False)]
    if running:
        parts.append(progress_block(job_id, events))
    if record.error and record.state.value in ("FAILED", "CANCELLED"):
        parts.append(tag("div", join([tag("h2", "Why it " + ("failed" if record.state.value == "FAILED" else "stopped")),
                                      tag("pre", tag("code", record.error))]), class_="failure", data_failure=""))
    for warning in record.warnings:
        parts.append(paragraph("Warning: ", warning, class_="note"))
    if record.metrics:
        parts.append(tag("h2", "Metrics"))
        parts.append(table("job-metrics", ["measure", "value"],
                           [[name, cell(value)] for name, value in sorted(record.metrics.items())]))
    if record.state.value == "SUCCEEDED":
        parts.append(paragraph(tag("a", "Download the report", href=f"{job_href(job_id)}/report"),
                               " (one self-contained HTML file)."))
    parts.append(tag("h2", "Steps"))
    parts.append(table("job-steps", ["step", "state", "attempts", "started", "finished", "seconds"],
                       [[s.name, s.state, s.executions, s.started_at or "—", s.finished_at or "—",
                         cell(s.duration_s, f"{s.duration_s:.1f}") if s.state == "done" else "—"] for s in record.steps],
                       sortable=False))
    parts.append(tag("h2", "Events"))
    parts.append(table("job-events", ["#", "time", "step", "state", "message"],
                       [[e.sequence, e.time, e.step or "job", e.state, short(e.message, 300)]
                        for e in events if e.state != "progress"][-200:], sortable=False))
    return join(parts), running


def progress_block(job_id: str, events: list[JobEvent]) -> Markup:
    """The newest progress of the running job; live.js updates the line from the event stream."""
    latest = next((e for e in reversed(events) if e.state == "progress"), None)
    bar = Markup("")
    if latest is not None and latest.total:
        bar = Markup(f'<progress value="{int(latest.done)}" max="{int(latest.total)}"></progress> ')
    text = progress_text(latest) if latest else (events[-1].state if events else "waiting to start")
    return tag("div", join([tag("h2", "Progress"), paragraph(bar, tag("span", text, id="live-progress")),
                            paragraph(f"This page reloads every {RUNNING_REFRESH_S} s while the job runs.", class_="note")]),
               data_live=f"{job_href(job_id)}/events", data_live_events="0")


def progress_text(event: JobEvent) -> str:
    amount = f" {event.done}/{event.total}" if event.total else (f" {event.done}" if event.done else "")
    return f"{event.step + ': ' if event.step else ''}{event.state}{amount}" + (f" - {event.message}" if event.message else "")


def event_payload(event: JobEvent) -> dict:
    return {"sequence": event.sequence, "step": event.step, "state": event.state, "done": event.done,
            "total": event.total, "message": short(event.message, 300)}


def new_events(orchestrator: Orchestrator, job_id: str, after: int, disclosure) -> tuple[list[JobEvent], bool]:
    """The events after `after` stored now, and whether the job has ended (for the SSE stream)."""
    record = orchestrator.get(job_id)      # read first: the last event precedes the state
    events = orchestrator.watch(job_id, after, is_active=lambda: False)
    return [disclosure.event(record.spec, e) for e in events], record.state.ended


def job_report(orchestrator: Orchestrator, job_id: str, disclosure) -> str:
    """The report of the job's results (reports/page.py's self-contained page), built from what the
    caller may read of them: a closed-book job's results.json as disclosure gives it."""
    import tempfile
    from pathlib import Path

    from irforge.reports.inputs import load_inputs
    from irforge.reports.page import build_report

    record = disclosure.record(orchestrator.get(job_id))
    folder = orchestrator.results_dir(job_id)    # ResultsNotReady until it SUCCEEDED
    shown = disclosure.result_file(record.spec, "results.json", folder / "results.json")
    title, command = f"irforge job {job_id}", f"web: report of job {job_id}"
    if isinstance(shown, Path):
        return build_report(load_inputs([str(shown)]), title=title, command=command)
    with tempfile.TemporaryDirectory(prefix="irforge-web-report-") as scratch:   # removed however the build ends
        disclosed = Path(scratch) / job_id / "results.json"
        disclosed.parent.mkdir()
        disclosed.write_bytes(shown or b"{}")
        return build_report(load_inputs([str(disclosed)]), title=title, command=command)


def short(text: str, limit: int = 160) -> str:
    text = str(text or "")
    return text if len(text) <= limit else text[: limit - 1] + "…"

