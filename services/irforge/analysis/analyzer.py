"""Text to index terms, per language: the one analysis the embedded BM25 (and anything else that
counts words) uses.

Every language but English: Unicode NFKC, case folding, words as runs of letters, marks and digits
(Python's `\\w` leaves out the vowel signs of Devanagari, Thai or Tamil and cuts their words in
pieces), unspaced scripts in overlapping character bigrams (Thai through PyThaiNLP's segmenter
when the text is Thai), the language's stopwords (python-stop-words, else stopwords-iso), then
its Snowball stemmer (PyStemmer) where one exists.

English keeps the analysis irforge always had (lowercase, bm25s's word regex, bm25s's English
stopwords, Snowball English), so English figures and English indexes built before are unchanged.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, cached_property
from importlib import metadata

import regex

from irforge.analysis.languages import DEFAULT_LANGUAGE, Language, language

ANALYZER_VERSION = 1    # part of every non-English index's identity: bump it when analysis changes
ENGLISH_PATTERN = r"(?u)\b\w\w+\b"  # bm25s/scikit-learn default: words of two or more characters
ENGLISH_WORDS = re.compile(ENGLISH_PATTERN)
WORD = regex.compile(r"[\p{L}\p{M}\p{N}]+")
# Scripts written without spaces between words, and the Katakana-Hiragana prolonged sound mark
# (script Common) that belongs inside their words.
UNSPACED = regex.compile(r"[\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}\p{Thai}\p{Lao}\p{Khmer}\p{Myanmar}\u30fc]+")
THAI = regex.compile(r"\p{Thai}+")


def normalise(text: str) -> str:
    """NFKC then case folding: full-width Latin, ligatures and compatibility forms become the
    letters they stand for, and case differences (ß/SS, Σ/σ/ς included) vanish."""
    return unicodedata.normalize("NFKC", text).casefold()


def _pieces(text: str, unspaced: Callable[[str], list[str]]) -> list[str]:
    """Normalised runs of letters, marks and digits; each unspaced-script run inside one goes
    through `unspaced` (characters, bigrams, a segmenter)."""
    out: list[str] = []
    for word in WORD.findall(normalise(text)):
        start = 0
        for run in UNSPACED.finditer(word):
            if run.start() > start:
                out.append(word[start:run.start()])
            out.extend(unspaced(run.group()))
            start = run.end()
        if start < len(word):
            out.append(word[start:])
    return out


# Han and kana characters per word, measured on XQuAD's parallel questions (tests/multilingual/
# data): 19,160 Han characters in the Chinese questions for 12,316 words in the English ones (1.56).
CHARACTERS_PER_WORD = 1.56
HANGUL = regex.compile(r"\p{Hangul}+")


def word_count(text: str) -> int:
    """How many words `text` has, in any script: words between separators; a Thai run in
    PyThaiNLP's words; a Hangul run is one word (Korean puts spaces between words); other unspaced
    runs (Chinese, Japanese) in characters / CHARACTERS_PER_WORD, at least one. Query lengths
    ("fewer than 10 words") are counted with it, so a Chinese sentence is not one word."""
    whole, characters = 0, 0
    for piece in _pieces(text, lambda run: [run]):
        if HANGUL.fullmatch(piece) or not UNSPACED.fullmatch(piece):
            whole += 1
        elif THAI.fullmatch(piece):
            whole += len(_thai_words()(piece))
        else:
            characters += len(piece)
    return whole + (max(1, round(characters / CHARACTERS_PER_WORD)) if characters else 0)


def unspaced_units(text: str) -> list[tuple[int, int]]:
    """(start, end) in `text` of each unit of its unspaced-script runs: a Thai run's PyThaiNLP
    words, one character of any other (Chinese, Japanese, Korean...). What counts as a token where
    a subword tokenizer leaves a run whole (Long-Doc's chunk sizes)."""
    units = []
    for run in UNSPACED.finditer(text):
        for part in regex.finditer(r"\p{Thai}+|[^\p{Thai}]+", run.group()):
            start = run.start() + part.start()
            if THAI.fullmatch(part.group()):
                for word in _thai_segments()(part.group()):
                    if WORD.search(word):
                        units.append((start, start + len(word)))
                    start += len(word)
            else:
                units.extend((start + i, start + i + 1) for i in range(len(part.group())))
    return units


def bigrams(run: str) -> list[str]:
    """Overlapping character pairs of an unspaced run; a single character stands alone."""
    return [run] if len(run) == 1 else [run[i:i + 2] for i in range(len(run) - 1)]


@cache
def _thai_words() -> Callable[[str], list[str]]:
    from pythainlp.tokenize import word_tokenize

    return lambda run: [w for w in word_tokenize(run, engine="newmm", keep_whitespace=False) if WORD.search(w)]


@cache
def _thai_segments() -> Callable[[str], list[str]]:
    """PyThaiNLP's segmentation keeping every character (the pieces join back to the run)."""
    from pythainlp.tokenize import word_tokenize

    return lambda run: word_tokenize(run, engine="newmm", keep_whitespace=True)


@cache
def stopwords_for(code: str) -> tuple[frozenset[str], str]:
    """(the language's stopwords, normalised; where they come from). python-stop-words first
    (moderate lists, like Lucene's), stopwords-iso for the languages it lacks."""
    if code == DEFAULT_LANGUAGE:
        from bm25s.stopwords import STOPWORDS_EN

        return frozenset(STOPWORDS_EN), f"bm25s 'en' list ({len(STOPWORDS_EN)} words)"
    from stop_words import LANGUAGE_MAPPING, get_stop_words

    if code in LANGUAGE_MAPPING:
        words = get_stop_words(code)
        source = f"python-stop-words {metadata.version('stop-words')}"
    else:
        import stopwordsiso

        if not stopwordsiso.has_lang(code):
            return frozenset(), "none (no list for this language)"
        words = stopwordsiso.stopwords(code)
        source = f"stopwords-iso {metadata.version('stopwordsiso')}"
    normalised = frozenset(normalise(word) for word in words if word.strip())
    return normalised, f"{source} '{code}' list ({len(normalised)} words)"


@dataclass(frozen=True)
class Analyzer:
    language: Language

    @property
    def english(self) -> bool:
        return self.language.code == DEFAULT_LANGUAGE

    @property
    def identity(self) -> str:
        """What an index's name carries: English's is empty, so English indexes keep their names."""
        return "" if self.english else f"{self.language.code}-a{ANALYZER_VERSION}"

    def words(self, text: str) -> list[str]:
        """The text's words, normalised, before stopwords and stemming."""
        if self.english:
            return ENGLISH_WORDS.findall(text.lower())   # `re`, as bm25s: regex's \w also takes marks
        return _pieces(text, self._unspaced)

    def _unspaced(self, run: str) -> list[str]:
        if self.language.words == "thai" and THAI.fullmatch(run):
            return _thai_words()(run)
        return bigrams(run)

    @cached_property
    def stopwords(self) -> frozenset[str]:
        # Bigram languages keep every pair: a stopword list of words does not apply to pairs.
        if self.language.words == "bigrams" or not self.language.stopwords:
            return frozenset()
        return stopwords_for(self.language.code)[0]

    @cached_property
    def stem(self) -> Callable[[str], str] | None:
        if self.language.stemmer is None:
            return None
        import Stemmer

        return Stemmer.Stemmer(self.language.stemmer).stemWord

    def terms(self, text: str) -> list[str]:
        """The index terms of `text`: words, less stopwords, stemmed."""
        stem = self.stem or (lambda word: word)
        return [stem(word) for word in self.words(text) if word not in self.stopwords]

    def describe(self) -> dict:
        """The analysis, as results.json records it."""
        row = self.language
        if self.english:
            tokenizer = f"lowercase, regex {ENGLISH_PATTERN}"
        else:
            tokenizer = {"words": "NFKC, casefold, runs of letters/marks/digits",
                         "bigrams": "NFKC, casefold, runs of letters/marks/digits, unspaced scripts as character bigrams",
                         "thai": "NFKC, casefold, runs of letters/marks/digits, Thai by PyThaiNLP newmm "
                                 f"({_version('pythainlp')}), other unspaced scripts as character bigrams"}[row.words]
        stopwords = ("none (bigrams)" if row.words == "bigrams" else stopwords_for(row.code)[1] if row.stopwords
                     else "none (measured better without the list)")
        stemmer = f"Snowball {row.stemmer} (PyStemmer {_version('PyStemmer')})" if row.stemmer else "none"
        return {"language": row.code, "analyzer": "english (irforge's original)" if self.english
                else f"irforge {row.code} v{ANALYZER_VERSION}",
                "tokenizer": tokenizer, "stemmer": stemmer, "stopwords": stopwords}


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


@cache
def analyzer_for(code: str = DEFAULT_LANGUAGE) -> Analyzer:
    """The analyser of a language code; UnknownLanguage when irforge has none."""
    return Analyzer(language(code))
