"""`--dataset` takes a folder or a dataset name: resolve_dataset turns either into the folder.

- A path that exists is used as it is, always: a folder of yours is never shadowed by a name.
- Otherwise `SOURCE/NAME` from the catalogue (`beir/scifact`) is the complete downloaded copy in
  the datasets folder; `SOURCE/NAME/SUB` a folder inside it (`beir/cqadupstack/android`).
- `irds:NAME` is a dataset of the ir_datasets package, read from its local cache (datasets/irds.py).
- A known name not yet downloaded is an error giving the exact `irforge datasets download` command;
  anything else is an error suggesting the nearest names. Bare words (`scifact`) are not names:
  they are folders, and a missing one is answered with "did you mean 'beir/scifact'?".
"""

from __future__ import annotations

import difflib
from pathlib import Path

from irforge.datasets.catalog import CATALOG_VARIABLE, NAME, Catalog, load_catalog
from irforge.datasets.errors import DatasetError
from irforge.datasets.irds import is_irds, resolve_irds
from irforge.datasets.store import copy_state, default_datasets_dir, read_marker


def resolve_dataset(value: str | Path, *, datasets_dir: str | Path | None = None, catalog: Catalog | None = None) -> Path:
    """The folder `value` names (see the module's docstring); DatasetError (a ValueError) when none.
    `datasets_dir` defaults to $IRFORGE_DATASETS_DIR or the user data dir; `catalog` to BEIR's plus
    $IRFORGE_DATASETS_CATALOG's."""
    path = Path(value)
    if path.exists():
        return path
    folder = Path(datasets_dir) if datasets_dir is not None else default_datasets_dir()
    if is_irds(value):
        return resolve_irds(str(value), folder)
    text = str(value).strip().rstrip("/")
    catalog = catalog if catalog is not None else load_catalog()
    entry, rest = _entry_and_rest(text, catalog)
    if entry is None:
        nearby = _nearest_folder(path)   # a typo in a folder of yours: the folder beside it, not a download
        raise DatasetError(f"{value}: dataset folder not found, nor is it a dataset name"
                           f"{nearby or catalog.suggest(text)}{_catalogue_hint(text, folder)} "
                           "(irforge datasets list shows the names)")
    state = copy_state(entry, folder)
    if not state.complete:
        to = f" --to {folder}" if folder != default_datasets_dir() else ""
        found = f"; {state.describe}" if state.describe != "-" else ""
        raise DatasetError(f"{value}: dataset {entry.name} is not downloaded in {folder}{found}; run: "
                           f"irforge datasets download {entry.name}{to}")
    resolved = state.path / rest if rest else state.path
    if not resolved.is_dir():
        raise DatasetError(f"{value}: dataset {entry.name} has no folder {rest!r} (in {state.path})")
    return resolved


def is_dataset_name(value: str | Path, *, catalog: Catalog | None = None) -> bool:
    """True when `value` is no existing path but starts with a catalogue name (`beir/scifact`,
    `beir/cqadupstack/android`): for callers that must pass other missing paths on unchanged
    (`irforge submit`, whose orchestrator may see folders this machine does not)."""
    if Path(value).exists():
        return False
    if is_irds(value):
        return True
    try:
        return _entry_and_rest(str(value).strip().rstrip("/"), catalog if catalog is not None else load_catalog())[0] is not None
    except DatasetError:
        return True   # a name with a bad sub-folder: resolve_dataset says what is wrong


def _entry_and_rest(text: str, catalog: Catalog):
    """The catalogue entry a name starts with (the longest) and the sub-folder after it."""
    parts = text.split("/")
    for cut in range(len(parts), 1, -1):
        name = "/".join(parts[:cut])
        if name in catalog:
            rest = "/".join(parts[cut:])
            if any(part in ("", ".", "..") for part in parts[cut:]):
                raise DatasetError(f"{text}: {rest!r} is not a folder name inside dataset {name}")
            return catalog.get(name), rest
    return None, ""


def _nearest_folder(path: Path) -> str:
    """'; did you mean the folder ../data/beir/scifact?' when the missing folder's parent exists
    and holds a folder with a close name (scifactt, SciFact, nfcorpu), else ''."""
    parent = path.parent
    try:
        siblings = [child.name for child in parent.iterdir() if child.is_dir()] if parent.is_dir() else []
    except OSError:
        return ""
    by_lower = {name.lower(): name for name in siblings}
    close = difflib.get_close_matches(path.name.lower(), list(by_lower), n=1, cutoff=0.75)
    return f"; did you mean the folder {parent / by_lower[close[0]]}?" if close else ""


def _catalogue_hint(text: str, folder: Path) -> str:
    """'; it was downloaded from catalogue FILE: set ...' when the datasets folder holds a copy by
    this name whose catalogue is not in use (the name is then unknown here, yet the copy is there)."""
    if not NAME.match(text):
        return ""
    marker = read_marker(folder / text)
    if not marker or not marker.get("catalog"):
        return ""
    return f"; {folder / text} was downloaded with the catalogue {marker['catalog']}: set {CATALOG_VARIABLE}={marker['catalog']}"
