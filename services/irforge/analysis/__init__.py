"""Language-aware text analysis shared by every part that turns text into terms: the embedded
BM25 index, and the checks that count words. `analyzer_for(code)` is the entry point."""

from irforge.analysis.analyzer import Analyzer, analyzer_for
from irforge.analysis.languages import DEFAULT_LANGUAGE, LANGUAGES, UnknownLanguage

__all__ = ["Analyzer", "analyzer_for", "DEFAULT_LANGUAGE", "LANGUAGES", "UnknownLanguage"]
