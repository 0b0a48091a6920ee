"""The import floors, read from the code with `ast` (tools/import_graph.py): cli/ on top, common/
at the bottom importing no room, no cycle between rooms, no module over 400 lines. Each failure
lists the offending modules or import edges. `python tools/import_graph.py` prints the counts."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("irforge_import_graph", ROOT / "tools" / "import_graph.py")
import_graph = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = import_graph
_spec.loader.exec_module(import_graph)


@pytest.fixture(scope="module")
def graph():
    return import_graph.build()


def _listed(items: list[str]) -> str:
    return "\n  " + "\n  ".join(items)


def test_nothing_below_cli_imports_cli(graph):
    found = import_graph.cli_imported_from_below(graph)
    assert not found, f"modules outside irforge/cli/ import irforge.cli (move the shared part below cli/):{_listed(found)}"


def test_only_cli_imports_the_web_front_door(graph):
    found = import_graph.front_doors_imported_from_below(graph)
    assert not found, f"modules outside irforge/cli/ import irforge.web (the web page is a front door like cli/):{_listed(found)}"


def test_the_front_door_rule_can_fail(tmp_path):
    """web/ importing cli/ breaks the cli rule; a room importing web/ breaks the front-door rule; cli/ may import web/."""
    package = tmp_path / "irforge"
    for room in ("", "cli", "web", "judge"):
        (package / room).mkdir(parents=True, exist_ok=True)
        (package / room / "__init__.py").write_text("")
    (package / "web" / "app.py").write_text("from irforge.cli import main\nimport argparse\n")
    (package / "cli" / "main.py").write_text("from irforge.web import app\n")
    (package / "judge" / "core.py").write_text("def f():\n    from irforge.web.app import x\n")
    graph = import_graph.build(package)
    assert import_graph.front_doors_imported_from_below(graph) == ["irforge.judge.core:2 -> irforge.web.app"]
    assert import_graph.cli_imported_from_below(graph) == ["irforge.web.app:1 -> irforge.cli.main"]
    assert import_graph.argparse_outside_cli(graph) == ["irforge.web.app:2 imports argparse"]


def test_argparse_only_in_cli(graph):
    found = import_graph.argparse_outside_cli(graph)
    assert not found, f"argparse outside irforge/cli/ (parse in cli/, pass plain values down):{_listed(found)}"


def test_common_imports_no_room(graph):
    found = import_graph.common_imports_rooms(graph)
    assert not found, f"irforge/common/ imports a room (invert it: a registry, or move the part into common/):{_listed(found)}"


def test_no_cycle_between_rooms(graph):
    assert not import_graph.room_cycles(graph), \
        f"import cycles between rooms (each edge inside a cycle, module:line -> module):{_listed(import_graph.cycle_edges(graph))}"


def test_no_module_over_400_lines(graph):
    found = import_graph.long_modules(graph)
    assert not found, f"hand-written modules over {import_graph.MAX_LINES} lines (split along their seams):{_listed(found)}"


def test_the_graph_sees_lazy_and_relative_imports(tmp_path):
    """The checks can fail: an import inside a function, and a relative one, are both edges."""
    package = tmp_path / "irforge"
    (package / "common").mkdir(parents=True)
    (package / "judge").mkdir()
    for folder in (package, package / "common", package / "judge"):
        (folder / "__init__.py").write_text("")
    (package / "judge" / "errors.py").write_text("class JudgeError(Exception):\n    pass\n")
    (package / "common" / "late.py").write_text("def f():\n    from irforge.judge.errors import JudgeError\n    import argparse\n")
    (package / "judge" / "near.py").write_text("from . import errors\nfrom ..common import late\n")
    graph = import_graph.build(package)
    assert import_graph.common_imports_rooms(graph) == ["irforge.common.late:2 -> irforge.judge.errors"]
    assert import_graph.argparse_outside_cli(graph) == ["irforge.common.late:3 imports argparse"]
    assert ("irforge.judge.near", "irforge.judge.errors", 1) in graph.edges
    assert ("irforge.judge.near", "irforge.common.late", 2) in graph.edges
    assert import_graph.room_cycles(graph) == [["common", "judge"]]


# A server raises the registered error types of every module it imports; its client rebuilds a
# type only if that module is imported on the client's side too (irforge.common.error_status).
SERVERS_AND_CLIENTS = [
    ("irforge.corpus.server", "irforge.corpus.client"),
    ("irforge.evaluator.server", "irforge.evaluator.client"),
    ("irforge.models.server", "irforge.models.client"),
    ("irforge.models.reranker_server", "irforge.endpoints.rerank"),
    ("irforge.judge.server", "irforge.judge.client"),
    ("irforge.orchestrator.server", "irforge.orchestrator.client"),
    ("irforge.leaderboard.server", "irforge.leaderboard.client"),
    ("irforge.accounts.server", "irforge.accounts.client"),
]


@pytest.mark.parametrize(("server", "client"), SERVERS_AND_CLIENTS)
def test_each_client_registers_the_errors_its_server_raises(graph, server, client):
    registering = {name for name, path in graph.modules.items()
                   if "register_status(" in path.read_text(encoding="utf-8") and name != "irforge.common.error_status"}
    missing = sorted((import_graph.loaded_at_import(graph, server) & registering)
                     - import_graph.loaded_at_import(graph, client))
    assert not missing, f"{client} does not import {missing}, whose error types {server} raises: import them there"
