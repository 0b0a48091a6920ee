"""Prompt templates: plain text with named {placeholders} (str.format rules, `{{` for a brace).

Each stage has a default in templates/<stage>.txt, our own wording of the papers' prompts. A user
replaces any of them with `--templates DIR` holding <stage>.txt files; a replacement must use
exactly the stage's placeholders, checked when loaded, not half way through a run. The sha256 of
the text is what the cache and the provenance record: one changed word asks again.
"""

from __future__ import annotations

import hashlib
import string
from dataclasses import dataclass
from pathlib import Path

DEFAULTS = Path(__file__).with_name("templates")


class TemplateError(ValueError):
    """A template that cannot serve its stage; the message names the file and the placeholders."""


@dataclass(frozen=True)
class PromptTemplate:
    name: str
    text: str
    source: str         # "default" or the file it came from

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    @property
    def fields(self) -> set[str]:
        return placeholders(self.text, self.source)

    def render(self, **values) -> str:
        return self.text.format(**values)


def placeholders(text: str, where: str) -> set[str]:
    try:
        return {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}
    except ValueError as error:
        raise TemplateError(f"{where}: not a valid template ({error}); write a literal brace as {{{{ or }}}}") from None


def load_template(name: str, fields: set[str], folder: Path | None = None) -> PromptTemplate:
    """The stage's template: folder/<name>.txt when the user gave one, else the default."""
    path = folder / f"{name}.txt" if folder is not None else None
    if path is not None and path.is_file():
        template = PromptTemplate(name, path.read_text(encoding="utf-8"), str(path))
    else:
        template = PromptTemplate(name, (DEFAULTS / f"{name}.txt").read_text(encoding="utf-8"), "default")
    found = template.fields
    if found != fields:
        missing, unknown = sorted(fields - found), sorted(found - fields)
        raise TemplateError(f"{template.source}: template {name!r} must use the placeholders {{{'}, {'.join(sorted(fields))}}}"
                            + (f"; missing {missing}" if missing else "") + (f"; unknown {unknown}" if unknown else ""))
    return template
