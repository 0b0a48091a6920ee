"""The pages' only style and scripts, served from this origin under /static/: the report's own
style sheet and scripts (reports/page.py: one look, one sorting script), the web's few extra rules,
and live.js, which follows a running job over Server-Sent Events. Every page works without them."""

from __future__ import annotations

import hashlib

from irforge.reports.page import ERROR_RECORDER, SORTING, STYLE

WEB_STYLE = """
header.site{display:flex;flex-wrap:wrap;align-items:baseline;gap:4px 24px;border-bottom:1px solid var(--line)}
header.site .brand{font-weight:700;font-size:1.2rem;margin:12px 0}
header.site nav{margin:0;padding:0}header.site nav a{margin-right:16px}
header.site form{margin-left:auto}
form.filters{display:flex;flex-wrap:wrap;gap:8px 16px;align-items:end;margin:12px 0}
form.filters label{display:flex;flex-direction:column;font-size:13px;color:var(--muted)}
form.login{max-width:28em;margin:24px 0;display:flex;flex-direction:column;gap:8px}
input,select,button{font:inherit;padding:3px 6px}
.state-SUCCEEDED{color:#1a7f37;font-weight:600}.state-FAILED,.state-CANCELLED{color:var(--worse);font-weight:600}
.state-RUNNING,.state-QUEUED{color:var(--better);font-weight:600}
.failure{border-left:4px solid var(--worse);padding:4px 10px;background:#fff8f0}
.failure pre{white-space:pre-wrap;overflow-wrap:anywhere}
.error{color:var(--worse)}
progress{width:20em}
"""

LIVE = """(function(){
var box=document.querySelector("[data-live]");if(!box||!window.EventSource)return;
var seen=0,source=new EventSource(box.getAttribute("data-live"));
function show(text){var p=document.getElementById("live-progress");if(p)p.textContent=text;}
source.addEventListener("progress",function(e){var d=JSON.parse(e.data);seen+=1;box.setAttribute("data-live-events",String(seen));
show((d.step?d.step+": ":"")+d.state+(d.total?" "+d.done+"/"+d.total:(d.done?" "+d.done:""))+(d.message?" - "+d.message:""));});
source.addEventListener("end",function(){source.close();window.location.reload();});
source.onerror=function(){source.close();};})();"""

# name -> (body, media type)
ASSETS = {
    "style.css": (STYLE + WEB_STYLE, "text/css; charset=utf-8"),
    "errors.js": (ERROR_RECORDER, "text/javascript; charset=utf-8"),
    "sort.js": (SORTING, "text/javascript; charset=utf-8"),
    "live.js": (LIVE, "text/javascript; charset=utf-8"),
}
ETAGS = {name: '"' + hashlib.sha256(body.encode("utf-8")).hexdigest()[:32] + '"' for name, (body, _) in ASSETS.items()}
