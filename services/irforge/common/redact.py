"""Credentials out of URLs before they are recorded or printed: results.json, job records and
events, logs, error messages. Endpoint and judge URLs come from a team's spec, and teams do write
`https://user:pass@host/v1` or `...?api_key=...`; the URL still has to be recorded (which host
answered), so only the secrets go.

    redact_url("https://u:p@h:8443/v1?api_key=k&top=5")  -> "https://***@h:8443/v1?api_key=***&top=5"
    redact_text("POST https://u:p@h/x failed")            -> "POST https://***@h/x failed"
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

MASK = "***"
# Query keys that carry secrets, by name: api_key, apikey, key, token, access_token, sig, password...
_SECRET_KEY = re.compile(r"(^|[_\-.])(key|apikey|token|secret|password|passwd|pwd|auth|authorization|"
                         r"signature|sig|credential|credentials|session)$|^(x-)?api[_\-]?key$", re.IGNORECASE)
_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s'\"<>`]+")
_QUERY_PAIR = re.compile(r"([^&=;]+)=([^&;]*)")


def redact_url(url: str) -> str:
    """`url` without a user:password and without the values of secret query parameters."""
    if "://" not in url:
        return url  # HOST:PORT (gRPC endpoints) carries no credentials
    try:
        parts = urlsplit(url)
    except ValueError:
        return _URL.sub(MASK, url)  # unparseable: drop it whole rather than risk a secret
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{MASK}@{netloc.rsplit('@', 1)[1]}"
    query = _QUERY_PAIR.sub(lambda m: f"{m[1]}={MASK}" if _SECRET_KEY.search(m[1]) else m[0], parts.query)
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def redact_text(text: str) -> str:
    """`text` with every URL in it redacted (error messages, log lines, event messages)."""
    return _URL.sub(lambda m: redact_url(m[0]), text) if "://" in text else text


def host_of(url: str) -> str:
    """HOST:PORT of a URL (or of a gRPC HOST:PORT), never its user:password."""
    netloc = urlsplit(url if "://" in url else f"grpc://{url}").netloc
    return netloc.rsplit("@", 1)[-1]
