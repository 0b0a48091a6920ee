"""HTML pieces every section uses. Strings from inputs are escaped by default: a value becomes
HTML only through `esc`, and only `Markup` (HTML this package built) passes through unchanged, so
a label like `<script>` in a results file is shown, never run."""

from __future__ import annotations

import html
import json
import math
from dataclasses import dataclass

MISSING = "—"


class Markup(str):
    """A string that is already HTML (built here, its input parts escaped)."""

    def __add__(self, other):
        return Markup(str.__add__(self, esc(other)))


def esc(value) -> Markup:
    if isinstance(value, Markup):
        return value
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return Markup(MISSING)
    return Markup(html.escape(str(value), quote=True))


def join(parts, separator: str = "") -> Markup:
    return Markup(esc(separator).join(esc(part) for part in parts))


def tag(name: str, content="", **attributes) -> Markup:
    """<name attr="value">content</name>; attribute values escaped, `class_` for class, None left out."""
    attrs = "".join(f' {key.rstrip("_").replace("_", "-")}="{esc(value)}"' for key, value in attributes.items()
                    if value is not None)
    return Markup(f"<{name}{attrs}>{esc(content)}</{name}>")


# ---- numbers ---------------------------------------------------------------------------------------

def is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def metric(value) -> str:
    return f"{value:.4f}" if is_number(value) else MISSING


def signed(value, digits: int = 4) -> str:
    return f"{value:+.{digits}f}" if is_number(value) else MISSING


def p_value(value) -> str:
    if not is_number(value):
        return MISSING
    return "<0.0001" if value < 1e-4 else f"{value:.4f}"


def seconds(value) -> str:
    return f"{value:.2f} s" if is_number(value) else MISSING


def plain(value) -> str:
    """A configuration value as one line: numbers and strings as they are, the rest as JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return "null"
    return json.dumps(value, ensure_ascii=False)


# ---- tables ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Cell:
    content: Markup
    sort: float | str | None = None     # what the sorting script orders by (numbers as numbers)
    numeric: bool = False
    class_: str | None = None


def cell(value, text: str | None = None, class_: str | None = None) -> Cell:
    """A cell for `value`: numbers right-aligned and sortable as numbers, shown as `text`
    (default: 4 decimals for floats); anything else escaped."""
    if isinstance(value, Cell):
        return value
    if is_number(value):
        shown = text if text is not None else (f"{value:.4f}" if isinstance(value, float) else str(value))
        return Cell(esc(shown), value, True, class_)
    return Cell(esc(value if text is None else text), None, False, class_)


def _row(cells, header_first: bool) -> Markup:
    parts = []
    for n, value in enumerate(cells):
        c = cell(value)
        classes = " ".join(x for x in ("num" if c.numeric else None, c.class_) if x) or None
        sort = None if c.sort is None else (repr(float(c.sort)) if c.numeric else str(c.sort))
        name = "th" if header_first and n == 0 else "td"
        parts.append(tag(name, c.content, scope="row" if name == "th" else None, class_=classes, data_sort=sort))
    return tag("tr", join(parts))


def table(name: str, headers: list, rows: list[list], caption=None, foot: list[list] | None = None,
          sortable: bool = True, header_first: bool = True) -> Markup:
    """A data table: `name` (data-table) lets tests and readers find it; rows of cells or values."""
    head = tag("tr", join(tag("th", h, scope="col") for h in headers))
    body = join(_row(r, header_first) for r in rows)
    parts = [tag("caption", caption) if caption is not None else "", tag("thead", head), tag("tbody", body)]
    if foot:
        parts.append(tag("tfoot", join(_row(r, header_first) for r in foot)))
    return tag("div", tag("table", join(parts), class_="data sortable" if sortable else "data", data_table=name),
               class_="scroll")


def flatten(value, prefix: str = "") -> list[tuple[str, object]]:
    """Nested dicts as dotted keys (lists kept whole): a configuration as a two-column table."""
    if isinstance(value, dict) and value:
        pairs = []
        for key, inner in value.items():
            pairs += flatten(inner, f"{prefix}.{key}" if prefix else str(key))
        return pairs
    return [(prefix, value)]


def key_value_table(name: str, mapping: dict, caption=None) -> Markup:
    rows = [[key, Cell(tag("code", plain(value)))] for key, value in flatten(mapping)]
    return table(name, ["setting", "value"], rows, caption, sortable=False)


def json_details(summary, value, open_: bool = False) -> Markup:
    """Pretty JSON in a <details> block: everything recorded, readable, out of the way until opened."""
    text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    return tag("details", tag("summary", summary) + tag("pre", tag("code", text)), open="" if open_ else None)
