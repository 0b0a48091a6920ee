"""What `irforge check` finds: one Finding per problem kind, with a severity, a count and a few
examples a user can open (query id, doc id, file:line)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

ERROR, WARNING, INFO = "error", "warning", "info"
SEVERITIES = (ERROR, WARNING, INFO)
MAX_EXAMPLES = 5   # enough to see the pattern; the count says how many there are


@dataclass
class Finding:
    """One kind of problem in one file set. `code` is stable (scripts match on it); `message`
    says what it is and what it does to the numbers; `count` is what the message counts."""

    code: str
    severity: str
    count: int
    message: str
    examples: list[str] = field(default_factory=list)
    details: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity must be one of {SEVERITIES}, got {self.severity!r}")

    def as_dict(self) -> dict:
        return {"code": self.code, "severity": self.severity, "count": self.count, "message": self.message,
                "examples": list(self.examples), **({"details": self.details} if self.details else {})}


def examples(items: Iterable[str], limit: int = MAX_EXAMPLES) -> list[str]:
    """The first `limit` of `items` (an iterable: only as much of it is read)."""
    shown: list[str] = []
    for item in items:
        if len(shown) == limit:
            break
        shown.append(item)
    return shown


def at(path, line: int | None) -> str:
    """`file:line`, the form editors and terminals open."""
    return f"{path}:{line}" if line else str(path)


def plural(count: int, one: str, many: str | None = None) -> str:
    return f"{count} {one if count == 1 else (many or one + 's')}"


def errors_in(findings: Iterable[Finding]) -> int:
    return sum(1 for f in findings if f.severity == ERROR)
