"""`irforge datasets download`: fetch an archive, verify it against the published checksum, and
make the dataset appear in one rename.

    .NAME.zip.part  streamed here (resumed with an HTTP Range request after a dropped connection,
                    in this run's retries or the next run); at most the download cap (limits.py)
    verify          md5/sha256 of the whole file against the catalogue, BEFORE anything is unpacked
    staging folder  beside the target: the archive unpacked (extract.py, within the caps) plus the marker
    rename          the staging folder becomes DIR/SOURCE/NAME (common/output_set.OutputSet)

A copy's folder never nests in another's, nor holds one: --force replaces one dataset's copy and
never deletes another's (store.copy_around, store.copies_inside).

Proxies: httpx reads HTTPS_PROXY, HTTP_PROXY, ALL_PROXY and NO_PROXY (trust_env); --proxy
overrides them. Only connection failures, timeouts, 408, 429 and 5xx are retried.
"""

from __future__ import annotations

import hashlib
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Callable


from irforge import __version__
from irforge.common.files import NoSpaceLeft, is_disk_full, write_json_atomic
from irforge.common.locks import ExclusiveLock, LockHeld
from irforge.common.output_set import OutputSet
from irforge.common.progress import tqdm_progress
from irforge.datasets.catalog import Entry
from irforge.datasets.errors import ChecksumMismatch, DatasetError
from irforge.datasets.extract import extract_zip
from irforge.datasets.limits import Caps, Limits, human
from irforge.datasets.store import (MARKER, copies_inside, copy_around, copy_state, default_datasets_dir, lock_path,
                                    part_path)

if TYPE_CHECKING:   # httpx is imported where a download starts: `irforge --help` loads this module's names
    import httpx

MIRROR_VARIABLE = "IRFORGE_DATASETS_MIRROR"
RETRYABLE_STATUS = {408, 429, 500, 502, 503, 504}
CHUNK = 1 << 20


@dataclass(frozen=True)
class DownloadOptions:
    datasets_dir: Path | None = None   # None: $IRFORGE_DATASETS_DIR or the user data dir
    mirror: str | None = None          # base URL replacing BEIR's (the archive's name is appended)
    proxy: str | None = None           # overrides the *_PROXY variables
    timeout_s: float = 30.0            # to connect, and between two reads of the body
    retries: int = 3                   # further tries after a connection failure
    backoff_s: float = 1.0             # wait before the first retry, doubling
    force: bool = False                # replace a copy that is not of this archive
    limits: Limits = Limits()          # the download and unpacking caps set explicitly (limits.py)


@dataclass(frozen=True)
class Outcome:
    path: Path
    downloaded: bool          # False: a complete copy was already there, nothing was done
    url: str = ""
    size: int = 0
    files: int = 0


class _Retryable(Exception):
    """An HTTP status worth another try (busy or failing server)."""


class _TooLarge(DatasetError):
    """The server sends (or announces) more than the download cap: the .part goes."""


def download_dataset(entry: Entry, options: DownloadOptions = DownloadOptions(),
                     say: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True)) -> Outcome:
    """Make DIR/NAME a complete, verified copy of `entry`'s archive (see the module's docstring);
    a no-op when it already is one. Raises DatasetError (ChecksumMismatch) with nothing complete-looking left."""
    entry = entry.with_mirror(options.mirror)
    _check_url("--mirror" if options.mirror and entry.source == "BEIR" else "url", entry.url)
    folder = Path(options.datasets_dir or default_datasets_dir())
    caps = options.limits.resolve(entry)   # a bad $IRFORGE_DATASETS_MAX_* is refused before any request
    _refuse_nesting_around(entry, folder)
    state = copy_state(entry, folder)
    if state.complete and not options.force:
        return Outcome(state.path, downloaded=False)
    try:
        state.path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise DatasetError(f"{entry.name}: cannot make {state.path.parent} ({error.strerror or error})") from None
    try:
        with ExclusiveLock(lock_path(entry, folder)):   # one download of a dataset at a time
            state = copy_state(entry, folder)   # another process may have finished it meanwhile
            if state.complete and not options.force:
                return Outcome(state.path, downloaded=False)
            inside = copies_inside(state.path) if state.path.is_dir() else []
            if inside:
                raise DatasetError(f"{entry.name}: {state.path} holds the downloaded dataset"
                                   f"{'s' if len(inside) > 1 else ''} {', '.join(str(p) for p in inside[:3])}; dataset "
                                   "folders never nest, and replacing this one would delete them: refused, even with "
                                   "--force (move them out of it first)")
            if state.path.exists() and not options.force:
                what = "a copy of another archive" if state.marker else "not an irforge download"
                raise DatasetError(f"{entry.name}: {state.path} exists and is {what}; --force replaces it")
            return _download(entry, options, caps, state.path, part_path(entry, folder), say)
    except LockHeld as held:
        raise DatasetError(f"{entry.name}: another irforge process (pid {held.holder or 'unknown'}) is downloading it into "
                           f"{folder}; wait for it to finish") from None


def _refuse_nesting_around(entry: Entry, folder: Path) -> None:
    around = copy_around(entry, folder)
    if around is not None:
        other = around.relative_to(folder).as_posix()
        raise DatasetError(f"{entry.name}: its folder {folder / entry.name} would lie inside the downloaded dataset "
                           f"{other} ({around}); dataset folders never nest: rename {entry.name} in the catalogue, or "
                           f"use another datasets folder (--to)")


def _download(entry: Entry, options: DownloadOptions, caps: Caps, target: Path, part: Path, say) -> Outcome:
    part.parent.mkdir(parents=True, exist_ok=True)
    resumed = part.stat().st_size if part.exists() else 0
    if resumed:
        say(f"{entry.name}: resuming the {resumed} bytes of an earlier download ({part})")
    try:
        with _client(options) as client:
            _fetch(client, entry, part, options, caps, say)
            digests = _digests(part)
            if digests[entry.algorithm] != entry.checksum and resumed:
                # The kept bytes may be of another file (the mirror or upstream changed since): start over once.
                say(f"{entry.name}: the resumed download does not verify; downloading it again from the start")
                part.unlink()
                _fetch(client, entry, part, options, caps, say)
                digests = _digests(part)
    except _TooLarge:
        part.unlink(missing_ok=True)   # more than the cap is not the archive: nothing worth resuming
        raise
    except OSError as error:
        if not is_disk_full(error):
            raise
        # A body that fills the disk (endless, or under a cap larger than the free space): keeping the
        # .part would keep the disk full, so it goes, and the message names it.
        part.unlink(missing_ok=True)
        raise NoSpaceLeft(part, "the partial download is removed") from None
    if digests[entry.algorithm] != entry.checksum:
        part.unlink(missing_ok=True)
        raise ChecksumMismatch(entry.name, entry.url, entry.algorithm, entry.checksum, digests[entry.algorithm])
    size = part.stat().st_size
    say(f"{entry.name}: {entry.algorithm} verified ({entry.checksum}); extracting")
    try:
        with OutputSet(target, replaces=None) as staging:
            files = extract_zip(part, staging, entry.name, caps, entry.url)
            # In the staged set, so the folder and its marker appear together: no marker, not complete.
            write_json_atomic(staging / MARKER, {
                "name": entry.name, "url": entry.url, "algorithm": entry.algorithm, "checksum": entry.checksum,
                "md5": digests["md5"], "sha256": digests["sha256"], "size": size, "files": files,
                "downloaded_at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "irforge": __version__,
                # The catalogue file that named it: `--dataset NAME` needs it again (resolve.py says so).
                "catalog": None if entry.source == "BEIR" else str(Path(entry.source).resolve()),
            })
    except DatasetError:
        part.unlink(missing_ok=True)   # verified yet unusable (unsafe entries): downloading it again changes nothing
        raise
    part.unlink(missing_ok=True)
    return Outcome(target, downloaded=True, url=entry.url, size=size, files=files)


def _check_url(what: str, url: str) -> None:
    if not url.startswith(("http://", "https://")):
        raise DatasetError(f"{what} {url}: only http:// and https:// URLs can be fetched")


def _client(options: DownloadOptions) -> httpx.Client:
    import httpx

    if options.proxy and not options.proxy.startswith(("http://", "https://", "socks5://", "socks5h://")):
        raise DatasetError(f"--proxy {options.proxy}: expected a URL such as http://proxy.example:3128")
    try:
        return httpx.Client(proxy=options.proxy or None, trust_env=True, follow_redirects=True,
                            timeout=httpx.Timeout(options.timeout_s),
                            headers={"User-Agent": f"irforge/{__version__}", "Accept-Encoding": "identity"})
    except (ValueError, ImportError, httpx.InvalidURL) as error:   # socks5 without socksio, a malformed URL
        raise DatasetError(f"--proxy {options.proxy}: {error}") from None


def _fetch(client: httpx.Client, entry: Entry, part: Path, options: DownloadOptions, caps: Caps, say) -> None:
    """Stream entry.url into `part`, resuming what is there; retried on connection failures."""
    import httpx

    tries = options.retries + 1
    for attempt in range(1, tries + 1):
        try:
            _fetch_once(client, entry, part, caps)
            return
        except httpx.UnsupportedProtocol as error:
            raise DatasetError(f"{entry.name}: {entry.url}: {error}") from None
        except httpx.TooManyRedirects:
            raise DatasetError(f"{entry.name}: {entry.url} redirects more than {client.max_redirects} times (a redirect "
                               "loop?): nothing downloaded; check the catalogue's url or the --mirror") from None
        except (httpx.TransportError, _Retryable) as error:
            kept = part.stat().st_size if part.exists() else 0
            if attempt == tries:
                raise DatasetError(
                    f"{entry.name}: could not download {entry.url} after {tries} tries: {_describe(error)}. "
                    f"{kept} bytes are kept in {part}: the next download resumes them. Behind a firewall? "
                    "--mirror, --proxy or HTTPS_PROXY (docs/datasets.md)") from None
            wait = options.backoff_s * 2 ** (attempt - 1)
            say(f"{entry.name}: {_describe(error)}; retrying in {wait:g}s (try {attempt + 1} of {tries}, from byte {kept})")
            time.sleep(wait)
        except httpx.HTTPError as error:   # not worth another try: a body that cannot be decoded, ...
            raise DatasetError(f"{entry.name}: could not download {entry.url}: {_describe(error)}") from None


def _fetch_once(client: httpx.Client, entry: Entry, part: Path, caps: Caps) -> None:
    offset = part.stat().st_size if part.exists() else 0
    headers = {"Range": f"bytes={offset}-"} if offset else {}
    with client.stream("GET", entry.url, headers=headers) as response:
        if response.status_code == 416 and offset:
            return   # nothing after `offset`: the kept file is whole (the checksum says whether it is right)
        if response.status_code in RETRYABLE_STATUS:
            raise _Retryable(f"HTTP {response.status_code} from {entry.url}")
        if response.status_code >= 400:
            raise DatasetError(f"{entry.name}: HTTP {response.status_code} {response.reason_phrase} from {entry.url}"
                               + (" (does the mirror hold " + entry.archive_name + "?)" if entry.source == "BEIR" else ""))
        if offset and response.status_code == 206 and _range_start(response) == offset:
            mode = "ab"
        else:
            offset, mode = 0, "wb"   # the server sent the whole file: start over
        length = response.headers.get("Content-Length")
        total = offset + int(length) if length and length.isdigit() else None
        cap = caps.download[0]
        if total is not None and total > cap:
            raise _TooLarge(f"{entry.name}: {entry.url} announces {human(total)} (Content-Length), more than "
                            f"{caps.allowed('download')}; {caps.hint('download')}; nothing downloaded")
        resuming = f" (resuming at {human(offset)})" if offset else ""
        bar = tqdm_progress(f"download {entry.name}{resuming}", total - offset if total is not None else None, "B")
        with open(part, mode) as out:
            # No chunk size: bytes are written as they arrive, so a dropped connection keeps all it got.
            received = offset
            try:
                for chunk in response.iter_bytes():   # decoded: the file, whatever Content-Encoding carried it
                    received += len(chunk)
                    if received > cap:   # an endless body, or one longer than it announced
                        raise _TooLarge(f"{entry.name}: {entry.url} sent more than {caps.allowed('download')} (an "
                                        f"endless body?); {caps.hint('download')}; the partial file {part} is removed")
                    out.write(chunk)
                    bar.update(len(chunk))
            finally:
                bar.close()


def _range_start(response: httpx.Response) -> int | None:
    value = response.headers.get("Content-Range", "")   # bytes START-END/TOTAL
    try:
        return int(value.split()[1].split("-")[0])
    except (IndexError, ValueError):
        return None


def _digests(path: Path) -> dict[str, str]:
    md5, sha256 = hashlib.md5(usedforsecurity=False), hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(CHUNK), b""):
            md5.update(block)
            sha256.update(block)
    return {"md5": md5.hexdigest(), "sha256": sha256.hexdigest()}


def _describe(error: Exception) -> str:
    text = str(error) or type(error).__name__
    return text if isinstance(error, _Retryable) else f"{type(error).__name__}: {text}"
