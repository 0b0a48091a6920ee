"""`irforge datasets download` against real HTTP servers on 127.0.0.1: the archive is verified
before it is unpacked, a refused or interrupted download never leaves a complete-looking copy,
and the copy it makes is what `irforge eval --dataset NAME` evaluates."""

from __future__ import annotations

import hashlib
import io
import json
import stat
import zipfile

import pytest

import irforge
from irforge.cli.main import main
from irforge.datasets import resolve_dataset
from irforge.datasets.catalog import BEIR_MD5, load_catalog
from irforge.datasets.store import MARKER

import sys

ARCHIVE_PATH, NAME = sys.modules["irforge_datasets_archives"].ARCHIVE_PATH, sys.modules["irforge_datasets_archives"].NAME
write_catalog = sys.modules["irforge_datasets_archives"].write_catalog
stand_ins = sys.modules["irforge_datasets_http_stand_ins"]   # both loaded by this folder's conftest

SCIFACT_PUBLISHED_MD5 = "5f7d1de60b170fc8027bb7898e2efca1"   # BEIR README's table, as the issue quotes it


def download(*argv: str) -> int:
    return main(["datasets", "download", *argv])


def leftovers(folder) -> list[str]:
    """Everything under the datasets folder but the lock file: what a refused download left."""
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if not p.name.endswith(".lock"))


def test_download_verifies_unpacks_marks_and_eval_runs_on_it(tmp_path, catalog, server, slice_zip, scifact_slice,
                                                             capsys, monkeypatch):
    datasets = tmp_path / "datasets"
    assert download(NAME, "--to", str(datasets), "--catalog", str(catalog)) == 0
    out = capsys.readouterr().out
    copy = datasets / "team" / "scifact-mini"
    assert f"{len(slice_zip)} bytes from {server.url}{ARCHIVE_PATH}, sha256 verified, 3 files in {copy}" in out
    for relative in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"):   # the archive's top folder dropped
        assert (copy / relative).read_bytes() == (scifact_slice / relative).read_bytes()
    marker = json.loads((copy / MARKER).read_text())
    assert marker["checksum"] == marker["sha256"] == hashlib.sha256(slice_zip).hexdigest()
    assert marker["md5"] == hashlib.md5(slice_zip).hexdigest() and marker["size"] == len(slice_zip)
    assert marker["url"] == server.url + ARCHIVE_PATH and marker["algorithm"] == "sha256"
    assert marker["catalog"] == str(catalog.resolve())
    assert leftovers(datasets) == ["team", "team/scifact-mini", *sorted(
        f"team/scifact-mini/{p}" for p in (MARKER, "corpus.jsonl", "queries.jsonl", "qrels", "qrels/test.tsv"))]

    # The name now evaluates exactly as the folder it names does.
    monkeypatch.setenv("IRFORGE_DATASETS_DIR", str(datasets))
    monkeypatch.setenv("IRFORGE_DATASETS_CATALOG", str(catalog))
    assert main(["eval", "--dataset", NAME, "--out", str(tmp_path / "by-name"), "--index-dir", str(tmp_path / "ix")]) == 0
    assert main(["eval", "--dataset", str(scifact_slice), "--out", str(tmp_path / "by-path"),
                 "--index-dir", str(tmp_path / "ix")]) == 0
    by_name, by_path = (json.loads((tmp_path / out / "results.json").read_text()) for out in ("by-name", "by-path"))
    assert by_name["data"]["path"] == str(copy.resolve()) and by_name["dataset"] == "scifact-mini"
    assert by_name["data"]["corpus_fingerprint_sha256"] == by_path["data"]["corpus_fingerprint_sha256"]
    assert by_name["metrics"] == by_path["metrics"] and by_name["metrics"]["nDCG@10"] > 0
    assert irforge.evaluate(NAME, out=tmp_path / "api", index_dir=str(tmp_path / "ix")).metrics == by_name["metrics"]

    monkeypatch.delenv("IRFORGE_DATASETS_CATALOG")     # the name is the catalogue's: without it, say which file
    with pytest.raises(ValueError, match=f"downloaded with the catalogue {catalog}: set IRFORGE_DATASETS_CATALOG={catalog}"):
        resolve_dataset(NAME)


def test_a_complete_copy_is_not_downloaded_again(tmp_path, catalog, server, capsys):
    datasets = str(tmp_path / "datasets")
    assert download(NAME, "--to", datasets, "--catalog", str(catalog)) == 0
    requests = len(server.requests)
    capsys.readouterr()
    assert download(NAME, "--to", datasets, "--catalog", str(catalog)) == 0
    out = capsys.readouterr().out
    assert f"already downloaded and complete at {tmp_path / 'datasets' / NAME}" in out and "nothing to do" in out
    assert len(server.requests) == requests == 1


def test_a_checksum_mismatch_is_refused_and_leaves_nothing_complete(tmp_path, catalog, server, slice_zip, capsys):
    wrong = slice_zip[:-1] + bytes([slice_zip[-1] ^ 1])       # one flipped bit in the zip's last byte
    server.replace[ARCHIVE_PATH] = wrong
    datasets = tmp_path / "datasets"
    assert download(NAME, "--to", str(datasets), "--catalog", str(catalog)) == 2
    err = capsys.readouterr().err
    assert f"sha256 {hashlib.sha256(wrong).hexdigest()}, expected {hashlib.sha256(slice_zip).hexdigest()}" in err
    assert "refused, nothing extracted" in err
    assert leftovers(datasets) == ["team"]                   # no folder, no .part, no staging folder
    with pytest.raises(ValueError, match=f"{NAME} is not downloaded"):
        resolve_dataset(NAME, datasets_dir=datasets, catalog=load_catalog(catalog))


def test_the_real_scifact_entry_refuses_a_mirror_serving_another_archive(tmp_path, slice_zip, capsys, monkeypatch):
    """--mirror moves where the bytes come from, never what they must be: the published md5 decides."""
    assert BEIR_MD5["scifact"] == SCIFACT_PUBLISHED_MD5
    mirror = stand_ins.ArchiveServer({"/beir-mirror/scifact.zip": slice_zip})
    try:
        datasets = tmp_path / "datasets"
        assert download("beir/scifact", "--to", str(datasets), "--mirror", mirror.url + "/beir-mirror/") == 2
        err = capsys.readouterr().err
        assert f"{mirror.url}/beir-mirror/scifact.zip has md5 {hashlib.md5(slice_zip).hexdigest()}, " \
               f"expected {SCIFACT_PUBLISHED_MD5}" in err
        monkeypatch.setenv("IRFORGE_DATASETS_MIRROR", mirror.url + "/beir-mirror")   # the variable does the same
        assert download("beir/scifact", "--to", str(datasets)) == 2
        assert f"expected {SCIFACT_PUBLISHED_MD5}" in capsys.readouterr().err
        assert [r.path for r in mirror.requests] == ["/beir-mirror/scifact.zip"] * 2
        assert leftovers(datasets) == ["beir"]
    finally:
        mirror.close()


def test_a_dropped_connection_never_looks_complete_and_the_next_try_resumes(tmp_path, catalog, server, slice_zip, capsys):
    server.drop[ARCHIVE_PATH] = 1
    datasets = tmp_path / "datasets"
    assert download(NAME, "--to", str(datasets), "--catalog", str(catalog), "--retries", "0") == 2
    err = capsys.readouterr().err
    assert "could not download" in err and "after 1 tries" in err and "RemoteProtocolError" in err
    part = datasets / "team" / ".scifact-mini.zip.part"
    assert 0 < part.stat().st_size < len(slice_zip)
    assert leftovers(datasets) == ["team", "team/.scifact-mini.zip.part"]    # a .part, never the folder
    assert main(["datasets", "list", "--dir", str(datasets), "--catalog", str(catalog), "--json"]) == 0
    listed = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert listed[NAME]["complete"] is False and listed[NAME]["copy"].startswith(f"partial ({part.stat().st_size} bytes")

    assert download(NAME, "--to", str(datasets), "--catalog", str(catalog)) == 0        # the second try
    assert [r.range for r in server.requests] == [None, f"bytes={len(slice_zip) // 2}-"]  # resumed, not restarted
    assert not part.exists() and (datasets / NAME / MARKER).is_file()


def test_a_drop_is_retried_within_one_download(tmp_path, catalog, server, capsys):
    server.drop[ARCHIVE_PATH] = 1
    assert download(NAME, "--to", str(tmp_path / "d"), "--catalog", str(catalog), "--retries", "1") == 0
    assert "retrying in 1s (try 2 of 2" in capsys.readouterr().err
    assert len(server.requests) == 2 and server.requests[1].range is not None


def test_connection_refused_is_a_clear_final_error(tmp_path, capsys):
    closed = stand_ins.ArchiveServer({})
    closed.close()                                         # nothing listens on its port any more
    catalog = write_catalog(tmp_path / "c.json", [{"name": "team/gone", "url": closed.url + "/gone.zip", "md5": "0" * 32}])
    assert download("team/gone", "--to", str(tmp_path / "d"), "--catalog", str(catalog), "--retries", "0",
                    "--timeout", "2") == 2
    err = capsys.readouterr().err
    assert "could not download" in err and "ConnectError" in err and "--mirror, --proxy or HTTPS_PROXY" in err


@pytest.mark.parametrize("how", ["flag", "environment"])
def test_the_download_goes_through_the_proxy(how, tmp_path, catalog, server, capsys, monkeypatch):
    proxy = stand_ins.ForwardProxy()
    try:
        extra = ["--proxy", proxy.url] if how == "flag" else []
        if how == "environment":
            monkeypatch.setenv("HTTP_PROXY", proxy.url)
        assert download(NAME, "--to", str(tmp_path / "d"), "--catalog", str(catalog), *extra) == 0
        assert proxy.requests == [server.url + ARCHIVE_PATH]
        assert [r.via_proxy for r in server.requests] == [True]
    finally:
        proxy.close()


def test_no_proxy_bypasses_the_environment_proxy(tmp_path, catalog, server, monkeypatch):
    proxy = stand_ins.ForwardProxy()
    try:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        assert download(NAME, "--to", str(tmp_path / "d"), "--catalog", str(catalog)) == 0
        assert proxy.requests == [] and [r.via_proxy for r in server.requests] == [False]
    finally:
        proxy.close()


def _zip(entries: list[tuple[zipfile.ZipInfo | str, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for info, data in entries:
            archive.writestr(info, data)
    return buffer.getvalue()


def _link(name: str, target: str) -> tuple[zipfile.ZipInfo, bytes]:
    info = zipfile.ZipInfo(name)
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    return info, target.encode()


@pytest.mark.parametrize("bad, said", [
    (("evil/../../escaped.txt", b"x"), "climbs out of the folder"),
    (("/tmp/absolute.txt", b"x"), "is an absolute path"),
    (_link("evil/corpus.jsonl", "/etc/passwd"), "is a symbolic link"),
])
def test_unsafe_archive_entries_refuse_the_whole_archive(bad, said, tmp_path, server, capsys):
    archive = _zip([("evil/queries.jsonl", b'{"_id": "1", "text": "q"}\n'), bad])
    server.files["/evil.zip"] = archive
    catalog = write_catalog(tmp_path / "c.yaml", [{"name": "team/evil", "url": server.url + "/evil.zip",
                                                   "sha256": hashlib.sha256(archive).hexdigest()}])
    datasets = tmp_path / "deep" / "datasets"
    assert download("team/evil", "--to", str(datasets), "--catalog", str(catalog)) == 2
    assert said in capsys.readouterr().err
    assert leftovers(datasets) == ["team"]                 # verified, then refused: no folder, no staging, no .part
    assert not (tmp_path / "escaped.txt").exists() and not (tmp_path / "deep" / "escaped.txt").exists()


def test_a_folder_that_is_not_a_download_is_replaced_only_with_force(tmp_path, catalog, server, capsys):
    datasets = tmp_path / "datasets"
    (datasets / NAME).mkdir(parents=True)
    (datasets / NAME / "notes.txt").write_text("mine")
    assert download(NAME, "--to", str(datasets), "--catalog", str(catalog)) == 2
    assert "exists and is not an irforge download; --force replaces it" in capsys.readouterr().err
    assert server.requests == []
    assert download(NAME, "--to", str(datasets), "--catalog", str(catalog), "--force") == 0
    assert not (datasets / NAME / "notes.txt").exists() and (datasets / NAME / MARKER).is_file()


def test_a_second_download_of_the_same_dataset_at_once_is_refused(tmp_path, catalog, server, capsys):
    from irforge.common.locks import ExclusiveLock

    datasets = tmp_path / "datasets"
    with ExclusiveLock(datasets / "team" / ".scifact-mini.lock"):      # what a running download holds
        assert download(NAME, "--to", str(datasets), "--catalog", str(catalog)) == 2
    assert "another irforge process (pid" in capsys.readouterr().err and server.requests == []
    assert download(NAME, "--to", str(datasets), "--catalog", str(catalog)) == 0
