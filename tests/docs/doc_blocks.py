"""The code blocks of README.md and docs/*.md, as CommonMark sees them (markdown-it-py: indented
blocks, fences, blocks nested in list items), and the `irforge` command lines inside them.

A *command block* is every indented block and every fence not tagged as data or code of another
language (yaml, json, python...): an untagged fence may hold a command as well as an output sample,
so the test decides which it is, never this module.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parents[2]
DATA_LANGUAGES = {"yaml", "yml", "json", "python", "py", "toml", "text", "proto"}
SHELL_LANGUAGES = {"", "bash", "sh", "shell", "console"}
SUBSTITUTION = re.compile(r"\$\(([^()]*)\)")     # $(...) without nesting: what the docs write
# A synopsis, not a command: optional [--flags], ALL-CAPS placeholders (DIR, HOST:PORT), `...`, <encoder flags>.
SYNOPSIS = re.compile(r"\[\s*-|\.\.\.|<[a-z][a-z ]*>|(?<![\w$/.-])[A-Z][A-Z_]+(?::[A-Z]+)?(?![\w=-])")


@dataclass(frozen=True)
class Block:
    path: str            # relative to the repository root
    line: int            # 1-based line of the block's first line in the file
    info: str            # the fence's language tag ('' for indented blocks)
    text: str

    @property
    def first_line(self) -> str:
        return self.text.strip().splitlines()[0].strip()

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"

    def logical_lines(self) -> list[str]:
        """Lines as the shell reads them: a trailing backslash joins the next line."""
        lines, pending = [], ""
        for raw in self.text.splitlines():
            if raw.rstrip().endswith("\\"):
                pending += raw.rstrip()[:-1] + " "
                continue
            lines.append(pending + raw)
            pending = ""
        if pending:
            lines.append(pending)
        return [line for line in lines if line.strip()]


def documented_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def code_blocks(path: Path) -> list[Block]:
    blocks = []
    for token in MarkdownIt("commonmark").parse(path.read_text(encoding="utf-8")):
        if token.type in ("code_block", "fence"):
            # A fence's map starts at its ``` line; its content at the next one.
            line = token.map[0] + 1 + (token.type == "fence")
            blocks.append(Block(str(path.relative_to(ROOT)), line, token.info.strip().split(" ")[0], token.content))
    return blocks


def command_blocks() -> list[Block]:
    return [block for path in documented_files() for block in code_blocks(path)
            if block.info.lower() not in DATA_LANGUAGES]


def yaml_block(path: str, marker: str) -> str:
    """The one YAML fence of `path` containing `marker` (a spec the docs show and commands name)."""
    found = [b.text for b in code_blocks(ROOT / path) if b.info in ("yaml", "yml") and marker in b.text]
    assert len(found) == 1, f"{path}: {len(found)} YAML blocks contain {marker!r}"
    return found[0]


def segments(line: str) -> list[list[str]]:
    """The simple commands of one logical line, as argv lists: $(...) bodies, and the pieces
    between ; && || | — comments dropped, leading VAR=value assignments dropped."""
    inner = SUBSTITUTION.findall(line)
    outer = SUBSTITUTION.sub("SUBSTITUTED", line)
    commands = []
    for text in [outer, *inner]:
        lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        current: list[str] = []
        for token in lexer:
            if token and set(token) <= set(";&|"):
                commands.append(current)
                current = []
            else:
                current.append(token)
        commands.append(current)
    result = []
    for argv in commands:
        while argv and re.fullmatch(r"[A-Za-z_]\w*=.*", argv[0]):
            argv = argv[1:]
        if argv:
            result.append(argv)
    return result


def irforge_commands(line: str) -> list[list[str]]:
    """Each `irforge ...` (or `.venv/bin/irforge ...`) in a logical line: its arguments."""
    return [argv[1:] for argv in segments(line) if argv[0] == "irforge" or argv[0].endswith("/bin/irforge")]


def is_synopsis(line: str) -> bool:
    text = SUBSTITUTION.sub("", line.split(" #", 1)[0])
    return bool(SYNOPSIS.search(text))


def synopsis_flags(block: Block) -> list[tuple[str, str]]:
    """(subcommand, flag) for every option a synopsis block names; a line without `irforge SUB`
    continues the previous one (synopses wrap without backslashes)."""
    found, command = [], None
    for raw in block.text.splitlines():
        text = raw.split(" # ", 1)[0]
        match = re.search(r"(?:^|\s)irforge\s+([a-z][a-z-]*)(.*)", text)
        if match:
            command, text = match.group(1), match.group(2)
        if command:
            found += [(command, flag) for flag in re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", text)]
    return found
