"""The labelling prompt: AIR-Bench's 0-3 scale (../shared/PRODUCT.md section 4) in our own words.

A template is plain text with a `{query}` and a `{document}` placeholder (each at least once);
literal braces are written `{{` and `}}` (Python's str.format rules). Any other placeholder is
an error, raised when the spec is loaded, not half way through a run.

    template = load_template(None)                        # the default below
    template = load_template("prompts/judge.txt", base_dir=spec_folder)   # a file
    template = load_template("Query: {query}\nDoc: {document}\nLabel 0-3:")  # inline text
    template.render(query, document); template.sha256     # the hash judgements record

The hash is over the template text, so changing one word changes the judge's identity and the
store asks again instead of reusing labels given to a different prompt.
"""

from __future__ import annotations

import hashlib
import string
from dataclasses import dataclass
from pathlib import Path

from irforge.common.allowed_roots import checked
from irforge.judge.errors import JudgeSpecError

PLACEHOLDERS = ("query", "document")

DEFAULT_TEMPLATE = """\
You are judging search results. Decide how relevant the document is to the query.

Query: {query}

Document: {document}

Answer with one number from this scale:
0 = not relevant: the document has nothing to do with the query.
1 = superficially relevant but actually not: it shares words or the topic, but does not help answer the query.
2 = somewhat relevant: it partly answers the query or gives useful related information.
3 = relevant: it answers the query.

Reply with the single number only (0, 1, 2 or 3), with no explanation."""


@dataclass(frozen=True)
class Template:
    text: str
    source: str = "default"     # "default", "inline" or the file path, for messages and results

    @property
    def sha256(self) -> str:
        return template_sha256(self.text)

    def render(self, query: str, document: str) -> str:
        # str.format parses only the template: braces inside the query or document stay literal.
        return self.text.format(query=query, document=document)


def template_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def check_template(text: str, where: str) -> None:
    """Raise JudgeSpecError unless `text` has {query} and {document} and no other placeholder."""
    if not isinstance(text, str) or not text.strip():
        raise JudgeSpecError(f"{where}: the template is empty")
    try:
        parsed = [(name, spec, conversion) for _, name, spec, conversion in string.Formatter().parse(text)
                  if name is not None]
    except ValueError as error:  # a lone "{" or "}"
        raise JudgeSpecError(f"{where}: the template is not valid ({error}); write literal braces as {{{{ and }}}}") from None
    fields = [name for name, _, _ in parsed]
    # A format spec or conversion ({query!r}, {document:.100}) changes the text the judge sees in
    # ways a reader of the template misses; keep placeholders plain.
    decorated = [f"{{{name}!{conversion}}}" if conversion else f"{{{name}:{spec}}}"
                 for name, spec, conversion in parsed if spec or conversion]
    unknown = sorted({name for name in fields if name not in PLACEHOLDERS})
    if unknown:
        shown = ", ".join("{" + name + "}" if name else "{}" for name in unknown)
        raise JudgeSpecError(f"{where}: unknown placeholder(s) {shown}; a template may use only {{query}} and "
                             f"{{document}} (write literal braces as {{{{ and }}}})")
    if decorated:
        raise JudgeSpecError(f"{where}: placeholders must be plain {{query}} / {{document}}, got {', '.join(decorated)}")
    missing = [name for name in PLACEHOLDERS if name not in fields]
    if missing:
        raise JudgeSpecError(f"{where}: the template has no {' and no '.join('{' + m + '}' for m in missing)} placeholder")


def load_template(value: str | None, *, base_dir: Path | None = None, where: str = "judge spec `template`") -> Template:
    """The default (None), inline text (anything containing "{" or a line break) or a file path
    (relative paths against `base_dir`, the spec file's folder)."""
    if value is None:
        return Template(DEFAULT_TEMPLATE, "default")
    if not isinstance(value, str):
        raise JudgeSpecError(f"{where}: expected text or a file path, got {type(value).__name__}")
    if not value.strip():
        raise JudgeSpecError(f"{where}: the template is empty (leave `template` out for the default)")
    if "{" in value or "\n" in value:
        check_template(value, where)
        return Template(value, "inline")
    path = Path(value).expanduser()
    if not path.is_absolute() and base_dir is not None:
        path = base_dir / path
    path = checked(path, f"{where}: template file")
    if not path.is_file():
        raise JudgeSpecError(f"{where}: template file {path} not found (inline templates must contain "
                             f"{{query}} and {{document}})")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise JudgeSpecError(f"{where}: cannot read template file {path} ({error})") from None
    check_template(text, f"{where} ({path})")
    return Template(text, str(path))


check_template(DEFAULT_TEMPLATE, "DEFAULT_TEMPLATE")
