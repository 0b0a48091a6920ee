"""Helpers shared by the benchmark scripts: machine info, peak memory, tables, the results file.

Not a benchmark itself; the scripts import it from their own folder (`python benchmarks/<script>.py`
puts benchmarks/ first on sys.path).
"""

from __future__ import annotations

import datetime as _dt
import gc
import json
import os
import platform
import sys
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

RESULTS_DIR = Path(__file__).resolve().parent / "results"
_LOAD_AT_START = os.getloadavg() if hasattr(os, "getloadavg") else None
PACKAGES = ("irforge", "pytrec_eval-terrier", "bm25s", "PyStemmer", "numpy", "scipy")


def machine_info() -> dict[str, Any]:
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        usable = os.cpu_count()
    return {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": _cpu_model() or platform.processor(),
        "cpu_count": os.cpu_count(),
        "cpus_usable": usable,
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "packages": versions,
    }


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


# -- peak memory -------------------------------------------------------------------------------
# Linux only: writing "5" to /proc/self/clear_refs resets the peak resident set size (VmHWM). Each
# function is run once in a forked child, so every one starts from the same state (only the inputs
# resident, no memory freed-but-kept by earlier variants) and its extra peak is its own.

def _status_kib(field: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def _reset_peak() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


MEMORY_METHOD = "one extra run in a forked child: VmHWM after clear_refs minus VmRSS before (Linux)"


def extra_peak_mib(function: Callable[[], Any]) -> float | None:
    """Peak resident memory of one run of `function` above what is resident before it, in MiB.

    None where it cannot be measured (no fork, no /proc/self/clear_refs).
    """
    if not hasattr(os, "fork") or _status_kib("VmHWM") is None:
        return None
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: measure, report through the pipe, exit without cleanup
        value = b""
        try:
            gc.collect()
            before = _status_kib("VmRSS")
            if _reset_peak():
                function()
                value = str((_status_kib("VmHWM") - before) / 1024).encode()
        finally:
            os.write(write_end, value)
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        data = pipe.read()
    os.waitpid(pid, 0)
    return max(0.0, float(data)) if data else None


def measure(function: Callable[[], Any], repeat: int) -> tuple[Any, list[float]]:
    """Run `function` `repeat` times; return (last result, seconds per run)."""
    seconds: list[float] = []
    result = None
    for _ in range(repeat):
        result = None  # free the previous run's result before timing the next
        gc.collect()
        start = time.perf_counter()
        result = function()
        seconds.append(time.perf_counter() - start)
    return result, seconds


def measure_interleaved(functions: dict[str, Callable[[], Any]], repeat: int) -> dict[str, tuple[Any, list[float]]]:
    """As `measure` for several functions, one run of each per round, in turn: a burst of other
    work on a shared machine then slows every function alike instead of all rounds of one."""
    seconds: dict[str, list[float]] = {name: [] for name in functions}
    results: dict[str, Any] = {}
    for _ in range(repeat):
        for name, function in functions.items():
            results[name] = None  # free the previous run's result before timing the next
            gc.collect()
            start = time.perf_counter()
            results[name] = function()
            seconds[name].append(time.perf_counter() - start)
    return {name: (results[name], seconds[name]) for name in functions}


def rss_mib() -> float | None:
    value = _status_kib("VmRSS")
    return None if value is None else value / 1024


# -- output -------------------------------------------------------------------------------------

def table(headers: list[str], rows: list[list[Any]]) -> str:
    cells = [[str(h) for h in headers]] + [[_fmt(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = []
    for n, row in enumerate(cells):
        lines.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))))
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if value == 0:
            return "0"
        if abs(value) < 1e-3:
            return f"{value:.1e}"
        if abs(value) >= 100:
            return f"{value:,.0f}"
        return f"{value:.3f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def write_results(script_file: str, payload: dict[str, Any]) -> Path:
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"{Path(script_file).stem}.json"
    document = {
        "benchmark": Path(script_file).stem,
        "run_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "machine": machine_info(),
        # 1/5/15-minute load averages: other work on the machine shows here and slows every figure
        "load_average": {"at_start": _LOAD_AT_START, "at_end": os.getloadavg() if hasattr(os, "getloadavg") else None},
        **payload,
    }
    path.write_text(json.dumps(document, indent=2, sort_keys=False) + "\n")
    load = document["load_average"]
    if load["at_start"] is not None:
        print("load average (1/5/15 min) at start %s, at end %s: anything else running slows every figure"
              % ("/".join(f"{x:.2f}" for x in load["at_start"]), "/".join(f"{x:.2f}" for x in load["at_end"])))
    return path
