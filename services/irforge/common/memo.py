"""Facts worked out from unchanging inputs, remembered between runs so a repeated command does
not work them out again: a corpus's detected language, the documents its analysis leaves empty.

Each fact is a small JSON file under the user cache dir (`cache_folder()/facts/KIND/`), named
by the SHA-256 of everything it depends on (content fingerprints, settings, the version of the
code that computes it), and it holds that key too, checked on reading. Only pure functions of
their key belong here: a fact is never invalidated, a changed input is a different key. A
missing, unreadable or corrupt file is computed again; a cache dir that cannot be written costs
only the time (logged), never the command.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from irforge.common.files import write_json_atomic

log = logging.getLogger(__name__)

T = TypeVar("T")


def cache_folder() -> Path:
    """$IRFORGE_CACHE_DIR, else the user cache dir (e.g. ~/.cache/irforge): where the embedding
    cache, the generation cache, encoder exports and remembered facts live."""
    folder = os.environ.get("IRFORGE_CACHE_DIR")
    if not folder:
        import platformdirs

        folder = platformdirs.user_cache_dir("irforge")
    return Path(folder).expanduser()


def _path(kind: str, key: dict) -> Path:
    digest = hashlib.sha256(json.dumps(key, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()
    return cache_folder() / "facts" / kind / f"{digest}.json"


def recall(kind: str, key: dict):
    """The fact remembered under `key`, or None."""
    path = _path(kind, key)
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as error:
        log.info("remembered %s at %s unreadable (%s): working it out again", kind, path, error)
        return None
    if not isinstance(stored, dict) or stored.get("key") != key or "value" not in stored:
        return None
    return stored["value"]


def remember(kind: str, key: dict, value) -> None:
    """Keep `value` (JSON) under `key`; a cache dir that cannot be written is logged and passed over."""
    path = _path(kind, key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(path, {"key": key, "value": value})
    except Exception as error:   # noqa: BLE001 - a cache is never worth failing the command for
        log.info("could not remember %s at %s (%s): it will be worked out again next time", kind, path, error)


def remembered(kind: str, key: dict, compute: Callable[[], T]) -> T:
    """The fact under `key`: remembered, else computed (and remembered; an exception is not)."""
    value = recall(kind, key)
    if value is None:
        value = compute()
        remember(kind, key, value)
    return value
