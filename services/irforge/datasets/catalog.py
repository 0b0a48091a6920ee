"""Which datasets irforge can fetch by name: the BEIR archives with their published checksums,
and the entries of a team's own catalogue file.

Every name has the form SOURCE/NAME (`beir/scifact`, `team/support-tickets`): never a bare word,
so a name cannot be mistaken for a folder in the current directory (see resolve.py), and the name
is also the copy's path below the datasets folder.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from irforge.datasets.errors import DatasetError
from irforge.datasets.limits import parse_size

BEIR_BASE_URL = "https://public.ukp.informatik.tu-darmstadt.de/thakur/BEIR/datasets"
CATALOG_VARIABLE = "IRFORGE_DATASETS_CATALOG"
ALGORITHMS = ("md5", "sha256")
SIZES = ("archive_size", "unpacked_size")   # optional, bytes or 500M / 2G: the download's caps (limits.py)
# Folder-safe: segments start with a letter or digit (no `..`, no hidden folders), at least two of them.
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)+$")

# The md5 of each archive as BEIR publishes it: the "Available Datasets" table (md5 column) of the
# BEIR README, github.com/beir-cellar/beir, README.md. Cross-checked: scifact and nfcorpus against
# the checksums quoted in this project's issue, arguana against an independent copy of the table.
# Not here because BEIR publishes no archive (and so no md5) for them: bioasq, signal1m, trec-news,
# robust04 (licensed corpora; BEIR links to instructions to rebuild them).
BEIR_MD5 = {
    "msmarco": "444067daf65d982533ea17ebd59501e4",
    "trec-covid": "ce62140cb23feb9becf6270d0d1fe6d1",
    "nfcorpus": "a89dba18a62ef92f7d323ec890a0d38d",
    "nq": "d4d3d2e48787a744b6f6e691ff534307",
    "hotpotqa": "f412724f78b0d91183a0e86805e16114",
    "fiqa": "17918ed23cd04fb15047f73e6c3bd9d9",
    "arguana": "8ad3e3c2a5867cdced806d6503f29b99",
    "webis-touche2020": "46f650ba5a527fc69e0a6521c5a23563",
    "cqadupstack": "4e41456d7df8ee7760a7f866133bda78",
    "quora": "18fb154900ba42a600f84b839c173167",
    "dbpedia-entity": "c2a39eb420a3164af735795df012ac2c",
    "scidocs": "38121350fc3a4d2f48850f6aff52e4a9",
    "fever": "5a818580227bfb4b35bb6fa46d9b6c03",
    "climate-fever": "8b66f0a9126c521bae2bde127b4dc99d",
    "scifact": "5f7d1de60b170fc8027bb7898e2efca1",
}
BEIR_UNPUBLISHED = ("bioasq", "signal1m", "trec-news", "robust04")


@dataclass(frozen=True)
class Entry:
    name: str          # SOURCE/NAME, also the copy's path below the datasets folder
    url: str           # the archive (a .zip)
    algorithm: str     # md5 | sha256
    checksum: str      # lowercase hex, as published
    source: str        # where the entry comes from: "BEIR" or the catalogue file
    archive_size: int | None = None    # bytes, when the catalogue declares them: the download's cap (limits.py)
    unpacked_size: int | None = None   # bytes the archive unpacks to, when declared: the unpacked cap

    @property
    def archive_name(self) -> str:
        return self.url.rsplit("/", 1)[-1]

    def with_mirror(self, mirror: str | None) -> "Entry":
        """This entry fetched from `mirror` (a base URL) when it is a BEIR archive; a catalogue
        entry keeps its own URL. The checksum stays the published one: a mirror cannot change it."""
        if not mirror or self.source != "BEIR":
            return self
        return dataclasses.replace(self, url=f"{mirror.rstrip('/')}/{self.archive_name}")


BEIR = tuple(Entry(f"beir/{name}", f"{BEIR_BASE_URL}/{name}.zip", "md5", md5, "BEIR") for name, md5 in BEIR_MD5.items())


class Catalog:
    """The built-in BEIR entries plus those of a catalogue file, by name."""

    def __init__(self, entries: tuple[Entry, ...] = BEIR):
        self.entries = {entry.name: entry for entry in entries}

    def __iter__(self):
        return iter(self.entries.values())

    def __contains__(self, name: str) -> bool:
        return name in self.entries

    def get(self, name: str) -> Entry:
        """The entry called `name`, or a DatasetError suggesting the nearest names."""
        if name in self.entries:
            return self.entries[name]
        raise DatasetError(f"{name!r} is not a dataset irforge knows{self.suggest(name)} (irforge datasets list shows them all)")

    def suggest(self, name: str) -> str:
        """'; did you mean ...?' with the nearest names ('scifact' finds 'beir/scifact'), or ''."""
        names = list(self.entries)
        leaves = {entry.rsplit("/", 1)[-1]: entry for entry in names}
        # Leaves first: the shared `beir/` would make every full name look close to every other.
        close = [leaves[leaf] for leaf in difflib.get_close_matches(name.rsplit("/", 1)[-1], list(leaves), n=3, cutoff=0.75)]
        close += [full for full in difflib.get_close_matches(name, names, n=3, cutoff=0.85) if full not in close]
        return f"; did you mean {' or '.join(repr(c) for c in close[:3])}?" if close else ""


def load_catalog(path: str | Path | None = None) -> Catalog:
    """BEIR's archives, plus the entries of `path` or else of $IRFORGE_DATASETS_CATALOG."""
    path = path or os.environ.get(CATALOG_VARIABLE) or None
    if path is None:
        return Catalog()
    return Catalog(BEIR + tuple(read_catalog_file(Path(path))))


def read_catalog_file(path: Path) -> list[Entry]:
    """A YAML or JSON list of {name, url, md5 | sha256}; every problem names the file and entry."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise DatasetError(f"catalogue {path}: cannot read it ({error.strerror or error})") from None
    try:
        items = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as error:
        raise DatasetError(f"catalogue {path}: not valid {'JSON' if path.suffix == '.json' else 'YAML'} ({error})") from None
    if isinstance(items, dict) and "datasets" in items:
        items = items["datasets"]
    if not isinstance(items, list):
        raise DatasetError(f"catalogue {path}: expected a list of {{name, url, md5 or sha256}} (or `datasets:` holding one)")
    entries, seen = [], set()
    for number, item in enumerate(items, 1):
        entry = _entry(path, number, item)
        if entry.name.startswith("beir/"):
            raise DatasetError(f"catalogue {path}, entry {number}: {entry.name}: beir/ names are BEIR's own archives "
                               "(--mirror fetches them from elsewhere); name yours SOURCE/NAME, e.g. team/tickets")
        if entry.name in seen:
            raise DatasetError(f"catalogue {path}, entry {number}: {entry.name} is named twice")
        seen.add(entry.name)
        entries.append(entry)
    _refuse_nesting(path, entries)
    return entries


def _refuse_nesting(path: Path, entries: list[Entry]) -> None:
    """A name is its copy's folder: `team/good/inner` would unpack inside team/good's copy, and
    replacing team/good (--force) would delete it. Dataset folders never nest."""
    names = {entry.name for entry in entries}
    for entry in entries:
        parts = entry.name.split("/")
        outer = next(("/".join(parts[:cut]) for cut in range(2, len(parts)) if "/".join(parts[:cut]) in names), None)
        if outer is not None:
            raise DatasetError(f"catalogue {path}: {entry.name} and {outer}: the folder of {entry.name} would be inside "
                               f"the folder of {outer}, and dataset folders never nest; rename one (e.g. "
                               f"{outer}-{parts[-1]})")


def _entry(path: Path, number: int, item) -> Entry:
    where = f"catalogue {path}, entry {number}"
    if not isinstance(item, dict):
        raise DatasetError(f"{where}: expected a mapping with name, url and md5 or sha256")
    unknown = sorted(set(item) - {"name", "url", *ALGORITHMS, *SIZES})
    if unknown:
        raise DatasetError(f"{where}: unknown key {unknown[0]!r} (keys: name, url, md5, sha256, {', '.join(SIZES)})")
    name, url = item.get("name"), item.get("url")
    if not isinstance(name, str) or not NAME.match(name):
        raise DatasetError(f"{where}: name {name!r} must look like SOURCE/NAME (letters, digits, . _ -), e.g. team/tickets")
    if not isinstance(url, str) or not url.startswith(("http://", "https://")) or not url.lower().endswith(".zip"):
        raise DatasetError(f"{where} ({name}): url {url!r} must be an http(s) URL of a .zip archive")
    given = [algorithm for algorithm in ALGORITHMS if item.get(algorithm) is not None]
    if len(given) != 1:
        raise DatasetError(f"{where} ({name}): give exactly one checksum, md5 or sha256 (a download is never unverified)")
    algorithm = given[0]
    checksum = str(item[algorithm]).strip().lower()
    if not re.fullmatch(r"[0-9a-f]{%d}" % (32 if algorithm == "md5" else 64), checksum):
        raise DatasetError(f"{where} ({name}): {algorithm} {item[algorithm]!r} is not a {algorithm} hex digest")
    sizes = {key: parse_size(item[key], f"{where} ({name}): {key}") for key in SIZES if item.get(key) is not None}
    return Entry(name, url, algorithm, checksum, str(path), **sizes)
