"""AIR-Bench's sampled query attributes (../shared/PRODUCT.md section 5), seeded per document.

Every draw uses its own random.Random seeded by (run seed, what it is for, the document), so a
document's attributes do not depend on which other documents were sampled or on thread order.

Length and type: the length is drawn first in the published ratio (<5 : <10 : 10-20 : >=20 words
= 1 : 4 : 2 : 1); the type is then drawn among the types allowed at that length (question :
problem : claim = 3 : 1 : 1, claims only at 10-20 or >=20 words). So lengths keep their ratio
exactly, long queries keep 3 : 1 : 1, and short ones are questions and problems 3 : 1.
"""

from __future__ import annotations

import random

LENGTHS = {"<5": 1, "<10": 4, "10-20": 2, ">=20": 1}
LENGTH_RULES = {"<5": "fewer than 5 words", "<10": "fewer than 10 words", "10-20": "between 10 and 20 words",
                ">=20": "at least 20 words"}
TYPES = {"question": 3, "problem": 1, "claim": 1}
TYPE_RULES = {"question": "a question the document answers",
              "problem": "a description of a problem or task the document helps with, not phrased as a question",
              "claim": "a statement the document supports or refutes, to be checked"}
CLAIM_LENGTHS = ("10-20", ">=20")
INFORMATION = {"whole": 1, "detail": 1}
INFORMATION_RULES = {"whole": "the document as a whole (its main topic)",
                     "detail": "a specific detail of the document beyond its main topic"}
STYLES = {"concise": 5, "casual": 3, "informal": 3, "formal": 1, "professional": 1, "complicated": 1, "academic": 1}
NEGATIVES = (3, 7)   # generated hard negatives per query, inclusive


def rng_for(seed: int, purpose: str, subject: str) -> random.Random:
    return random.Random(f"{seed}:{purpose}:{subject}")


def weighted(rng: random.Random, weights: dict[str, int]) -> str:
    names = list(weights)
    return rng.choices(names, weights=[weights[n] for n in names])[0]


def query_attributes(rng: random.Random, types: dict[str, int] = TYPES) -> dict[str, str]:
    length = weighted(rng, LENGTHS)
    allowed = {t: w for t, w in types.items() if t != "claim" or length in CLAIM_LENGTHS}
    return {"length": length, "type": weighted(rng, allowed), "information": weighted(rng, INFORMATION)}


def styles(rng: random.Random, count: int) -> list[str]:
    """`count` rewrite styles, drawn independently in the published weights (repeats allowed)."""
    return [weighted(rng, STYLES) for _ in range(count)]
