"""Corpus-service errors: each says what went wrong and what to do about it."""

from __future__ import annotations

from irforge.common.error_status import register_status


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


# How each travels over gRPC (irforge.common.grpc_errors).
register_status(CorpusNotFound, "NOT_FOUND")
register_status(CorpusNotReady, "FAILED_PRECONDITION")
register_status(CorpusBusy, "FAILED_PRECONDITION")
register_status(IngestAborted, "ABORTED")
register_status(IngestStreamsExhausted, "RESOURCE_EXHAUSTED")
register_status(CorpusConflict, "ALREADY_EXISTS")
register_status(BackendUnavailable, "UNAVAILABLE")
register_status(CorpusError, "FAILED_PRECONDITION")
