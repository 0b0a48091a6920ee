"""`irforge datasets download` against hostile catalogues, archives and servers (issue 24): dataset
folders never nest and --force never deletes another dataset; an archive whose entries cannot be
laid out, that names irforge's own files, or that unpacks to too much is refused whole; a redirect
loop or an endless body is a clear error. Every refusal: exit 2, a message naming what and where,
no folder, staging folder or .part left. Real zips, real HTTP servers on 127.0.0.1."""

from __future__ import annotations

import functools
import gzip
import hashlib
import io
import json
import os
import zipfile
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from irforge.cli.main import main
from irforge.datasets.limits import RATIO_FLOOR, Caps, Limits
from irforge.datasets.store import MARKER

from ..datasets import http_stand_ins as stand_ins
from .test_disks_and_files import full_disk   # noqa: F401 (a fixture) a real 1 MiB tmpfs, filled

ZEROS = RATIO_FLOOR + (2 << 20)   # a bomb just big enough for the ratio to count: 12 MiB of zeros in ~12 KB


@pytest.fixture(autouse=True)
def no_outside_configuration(monkeypatch):
    for variable in [*os.environ]:
        if variable.lower().endswith("_proxy") or variable.startswith("IRFORGE_DATASETS_"):
            monkeypatch.delenv(variable)


def zipped(entries: list[tuple[str, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries:
            archive.writestr(name, data)
    return buffer.getvalue()


GOOD = zipped([("good/corpus.jsonl", b'{"_id": "d1", "text": "good"}\n')])
INNER = zipped([("inner/corpus.jsonl", b'{"_id": "d2", "text": "inner"}\n')])


class Site:
    """An archive server on 127.0.0.1 and catalogues naming what it serves."""

    def __init__(self, tmp_path: Path):
        self.server = stand_ins.ArchiveServer({})
        self.tmp_path = tmp_path
        self.datasets = tmp_path / "datasets"

    def catalog(self, entries: dict[str, bytes], file: str = "catalog.json", **extra) -> Path:
        """A catalogue naming each archive (served at /<name>.zip) by its sha256; `extra` adds keys to all."""
        rows = []
        for name, data in entries.items():
            self.server.files[f"/{name}.zip"] = data
            rows.append({"name": name, "url": f"{self.server.url}/{name}.zip",
                         "sha256": hashlib.sha256(data).hexdigest(), **extra})
        path = self.tmp_path / file
        path.write_text(json.dumps(rows))
        return path

    def download(self, name: str, catalog: Path, *flags: str) -> int:
        return main(["datasets", "download", name, "--to", str(self.datasets), "--catalog", str(catalog), *flags])

    def leftovers(self) -> list[str]:
        """Everything in the datasets folder but lock files."""
        return sorted(p.relative_to(self.datasets).as_posix() for p in self.datasets.rglob("*")
                      if not p.name.endswith(".lock"))


@pytest.fixture
def site(tmp_path):
    running = Site(tmp_path)
    yield running
    running.server.close()


def copy_files(site: Site, name: str) -> list[str]:
    return sorted(p.relative_to(site.datasets / name).as_posix() for p in (site.datasets / name).rglob("*"))


# -- 1. dataset folders never nest ----------------------------------------------------------------

def test_nested_names_in_one_catalogue_are_refused_naming_both(site, capsys):
    catalog = site.catalog({"team/good": GOOD, "team/good/inner": INNER})
    assert site.download("team/good/inner", catalog) == 2
    err = capsys.readouterr().err
    assert f"catalogue {catalog}: team/good/inner and team/good:" in err and "never nest" in err
    assert not site.datasets.exists() and site.server.requests == []


def test_a_name_inside_another_copy_is_refused_and_force_never_deletes_another_dataset(site, capsys):
    outer = site.catalog({"team/good": GOOD}, "outer.json")      # two catalogues: each alone is fine
    inner = site.catalog({"team/good/inner": INNER}, "inner.json")
    assert site.download("team/good", outer) == 0
    before = copy_files(site, "team/good")
    assert site.download("team/good/inner", inner) == 2          # would unpack inside team/good's copy
    err = capsys.readouterr().err
    assert f"its folder {site.datasets / 'team/good/inner'} would lie inside the downloaded dataset team/good" in err
    assert copy_files(site, "team/good") == before               # not even a lock file went in

    # The other order (or a copy an older irforge nested): replacing team/good would delete the inner copy.
    site.datasets = site.tmp_path / "other"
    assert site.download("team/good/inner", inner) == 0
    for flags in ((), ("--force",)):
        assert site.download("team/good", outer, *flags) == 2
        err = capsys.readouterr().err
        assert f"{site.datasets / 'team/good'} holds the downloaded dataset {site.datasets / 'team/good/inner'}" in err
        assert "refused, even with --force" in err
    assert (site.datasets / "team/good/inner" / MARKER).is_file() and (site.datasets / "team/good/inner/corpus.jsonl").is_file()
    assert site.leftovers() == ["team", "team/good", "team/good/inner", f"team/good/inner/{MARKER}",
                                "team/good/inner/corpus.jsonl"]


# -- 2, 3. entries that cannot be laid out, or that pass for irforge's own files ------------------

@pytest.mark.parametrize("entries, said", [
    ([("ok/a", b"x"), ("ok/a/b", b"y")], "entry 'ok/a/b' lies below 'ok/a', which is a file"),
    ([("ok/a/b", b"y"), ("ok/a", b"x")], "entry 'ok/a/b' lies below 'ok/a', which is a file"),
    ([("m/corpus.jsonl", b"x"), (f"m/{MARKER}/", b"")], f"entry 'm/{MARKER}/' is named like irforge's own"),
    ([("m/corpus.jsonl", b"x"), (f"m/{MARKER}", b"{}")], f"entry 'm/{MARKER}' is named like irforge's own"),
    ([("m/corpus.jsonl", b"x"), (f"m/sub/{MARKER}", b"{}")], f"entry 'm/sub/{MARKER}' is named like irforge's own"),
    ([("m/corpus.jsonl", b"x"), ("m/.corpus.jsonl.irforge-host-1-ab12.tmp", b"")],
     "entry 'm/.corpus.jsonl.irforge-host-1-ab12.tmp' is named like irforge's own"),
], ids=["file-then-below", "below-then-file", "marker-folder", "marker-file", "marker-deeper", "temporary-name"])
def test_an_entry_that_cannot_be_laid_out_or_names_irforge_files_refuses_the_archive(entries, said, site, capsys):
    catalog = site.catalog({"team/bad": zipped(entries)})
    assert site.download("team/bad", catalog) == 2
    err = capsys.readouterr().err
    assert f"team/bad: archive {site.server.url}/team/bad.zip, {said}" in err and "refused, nothing extracted" in err
    assert site.leftovers() == ["team"]                          # no folder, no staging folder, no .part


# -- 4. caps on what an archive unpacks to ----------------------------------------------------------

def test_a_zip_bomb_is_refused_from_its_headers_before_a_byte_is_written(site, capsys):
    bomb = zipped([("b/zeros.bin", bytes(ZEROS))])
    catalog = site.catalog({"team/bomb": bomb})
    assert site.download("team/bomb", catalog) == 2
    err = capsys.readouterr().err
    assert f"team/bomb: archive {site.server.url}/team/bomb.zip: its headers declare 12.0 MiB unpacked from" in err
    assert "times the archive (a zip bomb?), more than the 100 times allowed (the default)" in err
    assert "--max-ratio or $IRFORGE_DATASETS_MAX_RATIO" in err
    assert site.leftovers() == ["team"]


@pytest.mark.parametrize("how", ["flag", "variable", "catalogue"])
def test_a_trusted_archive_over_the_default_ratio_is_let_through_when_configured(how, site, monkeypatch):
    bomb = zipped([("b/zeros.bin", bytes(ZEROS))])
    catalog = site.catalog({"team/bomb": bomb}, **({"unpacked_size": "13M"} if how == "catalogue" else {}))
    if how == "variable":
        monkeypatch.setenv("IRFORGE_DATASETS_MAX_RATIO", "5000")
    assert site.download("team/bomb", catalog, *(["--max-ratio", "5000"] if how == "flag" else [])) == 0
    assert (site.datasets / "team/bomb/zeros.bin").stat().st_size == ZEROS


@pytest.mark.parametrize("flags, variable, said", [
    (["--max-unpacked", "1M"], None, "its headers declare 2.0 MiB unpacked, more than the 1.0 MiB allowed (--max-unpacked)"),
    ([], ("IRFORGE_DATASETS_MAX_UNPACKED", "1M"), "more than the 1.0 MiB allowed ($IRFORGE_DATASETS_MAX_UNPACKED)"),
    (["--max-files", "3"], None, "5 entries, more than the 3 allowed (--max-files)"),
], ids=["size-flag", "size-variable", "files-flag"])
def test_the_unpacked_size_and_entry_count_are_capped(flags, variable, said, site, capsys, monkeypatch):
    archive = zipped([(f"t/part{n}.bin", os.urandom(400 << 10)) for n in range(5)])   # 2 MiB that do not compress
    catalog = site.catalog({"team/big": archive})
    if variable:
        monkeypatch.setenv(*variable)
    assert site.download("team/big", catalog, *flags) == 2
    err = capsys.readouterr().err
    assert said in err and "nothing extracted" in err
    assert site.leftovers() == ["team"]


def test_a_catalogue_unpacked_size_below_the_truth_is_refused(site, capsys):
    catalog = site.catalog({"team/big": zipped([("t/x.bin", os.urandom(2 << 20))])}, unpacked_size="1M")
    assert site.download("team/big", catalog) == 2
    assert "more than the 1.0 MiB allowed (the catalogue's unpacked_size)" in capsys.readouterr().err


def test_bytes_written_are_counted_too_when_a_reader_gives_more_than_the_header_says(tmp_path):
    """zipfile stops each entry at its declared size (and checks its CRC); the count while writing
    is for any reader that would not: a header declaring 10 bytes whose entry yields more is refused."""
    from irforge.datasets import extract

    caps = Limits().resolve(_Entry())
    budget = extract._Budget(caps, archive_bytes=100, where="team/x: archive x.zip")
    info = zipfile.ZipInfo("x/liar.bin")
    info.file_size = 10
    with pytest.raises(ValueError, match="entry 'x/liar.bin' holds more than the 10 bytes its header declares"):
        extract._copy(io.BytesIO(bytes(5000)), open(tmp_path / "out", "wb"), info, budget)
    big = Caps(download=(1, ""), unpacked=(1000, "--max-unpacked"), ratio=(None, ""), files=(10, ""))
    budget = extract._Budget(big, archive_bytes=100, where="team/x: archive x.zip")
    info.file_size = 5000                                          # the header is honest, the total over the cap
    with pytest.raises(ValueError, match="unpacking wrote 4.9 KiB unpacked, more than the 1000 bytes allowed"):
        extract._copy(io.BytesIO(bytes(5000)), open(tmp_path / "out2", "wb"), info, budget)


class _Entry:
    archive_size = unpacked_size = None


# -- 5, 6. servers that never end --------------------------------------------------------------------

def serve(handler_body) -> tuple[object, str]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def do_GET(self):
            handler_body(self)

        def log_message(self, *args):
            pass

    return stand_ins.serve_on_loopback(Handler)


def test_a_redirect_loop_is_a_clear_error_naming_the_url(tmp_path, capsys):
    def loop(request):
        request.send_response(302)
        request.send_header("Location", "/loop.zip")
        request.send_header("Content-Length", "0")
        request.end_headers()

    server, url = serve(loop)
    try:
        site = Site.__new__(Site)
        site.tmp_path, site.datasets = tmp_path, tmp_path / "datasets"
        catalog = tmp_path / "c.json"
        catalog.write_text(json.dumps([{"name": "team/loop", "url": f"{url}/loop.zip", "md5": "0" * 32}]))
        assert site.download("team/loop", catalog, "--retries", "0") == 2
        assert f"team/loop: {url}/loop.zip redirects more than 20 times (a redirect loop?)" in capsys.readouterr().err
        assert site.leftovers() == ["team"]
    finally:
        stand_ins.stop(server)


@functools.cache
def gzipped_zeros() -> bytes:
    return gzip.compress(bytes(64 << 20), compresslevel=6)   # 64 MiB of zeros in ~64 KB


def endless(request, announce: int | None = None, gzipped: bool = False):
    """200 and zeros without end (no Content-Length: the body ends when the connection does),
    stopping after 64 MiB so an unfixed client fails the test instead of filling the disk; or those
    64 MiB gzipped, sent as Content-Encoding: gzip (asked for identity: a server may not care)."""
    request.send_response(200)
    if announce is not None:
        request.send_header("Content-Length", str(announce))
    if gzipped:
        request.send_header("Content-Encoding", "gzip")
    request.end_headers()
    try:
        if gzipped:
            request.wfile.write(gzipped_zeros())
            return
        for _ in range(1024):
            request.wfile.write(bytes(64 << 10))
    except OSError:
        pass   # the client hung up: what a capped download does


@pytest.mark.parametrize("how, said", [
    ("flag", "sent more than the 1.0 MiB allowed (--max-download) (an endless body?)"),
    ("variable", "sent more than the 1.0 MiB allowed ($IRFORGE_DATASETS_MAX_DOWNLOAD)"),
    ("catalogue", "sent more than the 512.0 KiB allowed (the catalogue's archive_size)"),
    ("announced", "announces 8.0 GiB (Content-Length), more than the 4.0 GiB allowed (the default)"),
    ("gzipped", "sent more than the 1.0 MiB allowed (--max-download)"),     # the decoded bytes count
])
def test_an_endless_or_oversized_body_is_capped_and_leaves_no_part(how, said, tmp_path, capsys, monkeypatch):
    server, url = serve(lambda request: endless(request, 8 << 30 if how == "announced" else None, how == "gzipped"))
    try:
        site = Site.__new__(Site)
        site.tmp_path, site.datasets = tmp_path, tmp_path / "datasets"
        catalog = tmp_path / "c.json"
        catalog.write_text(json.dumps([{"name": "team/endless", "url": f"{url}/endless.zip", "md5": "0" * 32,
                                        **({"archive_size": "512K"} if how == "catalogue" else {})}]))
        if how == "variable":
            monkeypatch.setenv("IRFORGE_DATASETS_MAX_DOWNLOAD", "1M")
        flags = ["--max-download", "1M"] if how in ("flag", "gzipped") else []
        assert site.download("team/endless", catalog, "--retries", "0", *flags) == 2
        err = capsys.readouterr().err
        assert f"team/endless: {url}/endless.zip {said}" in err
        assert site.leftovers() == ["team"]                      # the .part is gone
    finally:
        stand_ins.stop(server)


def test_a_bad_cap_is_refused_before_any_request(site, capsys, monkeypatch):
    catalog = site.catalog({"team/good": GOOD})
    assert site.download("team/good", catalog, "--max-download", "lots") == 2
    assert "--max-download: 'lots' is not a size" in capsys.readouterr().err
    monkeypatch.setenv("IRFORGE_DATASETS_MAX_RATIO", "-3")
    assert site.download("team/good", catalog) == 2
    assert "$IRFORGE_DATASETS_MAX_RATIO: '-3' must be positive" in capsys.readouterr().err
    assert site.server.requests == []


# -- 7. one dataset's temporary never lands where another's folder is -----------------------------

def test_a_dataset_named_like_another_ones_part_file_does_not_collide(site, capsys):
    catalog = site.catalog({"team/x.zip.part": GOOD, "team/x": INNER})
    assert site.download("team/x.zip.part", catalog) == 0
    assert site.download("team/x", catalog) == 0
    assert site.leftovers() == ["team", "team/x", "team/x.zip.part", f"team/x.zip.part/{MARKER}",
                                "team/x.zip.part/corpus.jsonl", f"team/x/{MARKER}", "team/x/corpus.jsonl"]
    assert json.loads((site.datasets / "team/x" / MARKER).read_text())["name"] == "team/x"


# -- 5b. an endless body under the default cap on a disk smaller than the cap ----------------------


def test_an_endless_body_that_fills_the_disk_leaves_no_part_and_names_it(full_disk, tmp_path, capsys):
    # The default cap (4 GiB) is larger than this disk: the disk fills first. It kept the .part (the
    # disk stayed full) and said "while writing (a file the writer did not name)".
    from irforge.cli.main import DISK_FULL_EXIT

    server, url = serve(endless)
    try:
        site = Site.__new__(Site)
        site.tmp_path, site.datasets = tmp_path, full_disk.root / "datasets"
        full_disk.free(256 << 10)   # room for the folders and a quarter MiB of the body
        catalog = tmp_path / "c.json"
        catalog.write_text(json.dumps([{"name": "team/endless", "url": f"{url}/endless.zip", "md5": "0" * 32}]))
        assert site.download("team/endless", catalog, "--retries", "0") == DISK_FULL_EXIT
        err = capsys.readouterr().err
        part = site.datasets / "team" / ".endless.zip.part"
        assert f"no space left on device while writing {part} (the partial download is removed)" in err, err
        assert "Traceback" not in err and site.leftovers() == ["team"]
    finally:
        stand_ins.stop(server)
