"""Lexical backends: `embedded` (bm25s, on disk, no server) and `elasticsearch` (official client)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import platformdirs

if TYPE_CHECKING:   # an annotation only: `irforge service`'s flags read BACKENDS without numpy
    from irforge.corpus.lexical.base import LexicalBackend

BACKENDS = ("embedded", "elasticsearch")


def default_index_dir() -> Path:
    """$IRFORGE_INDEX_DIR, else the user's data directory (e.g. ~/.local/share/irforge/indexes)."""
    return Path(os.environ.get("IRFORGE_INDEX_DIR") or Path(platformdirs.user_data_dir("irforge")) / "indexes")


def make_backend(kind: str, *, index_dir: str | Path | None = None, elasticsearch_url: str | None = None) -> LexicalBackend:
    """Build a backend by name. Imports are lazy: the embedded default never loads the ES client."""
    if kind == "embedded":
        from irforge.corpus.lexical.embedded import EmbeddedBackend

        return EmbeddedBackend(index_dir or default_index_dir())
    if kind == "elasticsearch":
        from irforge.common.extras import require_extra

        require_extra("elasticsearch", "elasticsearch", "--backend elasticsearch")
        from irforge.corpus.lexical.elasticsearch import ElasticsearchBackend

        return ElasticsearchBackend(elasticsearch_url_from_env(elasticsearch_url), **elasticsearch_auth_from_env())
    raise ValueError(f"unknown lexical backend {kind!r}; choose one of {', '.join(BACKENDS)}")


def elasticsearch_url_from_env(url: str | None) -> str:
    """--elasticsearch-url, else $IRFORGE_ELASTICSEARCH_URL (the lexical and the sparse vector backend)."""
    url = url or os.environ.get("IRFORGE_ELASTICSEARCH_URL")
    if not url:
        raise ValueError("the elasticsearch backend needs --elasticsearch-url or IRFORGE_ELASTICSEARCH_URL")
    return url


def elasticsearch_auth_from_env() -> dict:
    """The names of the variables holding the credentials, and the CA file: credentials only ever
    come from the environment, and the backend reads the variables itself."""
    with_password = bool(os.environ.get("IRFORGE_ELASTICSEARCH_PASSWORD"))
    return {
        "api_key_env": "IRFORGE_ELASTICSEARCH_API_KEY" if os.environ.get("IRFORGE_ELASTICSEARCH_API_KEY") else None,
        "username_env": "IRFORGE_ELASTICSEARCH_USERNAME" if with_password else None,
        "password_env": "IRFORGE_ELASTICSEARCH_PASSWORD" if with_password else None,
        "ca_certs": os.environ.get("IRFORGE_ELASTICSEARCH_CA_CERTS") or None,
    }
