"""Strict label parsing: an answer is a label only when it is exactly one of 0, 1, 2, 3.

Accepted (case-insensitive, surrounding whitespace ignored):
    "2"   "2."   " 3\\n"   "Label: 2"   "label 1."   "**2**"   "`2`"   "'2'"   "\\"2\\""
Everything else is unparsed, with a reason:
    ""  "2 or 3"  "23"  "2.5"  "-1"  "4"  "relevant"  "2 - somewhat relevant"  "Label: 2, maybe 3"
    "I would say 2"  "2\\n3"  "２" (a full-width digit)

Why so narrow: the template asks for a single number with no explanation. A judge that wraps the
number in a "Label:" prefix, quotes or Markdown bold still gave exactly one label, so those are
read; anything with a second number or words around it is ambiguous (is "2 or 3" a 2 or a 3? is
"not 3" a 3?) and guessing would put labels in the qrels that the judge never gave. Unparsed
answers are re-asked and, if still unparsed, recorded as such, never turned into 0.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# One ASCII digit 0-3, optionally after "label" (with ":" / "=" / "-" or a space), optionally
# wrapped in one matching pair of quotes, backticks or ** (Markdown bold: the conditional group
# demands the same closing wrapper, so "**2" is no label), optionally followed by a single period. \Z rather than $: "$" would accept a trailing newline inside the answer body.
_LABEL = re.compile(
    r"""\A\s*
        (?:label\s*[:=\-]?\s*)?
        (?P<open>\*\*|[`'"])?
        (?P<label>[0-3])
        (?(open)(?P=open))
        \.?
        \s*\Z""",
    re.IGNORECASE | re.VERBOSE | re.ASCII,
)


@dataclass(frozen=True, slots=True)
class ParsedAnswer:
    label: int | None       # 0-3, or None when the answer is not a label
    problem: str = ""       # why not, for the judgement's `error`

    @property
    def ok(self) -> bool:
        return self.label is not None


def parse_label(answer: str | None) -> ParsedAnswer:
    if answer is None:
        return ParsedAnswer(None, "the answer has no text")
    match = _LABEL.match(answer)
    if match is not None:
        return ParsedAnswer(int(match.group("label")))
    return ParsedAnswer(None, _why_not(answer))


def _why_not(answer: str) -> str:
    text = answer.strip()
    if not text:
        return "the answer is empty"
    numbers = re.findall(r"-?\d+(?:[.,]\d+)?", text, re.ASCII)
    shown = " ".join(text.split())
    shown = shown if len(shown) <= 60 else shown[:60] + "..."
    if len(numbers) > 1:
        return f"the answer has {len(numbers)} numbers, expected exactly one label 0-3: {shown!r}"
    if len(numbers) == 1 and numbers[0] not in ("0", "1", "2", "3"):
        return f"{numbers[0]} is not a label (the scale is 0-3): {shown!r}"
    if len(numbers) == 1:
        return f"the answer has words around the label, expected the number alone: {shown!r}"
    return f"the answer has no label 0-3: {shown!r}"
