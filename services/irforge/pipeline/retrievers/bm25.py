"""BM25 through the corpus service's lexical backend."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Iterator

from irforge.analysis.analyzer import ANALYZER_VERSION
from irforge.analysis.detect import Detection, MixedLanguages, detect, remembered_detection, texts_sha256
from irforge.analysis.languages import UnknownLanguage, language
from irforge.common.iterables import chunked
from irforge.common.memo import remember, remembered
from irforge.common.progress import ProgressFactory
from irforge.corpus.core import SEARCH_CHUNK
from irforge.corpus.errors import CorpusError
from irforge.corpus.lexical.base import CorpusState, document_id_problem
from irforge.corpus.settings import Bm25Settings
from irforge.data import BeirDataset
from irforge.data.errors import DataFormatError
from irforge.data.types import Document, Query, Run
from irforge.pipeline.latency import LatencyRecorder, batch_basis
from irforge.pipeline.retrievers.base import CorpusTracker, count_lines, safe_name

INGEST_BATCH = 500
BASIS = batch_basis(SEARCH_CHUNK, "batch search calls to the corpus service", "network included when remote")


def corpus_id_for(dataset_name: str, fingerprint: str, settings: Bm25Settings) -> str:
    """Same corpus bytes and settings -> same index, on every backend; anything else -> a new one.
    The analysis is part of it (English's identity is empty: English indexes keep their names)."""
    analysis = settings.analyzer.identity
    return (f"{safe_name(dataset_name)}-{fingerprint[:16]}-bm25-k1-{settings.k1:g}-b-{settings.b:g}"
            + (f"-{analysis}" if analysis else ""))


def dataset_language(dataset: BeirDataset) -> str | None:
    """The language the dataset names in its dataset.json (`"language": "zh"`), or None."""
    path = dataset.root / "dataset.json"
    if not path.is_file():
        return None
    try:
        declared = json.loads(path.read_text(encoding="utf-8")).get("language")
    except (ValueError, AttributeError):
        raise CorpusError(f"{path}: not a JSON object; it should hold e.g. {{\"language\": \"zh\"}}") from None
    return declared if isinstance(declared, str) and declared.strip() else None


def _texts_until_a_bad_line(dataset: BeirDataset) -> Iterator[str]:
    """The corpus's texts for detection, ending quietly at a line the reader refuses: the ingest
    reads the corpus next and reports that line as it always did (on a remote service, from the
    Ingest stream it opened)."""
    try:
        for document in dataset.corpus():
            yield document.full_text
    except DataFormatError:
        return


def corpus_language(dataset: BeirDataset, given: str | None, fingerprint: str | None = None) -> Detection:
    """--language, else the dataset's own, else detected from its corpus (CorpusError: mixed,
    unknown); remembered by the corpus's `fingerprint` (dataset.corpus_fingerprint()) when given
    (never hashed here only for that: detection reads the first 300 documents, a hash all of them)."""
    try:
        if given:
            return Detection(language(given).code, "given")
        declared = dataset_language(dataset)
        if declared:   # an unknown code fails here, naming the file
            return Detection(language(declared).code, "dataset")
        if fingerprint is None:
            return detect(_texts_until_a_bad_line(dataset), f"corpus {dataset.name}")
        return remembered_detection(fingerprint, lambda: _texts_until_a_bad_line(dataset), f"corpus {dataset.name}")
    except UnknownLanguage as error:
        raise CorpusError(f"{dataset.root / 'dataset.json'}: {error}") from None
    except MixedLanguages as error:
        raise CorpusError(str(error)) from None


def indexes_to_nothing(analyzer, document: Document) -> bool:
    """True when no term of `document` reaches the index (it can match no query)."""
    return not any(word not in analyzer.stopwords for word in analyzer.words(document.full_text))


EMPTY_DOCUMENTS = "bm25-documents-without-terms"   # remembered per corpus fingerprint and analysis


def _without_terms(empty: list[str]) -> dict:
    """The counts of the documents that index to nothing: how many, and the first five ids."""
    return {"documents_without_terms": len(empty), "documents_without_terms_examples": empty[:5]}


def _empty_documents(analyzer, documents: Iterable[Document]) -> dict:
    return _without_terms([d.doc_id for d in documents
                           if document_id_problem(d) is None and indexes_to_nothing(analyzer, d)])


def reuse_problem(info, fingerprint: str, tracker: CorpusTracker, dataset: BeirDataset) -> str | None:
    """Why a READY index cannot stand for this corpus, or None when it provably does: it was built
    from these corpus bytes, and it holds exactly the corpus's indexable documents (an index that
    lost documents, or was committed from part of a stream, must never be reused silently).
    Streams the corpus through `tracker`, which the eval job needs once anyway."""
    if info.fingerprint != fingerprint:
        return f"index fingerprint {info.fingerprint[:12]} differs from the corpus's {fingerprint[:12]}"
    indexable = sum(1 for document in tracker.observe(dataset.corpus()) if document_id_problem(document) is None)
    if info.document_count != indexable:
        return f"index holds {info.document_count} documents, the corpus has {indexable} indexable ones"
    return None


class Bm25Retriever:
    name = "bm25"

    def __init__(self, corpus, settings: Bm25Settings, progress: ProgressFactory, language: str | None = None):
        self.corpus = corpus
        self.settings = settings
        self.progress = progress
        self.language = language      # --language; None: the dataset's, else detected
        self.languages: dict = {}
        self.corpus_id = ""
        self.info = None
        self._counts = {"documents_ingested": 0, "ingest_skipped": False}
        self.latency = LatencyRecorder()

    def use_latency(self, recorder: LatencyRecorder) -> None:
        self.latency = recorder

    def prepare(self, dataset: BeirDataset, fingerprint: str, tracker: CorpusTracker) -> None:
        found = corpus_language(dataset, self.language, fingerprint)
        self.languages = {"corpus": found.as_dict()}
        self.settings = dataclasses.replace(self.settings, language=found.language)
        self.corpus_id = corpus_id_for(dataset.name, fingerprint, self.settings)
        info = self.corpus.find_corpus(self.corpus_id)
        if info is not None and info.state == CorpusState.READY:
            problem = reuse_problem(info, fingerprint, tracker, dataset)
            if problem is None:
                self.info = info
                self._counts["ingest_skipped"] = True
                # A reused index reports its empty documents as a built one does: remembered from
                # the build (or worked out once) rather than analysing every document again.
                self._counts.update(remembered(
                    EMPTY_DOCUMENTS, self._empty_documents_key(fingerprint),
                    lambda: _empty_documents(self.settings.analyzer, dataset.corpus())))
                return
            self._counts["reindexed_because"] = problem
        self.corpus.create_corpus(self.corpus_id, fingerprint, self.settings)
        bar = self.progress(f"indexing {dataset.name} (bm25)", count_lines(dataset.corpus_path), "doc")

        analyzer = self.settings.analyzer
        empty: list[str] = []

        def batches() -> Iterator[list[Document]]:
            for batch in chunked(tracker.observe(dataset.corpus()), INGEST_BATCH):
                # A document with no term matches no query: counted, never silent. (One refused
                # for its id is reported as that, and left out here.)
                empty.extend(d.doc_id for d in batch
                             if document_id_problem(d) is None and indexes_to_nothing(analyzer, d))
                yield batch
                bar.update(len(batch))

        try:
            for progress in self.corpus.ingest(self.corpus_id, batches()):
                self._counts["documents_ingested"] = progress.indexed
                for error in progress.errors:
                    tracker.record_error(error.doc_id, error.message)
        finally:
            bar.close()
        empty_documents = _without_terms(empty)
        self._counts.update(empty_documents)
        remember(EMPTY_DOCUMENTS, self._empty_documents_key(fingerprint), empty_documents)
        self.info = self.corpus.find_corpus(self.corpus_id)

    def _empty_documents_key(self, fingerprint: str) -> dict:
        return {"corpus_sha256": fingerprint, "language": self.settings.language, "analyzer": ANALYZER_VERSION}

    def retrieve(self, queries: list[Query], k: int) -> Run:
        self._check_queries(queries)
        with self.latency.answering(len(queries)):
            return self._retrieve(queries, k)

    def _check_queries(self, queries: list[Query]) -> None:
        """Record the queries' language (warn when it is not the corpus's) and the queries that
        analyse to no term at all: they cannot retrieve anything, and must not pass unseen."""
        analyzer = self.settings.analyzer
        if self.language is None:   # recorded with the counts: the description is known before any query
            try:
                found = remembered_detection(texts_sha256(q.text for q in queries),
                                             lambda: (q.text for q in queries), "query set")
            except MixedLanguages as error:
                found = Detection("mixed", "detected")
                self._counts["queries_language_note"] = str(error)
            self._counts["queries_language"] = found.as_dict()
            if found.how == "detected" and found.language != analyzer.language.code:
                self._counts["language_warning"] = (
                    f"the queries look {found.language}, the corpus {analyzer.language.code}: both are analysed as "
                    f"{analyzer.language.code} (--language overrides)")
        empty = [q for q in queries if not analyzer.terms(q.text)]
        self._counts["queries_without_terms"] = len(empty)
        self._counts["queries_without_terms_examples"] = [{"query_id": q.query_id, "text": q.text[:200]} for q in empty[:5]]

    def _retrieve(self, queries: list[Query], k: int) -> Run:
        bar = self.progress("retrieving (bm25)", len(queries), "query")
        run: Run = {}
        # Timed per backend call: the corpus service scores SEARCH_CHUNK queries at once.
        search = lambda start, end: self.corpus.batch_search(self.corpus_id, queries[start:end], k)  # noqa: E731
        try:
            for query_id, ranking in self.latency.batched("bm25 search", len(queries), SEARCH_CHUNK, search, BASIS):
                run[query_id] = ranking
                bar.update(1)
        finally:
            bar.close()
        return run

    def describe(self) -> dict:
        return {"name": self.name, "backend": self.info.backend if self.info else None,
                "corpus_id": self.corpus_id, **(self.info.config if self.info else {}), "languages": self.languages}

    def counts(self) -> dict:
        return dict(self._counts)
