"""The archives and catalogues the download tests serve and name (shared by conftest and tests)."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

NAME = "team/scifact-mini"                 # the test catalogue's name for the SciFact slice
ARCHIVE_PATH = "/team/scifact-mini.zip"     # where the archive server serves it


def beir_zip(folder: Path, top: str) -> bytes:
    """`folder` zipped as BEIR ships its archives: every file below one top folder."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(f"{top}/", b"")
        for path in sorted(folder.rglob("*")):
            relative = path.relative_to(folder).as_posix()
            if path.is_dir():
                archive.writestr(f"{top}/{relative}/", b"")
            else:
                archive.write(path, f"{top}/{relative}")
    return buffer.getvalue()



def write_catalog(path: Path, entries: list[dict]) -> Path:
    path.write_text(json.dumps(entries) if path.suffix == ".json" else
                    "".join(f"- name: {e['name']}\n  url: {e['url']}\n  {'sha256' if 'sha256' in e else 'md5'}: "
                            f"{e.get('sha256') or e.get('md5')}\n" for e in entries))
    return path
