"""Which language a corpus or a query set is in, from the text: py3langid (its model ships in the
wheel, no download), restricted to the languages irforge analyses.

A collection is one language or it is refused: one BM25 index has one analysis, and analysing
each document by its own language would turn one word into different terms in different
documents, while a query, analysed once, matches only the documents analysed as it was. So a
corpus where a second language holds a real share of the documents is an error that names the
shares and asks for --language, rather than an index that quietly favours one part of it.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cache

from irforge.analysis.languages import DEFAULT_LANGUAGE, LANGUAGES
from irforge.common.memo import remembered

SAMPLE_TEXTS = 300          # the first texts of a corpus or query set: enough to tell, cheap to read
SAMPLE_CHARACTERS = 60_000
SURE = 0.90                 # langid's normalised probability above which a detection is taken
ONE_TEXT_MINIMUM = 20       # characters for one text's own vote (shorter ones tell too little)
ENOUGH_LATIN = 200          # characters of Latin script before a detection is trusted (a script of its own tells sooner)
MIXED_SHARE = 0.20          # a second language on this share of the voting texts: a mixed collection
DETECTION_VERSION = 1       # part of every remembered detection's key: bump it when detect() changes


class MixedLanguages(ValueError):
    """A collection in several languages, with no --language to say which analysis to use."""


@dataclass
class Detection:
    language: str              # ISO 639-1
    how: str                   # "given" (--language), "dataset" (dataset.json), "detected", "assumed"
    probability: float | None = None
    shares: dict[str, float] = field(default_factory=dict)   # per-text votes, when detected

    def as_dict(self) -> dict:
        out = {"language": self.language, "how": self.how}
        if self.probability is not None:
            out["probability"] = round(self.probability, 4)
        if self.shares:
            out["shares"] = self.shares
        return out

    @classmethod
    def from_dict(cls, value: dict) -> "Detection":
        return cls(value["language"], value["how"], value.get("probability"), value.get("shares") or {})


def _mostly_latin(texts: list[str]) -> bool:
    letters = [c for text in texts for c in text if c.isalpha()]
    latin = sum(1 for c in letters if c < "\u0250")   # Basic Latin to Latin Extended-B
    return latin * 2 >= len(letters)


def texts_sha256(texts: Iterable[str]) -> str:
    """A fingerprint of a text collection in order (a query set's), for remembered_detection."""
    digest = hashlib.sha256()
    for text in texts:
        digest.update(json.dumps(text).encode("utf-8") + b"\n")
    return digest.hexdigest()


def remembered_detection(fingerprint: str, texts: Callable[[], Iterable[str]], what: str) -> Detection:
    """detect(texts(), what) for the collection whose content has SHA-256 `fingerprint`, remembered
    (irforge.common.memo): a repeated run skips loading langid's model (~0.45 s) and classifying.
    A mixed collection raises every time (errors are not remembered)."""
    from importlib.metadata import version

    key = {"texts_sha256": fingerprint, "detection": DETECTION_VERSION, "py3langid": version("py3langid"),
           "languages": sorted(LANGUAGES)}
    return Detection.from_dict(remembered("language-detection", key, lambda: detect(texts(), what).as_dict()))


@cache
def _identifier():
    from py3langid.langid import _load_identifier

    identifier = _load_identifier(norm_probs=True)
    identifier.set_languages([code for code in LANGUAGES if code in identifier.labels])
    return identifier


def detect(texts: Iterable[str], what: str) -> Detection:
    """The language of a sample of `texts` (a corpus's documents, a query set); `what` names it
    in messages. Too little text, or no sure answer: English, as irforge always assumed, marked
    "assumed". Raises MixedLanguages when a second language holds a real share of the texts."""
    identifier = _identifier()
    sample: list[str] = []
    size = 0
    for text in texts:
        text = text.strip()
        if text:
            sample.append(text)
            size += len(text)
        if len(sample) >= SAMPLE_TEXTS or size >= SAMPLE_CHARACTERS:
            break
    if not sample or (size < ENOUGH_LATIN and _mostly_latin(sample)):
        return Detection(DEFAULT_LANGUAGE, "assumed")
    votes = Counter()
    for text in sample:
        if len(text) >= ONE_TEXT_MINIMUM:
            code, probability = identifier.classify(text[:2000])
            if probability >= SURE:
                votes[code] += 1
    shares = {code: round(n / sum(votes.values()), 3) for code, n in votes.most_common()}
    leading = [code for code, share in shares.items() if share >= MIXED_SHARE]
    if len(leading) > 1:
        shown = ", ".join(f"{LANGUAGES[c].name} ({c}) {shares[c]:.0%}" for c in leading)
        raise MixedLanguages(f"the {what} mixes languages ({shown} of the texts sampled); one BM25 index has one "
                             "analysis: pass --language CODE to choose it, or split the collection by language")
    code, probability = identifier.classify("\n".join(sample)[:SAMPLE_CHARACTERS])
    if probability < SURE:
        return Detection(DEFAULT_LANGUAGE, "assumed", probability, shares)
    return Detection(code, "detected", probability, shares)
