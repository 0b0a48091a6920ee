"""The import floors of services/irforge, read from the code with `ast`, and their violations.

Run it to print the counts the lead reports (and every offending module or edge):

    python tools/import_graph.py          # counts, then the details
    python tools/import_graph.py --counts # counts only

tests/test_architecture.py asserts the same rules with this module. Stdlib only.

Definitions:
- A module is every .py file under services/irforge except the generated contract code in
  irforge/v1 (which any room may import, and which is exempt from every rule).
- Every `import` and `from ... import` anywhere in a module counts, lazy ones inside functions and
  `if TYPE_CHECKING:` blocks included. `from pkg import name` counts as importing pkg.name when
  that is a module, else pkg.
- A room is a top-level subpackage (irforge.corpus, irforge.judge, ...) or a top-level module
  (irforge/api.py, irforge/ranking.py, irforge/results.py count as rooms of their own). The
  package root irforge/__init__.py is no room: every import of any irforge module runs it anyway,
  so importing it (`from irforge import __version__`) adds no dependency worth a floor.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE_DIR = ROOT / "services" / "irforge"
MAX_LINES = 400
GENERATED_ROOM = "v1"
TOP_FLOOR = "cli"
# Front doors beside cli/ on the top floor: only cli/ may import them (to start them), and they,
# like every room, never import cli/ or argparse.
FRONT_DOORS = ("web",)
GROUND_FLOOR = "common"


def module_name(path: Path, package_dir: Path = PACKAGE_DIR) -> str:
    parts = list(path.relative_to(package_dir.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def room_of(module: str) -> str | None:
    """irforge.corpus.lexical.bm25 -> 'corpus'; irforge.ranking -> 'ranking'; irforge -> None."""
    parts = module.split(".")
    if parts[0] != "irforge" or len(parts) < 2:
        return None
    return parts[1]


@dataclass
class ImportGraph:
    modules: dict[str, Path] = field(default_factory=dict)  # irforge module name -> file
    # (importer module, imported module, line) for every import of an irforge module
    edges: list[tuple[str, str, int]] = field(default_factory=list)
    # (importer module, top-level name of a module outside irforge, line)
    external: list[tuple[str, str, int]] = field(default_factory=list)
    lines: dict[str, int] = field(default_factory=dict)


def build(package_dir: Path = PACKAGE_DIR) -> ImportGraph:
    graph = ImportGraph()
    for path in sorted(package_dir.rglob("*.py")):
        name = module_name(path, package_dir)
        if room_of(name) == GENERATED_ROOM:
            continue
        graph.modules[name] = path
    for name, path in graph.modules.items():
        source = path.read_text(encoding="utf-8")
        graph.lines[name] = len(source.splitlines())
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(source, filename=str(path))):
            for target, line in _imported(node, name, is_package, graph.modules):
                if target == "irforge" or target.startswith("irforge."):
                    graph.edges.append((name, target, line))
                else:
                    graph.external.append((name, target.split(".")[0], line))
    graph.edges = sorted(set(graph.edges), key=lambda e: (e[0], e[2], e[1]))
    graph.external = sorted(set(graph.external), key=lambda e: (e[0], e[2], e[1]))
    return graph


def _imported(node: ast.AST, importer: str, is_package: bool, modules: dict[str, Path]):
    if isinstance(node, ast.Import):
        for alias in node.names:
            yield alias.name, node.lineno
    elif isinstance(node, ast.ImportFrom):
        if node.level:
            base = importer.split(".")
            if not is_package:
                base = base[:-1]
            base = base[: len(base) - (node.level - 1)]
            if node.module:
                base = base + node.module.split(".")
            source = ".".join(base)
        else:
            source = node.module or ""
        for alias in node.names:
            candidate = f"{source}.{alias.name}"
            yield (candidate if candidate in modules else source), node.lineno


def loaded_at_import(graph: ImportGraph, module: str) -> set[str]:
    """The irforge modules importing `module` loads: its module-level imports (those in `if` and
    `try` blocks included, not those inside functions), transitively, with their packages."""
    top: dict[str, set[str]] = {}

    def edges_of(name: str) -> set[str]:
        if name not in top:
            path = graph.modules[name]
            found = set()
            for node in ast.parse(path.read_text(encoding="utf-8")).body:
                for inner in (ast.walk(node) if isinstance(node, (ast.If, ast.Try)) else [node]):
                    for target, _ in _imported(inner, name, path.name == "__init__.py", graph.modules):
                        if target.startswith("irforge."):
                            found.add(target)
            top[name] = found
        return top[name]

    seen: set[str] = set()
    stack = [module]
    while stack:
        parts = stack.pop().split(".")
        for i in range(2, len(parts) + 1):
            name = ".".join(parts[:i])
            if name in graph.modules and name not in seen:
                seen.add(name)
                stack.extend(edges_of(name))
    return seen


# -- the rules -------------------------------------------------------------------------------------

def cli_imported_from_below(graph: ImportGraph) -> list[str]:
    return [f"{src}:{line} -> {dst}" for src, dst, line in graph.edges
            if room_of(dst) == TOP_FLOOR and room_of(src) != TOP_FLOOR]


def front_doors_imported_from_below(graph: ImportGraph) -> list[str]:
    return [f"{src}:{line} -> {dst}" for src, dst, line in graph.edges
            if room_of(dst) in FRONT_DOORS and room_of(src) not in (TOP_FLOOR, room_of(dst))]


def argparse_outside_cli(graph: ImportGraph) -> list[str]:
    return [f"{src}:{line} imports argparse" for src, name, line in graph.external
            if name == "argparse" and room_of(src) != TOP_FLOOR]


def common_imports_rooms(graph: ImportGraph) -> list[str]:
    return [f"{src}:{line} -> {dst}" for src, dst, line in graph.edges
            if room_of(src) == GROUND_FLOOR and room_of(dst) not in (None, GROUND_FLOOR, GENERATED_ROOM)]


def room_edges(graph: ImportGraph) -> dict[tuple[str, str], list[str]]:
    """(room, room) -> the module imports that make it, for every import between two rooms."""
    edges: dict[tuple[str, str], list[str]] = {}
    for src, dst, line in graph.edges:
        a, b = room_of(src), room_of(dst)
        if a and b and a != b and GENERATED_ROOM not in (a, b):
            edges.setdefault((a, b), []).append(f"{src}:{line} -> {dst}")
    return edges


def room_cycles(graph: ImportGraph) -> list[list[str]]:
    """The strongly connected components of the room graph that hold more than one room."""
    edges = room_edges(graph)
    successors: dict[str, set[str]] = {}
    for a, b in edges:
        successors.setdefault(a, set()).add(b)
        successors.setdefault(b, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = [0]

    def visit(node: str) -> None:  # Tarjan; the room graph is a few dozen nodes, recursion is fine
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(successors[node]):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(successors):
        if node not in index:
            visit(node)
    return sorted(components)


def cycle_edges(graph: ImportGraph) -> list[str]:
    """Every module import that is an edge inside a room cycle, grouped by cycle."""
    edges = room_edges(graph)
    out = []
    for component in room_cycles(graph):
        members = set(component)
        out.append(f"cycle between rooms {', '.join(component)}:")
        for (a, b), imports in sorted(edges.items()):
            if a in members and b in members:
                out.append(f"  {a} -> {b}")
                out.extend(f"    {imp}" for imp in imports)
    return out


def long_modules(graph: ImportGraph) -> list[str]:
    return [f"{name} ({count} lines)" for name, count in sorted(graph.lines.items()) if count > MAX_LINES]


RULES = {
    "imports of irforge.cli from below cli/": cli_imported_from_below,
    "imports of a front door (web/) from below cli/": front_doors_imported_from_below,
    "argparse imported outside cli/": argparse_outside_cli,
    "common/ importing another room": common_imports_rooms,
    "modules over 400 lines": long_modules,
}


def main(argv: list[str]) -> int:
    graph = build()
    found = {title: rule(graph) for title, rule in RULES.items()}
    cycles = room_cycles(graph)
    for title, items in found.items():
        print(f"{title}: {len(items)}")
    print(f"room cycles (strongly connected components > 1 room): {len(cycles)}"
          + (f" ({'; '.join(' '.join(c) for c in cycles)})" if cycles else ""))
    if "--counts" not in argv:
        for title, items in found.items():
            if items:
                print(f"\n{title}:")
                print("\n".join(f"  {item}" for item in items))
        if cycles:
            print("\nroom cycles:")
            print("\n".join(f"  {line}" for line in cycle_edges(graph)))
    return 1 if any(found.values()) or cycles else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
