"""How a query and its instruction reach a retriever.

Text-only models (BM25, bi-encoders, cross-encoders, listwise LLMs) get one text: by default
`query + " " + instruction`, the convention of the InfoSearch and FollowIR reference code, or a
template such as E5-Mistral/GritLM's "Instruct: {instruction}\\nQuery: {query}". Search endpoints
get the query and the instruction as separate fields (Query.bare_text, Query.instruction).
"""

from __future__ import annotations

from dataclasses import dataclass

from irforge.data.types import Query
from irforge.instructions.collection import InstructionQuery

DEFAULT_COMPOSITION = "query + ' ' + instruction (the InfoSearch/FollowIR reference convention)"
PLACEHOLDERS = ("{query}", "{instruction}")


@dataclass(frozen=True)
class InstructionTemplate:
    """`template` None: query + " " + instruction. An empty instruction (an original mode) gives
    the query alone in both cases, so the original mode is the plain query every model knows."""

    template: str | None = None

    def __post_init__(self):
        if self.template is not None:
            missing = [p for p in PLACEHOLDERS if p not in self.template]
            if missing:
                raise ValueError(f"--instruction-template must contain {' and '.join(PLACEHOLDERS)}; "
                                 f"{self.template!r} lacks {', '.join(missing)}")

    @classmethod
    def from_flag(cls, value: str | None) -> InstructionTemplate:
        """A template typed on a command line: the two-character escapes \\n and \\t mean a newline and a tab."""
        if value is None:
            return cls()
        return cls(value.replace("\\n", "\n").replace("\\t", "\t"))

    def compose(self, query: str, instruction: str) -> str:
        if not instruction.strip():
            return query
        if self.template is None:
            return f"{query} {instruction}"
        # Not str.format: braces inside a query or an instruction must stay text.
        return self.template.replace("{instruction}", instruction).replace("{query}", query)

    def describe(self) -> str:
        return DEFAULT_COMPOSITION if self.template is None else self.template


def mode_queries(queries: list[InstructionQuery], mode: str, template: InstructionTemplate) -> list[Query]:
    """The retriever's queries for one mode: the query id stays the core query's, so every mode's
    run is keyed alike and the metrics can read a document's rank across modes."""
    result = []
    for query in queries:
        instruction = query.instructions.get(mode, "")
        result.append(Query(query_id=query.query_id, text=template.compose(query.text, instruction),
                            instruction=instruction, bare_text=query.text))
    return result
