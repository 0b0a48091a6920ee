"""Corpus-service errors: each says what went wrong and what to do about it."""

from __future__ import annotations


class CorpusError(RuntimeError):
    """Base class for corpus errors a user can act on."""


class CorpusNotFound(CorpusError):
    def __init__(self, corpus_id: str):
        super().__init__(f"corpus {corpus_id!r} does not exist; create it and ingest documents first")
        self.corpus_id = corpus_id


class CorpusNotReady(CorpusError):
    def __init__(self, corpus_id: str):
        super().__init__(f"corpus {corpus_id!r} has no committed index yet; finish ingesting it first")
        self.corpus_id = corpus_id


class CorpusConflict(CorpusError):
    """The corpus exists with another fingerprint or other settings."""


class BackendUnavailable(CorpusError):
    """The backend server cannot be reached or is incompatible (wrong version, not Elasticsearch)."""


class CorpusBusy(CorpusError):
    """Another ingest is writing this corpus: two writers would each commit only their own view."""

    def __init__(self, corpus_id: str):
        super().__init__(
            f"corpus {corpus_id!r} is being ingested by another client; wait for it to finish, "
            "then ingest again (documents are keyed by id, so repeating an ingest is safe)"
        )
        self.corpus_id = corpus_id


class IngestAborted(CorpusError):
    """The ingest stream ended without its commit message: nothing was committed."""


class IngestStreamsExhausted(CorpusError):
    """The server has as many Ingest streams open as it allows; retry later."""
