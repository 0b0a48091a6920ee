"""The document: the sections in one HTML file with its style and script inline, and a
Content-Security-Policy that forbids the browser to load anything from outside it, so the page
works offline and cannot leak a request even if an input smuggled in a URL. The policy admits
the page's own <script> and <style> by their SHA-256 and nothing else inline: escaping is then
not the only defence, as a script an input smuggled in past it would not run."""

from __future__ import annotations

import base64
import hashlib
import platform
from datetime import datetime, timezone
from pathlib import Path

from irforge import __version__
from irforge.common.files import atomic_write
from irforge.reports.inputs import ReportInput
from irforge.reports.markup import Markup, esc, join, table, tag
from irforge.reports.published import published_section
from irforge.reports.reproducibility import reproducibility_section
from irforge.reports.sections import comparison_section, results_section, suite_comparison_section, suite_section

STYLE = """
:root{color-scheme:light;--ink:#1a1a1a;--muted:#595959;--line:#d0d7de;--head:#eef1f4;--better:#2166ac;--worse:#b35900}
body{font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink);margin:0;background:#fff}
header,nav,main,footer{max-width:1400px;margin:0 auto;padding:0 24px}
p,.legend{max-width:75em}
h1{font-size:1.7rem;margin:24px 0 4px}
h2{border-bottom:2px solid var(--line);padding-bottom:4px;margin:40px 0 8px}
h3{margin:24px 0 6px;font-size:1.05rem}
.meta,.note{color:var(--muted)}.note{font-style:italic}
nav ol{display:flex;flex-wrap:wrap;gap:4px 20px;padding:0;margin:12px 0;list-style:none}
.scroll{overflow-x:auto;max-width:100%;margin:6px 0 14px}
table.data{border-collapse:collapse;font-size:13px}
caption{caption-side:top;text-align:left;color:var(--muted);padding:2px 0 4px}
th,td{border:1px solid var(--line);padding:4px 8px;text-align:left;vertical-align:top}
thead th{background:var(--head);vertical-align:bottom}
tbody th,tfoot th{white-space:nowrap}
tbody tr:nth-child(even){background:#f8f9fa}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tfoot th,tfoot td{font-weight:600;border-top:2px solid var(--ink);background:#f3f5f7}
sup{color:var(--better);font-weight:700;margin-left:2px}
.letter{color:var(--muted);font-family:ui-monospace,monospace}
td.best strong,td.significant strong,.sig{color:var(--better)}
.legend{font-size:14px}
code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px}
code.hash{word-break:break-all}
.status-ok{color:#1a7f37;font-weight:600}.status-bad,.differs{color:var(--worse);font-weight:600}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(520px,1fr));gap:14px;margin:8px 0}
figure.chart{margin:0;border:1px solid var(--line);border-radius:6px;padding:6px;background:#fff}
figure.chart svg{width:100%;height:auto;display:block}
details{margin:8px 0;border:1px solid var(--line);border-radius:6px;padding:4px 10px}
summary{cursor:pointer;padding:2px 0}
pre{max-height:420px;overflow:auto;background:#f6f8fa;padding:8px;margin:6px 0}
th.sort{cursor:pointer}th[aria-sort=ascending]::after{content:" \\25B2"}th[aria-sort=descending]::after{content:" \\25BC"}
footer{color:var(--muted);margin-top:40px;padding-bottom:32px}
@media print{nav{display:none}details{border:0}.charts{display:block}figure.chart{break-inside:avoid;margin-bottom:8px}
.scroll{overflow:visible}td.num,tbody th{white-space:normal}}
"""

# First thing in <body>: every uncaught error lands in data-script-errors, which a headless
# browser's --dump-dom shows (the attribute, present and empty, also says this script ran).
ERROR_RECORDER = """(function(){var b=document.body;b.setAttribute("data-script-errors","");
window.addEventListener("error",function(e){var s=b.getAttribute("data-script-errors");
b.setAttribute("data-script-errors",(s?s+" | ":"")+(e.message||"error")+" (line "+(e.lineno||0)+")");});})();"""

# Last thing in <body>: optional column sorting (the page is complete without it), then the marker.
SORTING = """(function(){
function key(c){if(!c)return"";var s=c.getAttribute("data-sort");
if(s!==null&&c.classList.contains("num")){var v=parseFloat(s);if(!isNaN(v))return v;}return s!==null?s:c.textContent.trim();}
function order(a,b,up){if(typeof a==="number"&&typeof b==="number")return up?a-b:b-a;
if(typeof a==="number")return -1;if(typeof b==="number")return 1;return up?String(a).localeCompare(b):String(b).localeCompare(a);}
Array.prototype.forEach.call(document.querySelectorAll("table.sortable"),function(t){
var heads=t.tHead.rows[0].cells;
Array.prototype.forEach.call(heads,function(th,col){
th.tabIndex=0;th.classList.add("sort");th.setAttribute("aria-sort","none");th.title="sort by this column";
function sort(){var body=t.tBodies[0],up=th.getAttribute("aria-sort")!=="ascending";
var rows=Array.prototype.slice.call(body.rows);rows.sort(function(a,b){return order(key(a.cells[col]),key(b.cells[col]),up);});
rows.forEach(function(r){body.appendChild(r);});
Array.prototype.forEach.call(heads,function(h){h.setAttribute("aria-sort","none");});
th.setAttribute("aria-sort",up?"ascending":"descending");}
th.addEventListener("click",sort);
th.addEventListener("keydown",function(e){if(e.key==="Enter"||e.key===" "){e.preventDefault();sort();}});});});
document.body.setAttribute("data-rendered","ok");})();"""


def hash_source(text: str) -> str:
    """A CSP source admitting exactly this inline script or style (its SHA-256, base64)."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


CSP = (f"default-src 'none'; style-src {hash_source(STYLE)}; script-src {hash_source(ERROR_RECORDER)} "
       f"{hash_source(SORTING)}; img-src data:; base-uri 'none'; form-action 'none'")


def default_title(inputs: list[ReportInput]) -> str:
    kinds = sorted({item.kind for item in inputs})
    datasets = sorted({str(s.get("dataset")) for item in inputs for s in item.systems if s.get("dataset")})
    return f"irforge report: {', '.join(kinds)}" + (f" on {', '.join(datasets)}" if datasets else "")


def systems_and_datasets(item: ReportInput) -> tuple[int, int]:
    """How many systems and datasets an input holds: a suite is one system on its datasets (its rows
    are datasets), a suite comparison its systems on the datasets they share."""
    if item.kind == "suite":
        return 1, len(item.record["datasets"])
    if item.kind == "suite-comparison":
        return len(item.record["systems"]), len(item.record["datasets"])
    return len(item.systems), len({str(s.get("dataset")) for s in item.systems if s.get("dataset")})


def build_report(inputs: list[ReportInput], title: str | None = None, command: str | None = None,
                 created_at: str | None = None, published: list | None = None) -> str:
    """The whole page as a string (every input string escaped)."""
    created_at = created_at or datetime.now(timezone.utc).isoformat(timespec="seconds")
    title = title or default_title(inputs)
    sections: list[tuple[str, str, Markup]] = []
    for n, item in enumerate(inputs, start=1):
        if item.kind == "comparison":
            sections.append((f"comparison-{n}", f"Comparison ({item.given})", comparison_section(f"comparison-{n}", item)))
        elif item.kind == "suite-comparison":
            sections.append((f"suites-{n}", f"Suites compared ({item.given})", suite_comparison_section(f"suites-{n}", item)))
            for m, child in enumerate(item.children, start=1):
                anchor = f"suites-{n}-{m}"
                sections.append((anchor, f"Comparison ({child.given})", comparison_section(anchor, child)))
        elif item.kind == "suite":
            name = item.record.get("name", item.given)
            sections.append((f"suite-{n}", f"Suite {name}", suite_section(f"suite-{n}", item)))
    results = [item for item in inputs if item.kind in ("results", "instructions")]
    if results:
        sections.append(("results", "Results", results_section("results", results)))
    if published:   # MTEB's published figures (irforge.results.mteb), beside the team's
        sections.append(("mteb", "Published MTEB figures", published_section("mteb", inputs, published)))
    made = {"irforge": __version__, "python": platform.python_version(), "created_at": created_at,
            "command": command or "(built from Python)", "inputs": [item.given for item in inputs]}
    sections.append(("reproducibility", "Reproducibility", reproducibility_section("reproducibility", inputs, made)))

    input_rows = [[n, item.given, item.kind, *systems_and_datasets(item), item.record.get("created_at"),
                   tag("code", item.sha256[:16] + "…", title=item.sha256)] for n, item in enumerate(inputs, start=1)]
    # Figures of `irforge eval --sample N` are not the dataset's: said first, for each such input.
    samples = [tag("p", tag("strong", f"{item.given}: {item.record['sample'].get('note')}"), class_="status-bad sample")
               for item in inputs if isinstance(item.record.get("sample"), dict)]
    header = tag("header", join([
        tag("h1", title),
        *samples,
        tag("p", f"Made by irforge {__version__} on {created_at} from {len(inputs)} input{'s' if len(inputs) != 1 else ''}. "
                 "Self-contained: nothing is loaded from elsewhere; tables sort on a header click where scripts run.",
            class_="meta"),
        table("inputs", ["#", "input", "kind", "systems", "datasets", "created", "sha256"], input_rows, "Inputs",
              header_first=False),
    ]))
    nav = tag("nav", tag("ol", join(tag("li", tag("a", name, href=f"#{anchor}")) for anchor, name, _ in sections)),
              aria_label="sections")
    body = join([Markup(f"<script>{ERROR_RECORDER}</script>"), header, nav,
                 tag("main", join(fragment for _, _, fragment in sections)),
                 tag("footer", f"irforge {__version__} · {created_at}"), Markup(f"<script>{SORTING}</script>")])
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<meta name=\"generator\" content=\"irforge {esc(__version__)}\">"
            f"<title>{esc(title)}</title><style>{STYLE}</style></head>\n<body>{body}</body></html>\n")


def write_report(path: str | Path, document: str) -> Path:
    """Written beside its final name and renamed over it: a reader never sees half a page."""
    with atomic_write(path) as handle:
        handle.write(document)
    return Path(path)
