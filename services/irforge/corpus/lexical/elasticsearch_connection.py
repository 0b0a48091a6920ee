"""The connection both Elasticsearch backends share (BM25 in corpus/lexical/elasticsearch.py, sparse
vectors in corpus/vectors/elasticsearch.py): the checked options, the official client opened with
credentials read from environment variables named by the caller (never logged, stored or put in a
message), the server's version checked against the client's, lost connections turned into
BackendUnavailable, and the scores-only search body in trec_eval's order.
"""

from __future__ import annotations

import os
import re
import threading
from contextlib import contextmanager

import elasticsearch
from elasticsearch import ApiError, Elasticsearch, TransportError, UnsupportedProductError

from irforge.common.redact import redact_url
from irforge.corpus.errors import BackendUnavailable

MAX_RESULT_WINDOW = 10_000   # Elasticsearch's default index.max_result_window: the largest `size`
MSEARCH_CHUNK = 100          # queries per _msearch request
# Index names are lowercase and at most 255 bytes: 55 for the prefix, 200 for the corpus id.
_SAFE_PREFIX = re.compile(r"^([a-z0-9][a-z0-9._-]{0,54})?$")
CLIENT_VERSION = elasticsearch.__versionstr__


def ranked_search_body(query: dict, k: int) -> dict:
    """A search for `query`'s top k in trec_eval's order, scores only (both Elasticsearch backends)."""
    return {
        "query": query,
        "size": k,
        # Sorting on the doc id after the score makes the cut at k exact on ties, not index order.
        "sort": [{"_score": "desc"}, {"doc_id": "desc"}],
        "track_scores": True,
        "track_total_hits": False,
        "_source": False,
    }



def version_mismatch(server_version: str, client_version: str = CLIENT_VERSION) -> str | None:
    """Why this client cannot talk to that server, or None when the major versions match."""
    server_major, client_major = server_version.split(".")[0], client_version.split(".")[0]
    if server_major == client_major:
        return None
    return (
        f"the server runs Elasticsearch {server_version} but the installed Python client is elasticsearch "
        f"{client_version}, which needs a {client_major}.x server; run an Elasticsearch {client_major}.x "
        f"server, or install the matching client: pip install 'elasticsearch>={server_major},<{int(server_major) + 1}'"
    )


def _secret(variable: str) -> str:
    value = os.environ.get(variable)
    if not value:
        raise BackendUnavailable(f"environment variable {variable} is not set; set it to the Elasticsearch credential")
    return value


def error_reason(error: object) -> str:
    """A bulk item's or msearch response's error as one line."""
    if isinstance(error, dict):
        return f"{error.get('type', 'error')}: {error.get('reason', '')}".strip()
    return str(error)


def open_client(
    url: str, *, api_key_env: str | None = None, username_env: str | None = None, password_env: str | None = None,
    ca_certs: str | None = None, request_timeout: float = 60, max_retries: int = 5,
) -> tuple[Elasticsearch, str]:
    """A client for the server at `url` and the server's version, or BackendUnavailable saying why
    not (unreachable, not Elasticsearch, refused credentials, another major version). Shared by the
    lexical backend and the sparse vector backend (irforge.corpus.vectors.elasticsearch)."""
    client = Elasticsearch(
        url,
        api_key=_secret(api_key_env) if api_key_env else None,
        basic_auth=(_secret(username_env), _secret(password_env)) if username_env else None,
        ca_certs=ca_certs,
        request_timeout=request_timeout,
        max_retries=max_retries,
        retry_on_timeout=True,
        retry_on_status=(429, 502, 503, 504),
    )
    try:
        return client, _server_version(client, redact_url(url))
    except BaseException:
        client.close()
        raise


def _server_version(client: Elasticsearch, url: str) -> str:
    where = f"Elasticsearch at {url}"
    try:
        server_version = client.info()["version"]["number"]
    except UnsupportedProductError:
        raise BackendUnavailable(
            f"the server at {url} is not Elasticsearch; point the backend at an Elasticsearch server"
        ) from None
    except ApiError as error:
        # An older major version refuses the client's "compatible-with=<client major>" header.
        if "media_type_header_exception" in str(error):
            raise BackendUnavailable(
                f"{where} rejected the client's version header: it is older than the Python client "
                f"elasticsearch {CLIENT_VERSION}; run an Elasticsearch {CLIENT_VERSION.split('.')[0]}.x server"
            ) from None
        if error.status_code in (401, 403):
            raise BackendUnavailable(
                f"{where} refused the credentials ({error.status_code}); check the environment variables "
                "named by api_key_env, or username_env and password_env"
            ) from None
        raise BackendUnavailable(f"{where} answered {error.status_code} to info(): {error.message}") from None
    except TransportError as error:
        raise BackendUnavailable(
            f"cannot reach {where} ({type(error).__name__}: {error.message}); start the server or fix the URL"
        ) from None
    problem = version_mismatch(server_version)
    if problem:
        raise BackendUnavailable(f"{where}: {problem}")
    return server_version


@contextmanager
def reachable(url: str):
    """Turn a lost connection in the middle of work into BackendUnavailable (`url` already redacted)."""
    try:
        yield
    except TransportError as error:
        raise BackendUnavailable(
            f"lost Elasticsearch at {url} ({type(error).__name__}: {error.message}); check the server and retry"
        ) from None


class ElasticsearchConnection:
    """What both Elasticsearch backends (BM25 here, sparse vectors in corpus/vectors) hold: the
    checked options, the client (credentials read from the environment), the server's version."""

    def _connect(
        self, url: str, *, api_key_env: str | None, username_env: str | None, password_env: str | None,
        ca_certs: str | None, index_prefix: str, replicas: int, request_timeout: float, max_retries: int,
        bulk_batch_size: int,
    ) -> None:
        if not _SAFE_PREFIX.match(index_prefix):
            raise ValueError(f"index prefix {index_prefix!r} must be lowercase letters, digits, '.', '_', '-'")
        if (username_env is None) != (password_env is None):
            raise ValueError("give both username_env and password_env, or neither")
        if bulk_batch_size <= 0:
            raise ValueError(f"bulk_batch_size must be positive, got {bulk_batch_size}")
        self.url = redact_url(url)
        self.index_prefix = index_prefix
        self.replicas = replicas
        self.max_retries = max_retries
        self.bulk_batch_size = bulk_batch_size
        self._lock = threading.RLock()
        self._client, self.server_version = open_client(
            url, api_key_env=api_key_env, username_env=username_env, password_env=password_env, ca_certs=ca_certs,
            request_timeout=request_timeout, max_retries=max_retries,
        )

    @contextmanager
    def _reachable(self):
        with reachable(self.url):
            yield
