"""`irforge datasets list | download`: the BEIR collections (and a team's catalogue) by name,
downloaded once, verified against their published checksums (docs/datasets.md)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from irforge.datasets.catalog import BEIR_UNPUBLISHED, CATALOG_VARIABLE, load_catalog
from irforge.datasets.download import MIRROR_VARIABLE, DownloadOptions, download_dataset
from irforge.datasets.errors import DatasetError
from irforge.datasets.limits import DEFAULT_DOWNLOAD, DEFAULT_FILES, DEFAULT_RATIO, DEFAULT_UNPACKED, Limits, VARIABLES, \
    human, parse_positive, parse_size
from irforge.datasets.store import DIR_VARIABLE, copy_state, default_datasets_dir


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "datasets", help="list and download BEIR collections (and your catalogue's) by name, e.g. beir/scifact",
        description="Datasets by name: `irforge datasets download beir/scifact` fetches BEIR's archive, checks its "
        "published md5 before unpacking it, and `irforge eval --dataset beir/scifact` then finds the copy.")
    commands = parser.add_subparsers(dest="datasets_command", required=True, metavar="ACTION")

    listing = commands.add_parser("list", help="the datasets irforge can download, and where each copy is",
                                  description="Every dataset name with its archive URL, published checksum and "
                                  "downloaded copy (a path when complete, '-' when absent).")
    listing.add_argument("--dir", type=Path, metavar="DIR",
                         help=f"the datasets folder to look in (default ${DIR_VARIABLE} or the user data dir + /datasets)")
    _add_catalog(listing)
    listing.add_argument("--json", action="store_true", help="print a JSON list instead of the table")
    listing.set_defaults(handler=run_list)

    download = commands.add_parser(
        "download", help="download, verify and unpack a dataset (a no-op when a complete copy is there)",
        description="Stream the archive to DIR/SOURCE/.NAME.zip.part (resumed after a dropped connection), verify its "
        "published checksum, unpack it beside the target and rename it into place as DIR/SOURCE/NAME with its "
        "marker: an interrupted or refused download never looks complete. The caps (--max-*) refuse a server or "
        "archive that would fill the disk; a catalogue entry may declare archive_size and unpacked_size instead.")
    download.add_argument("name", metavar="NAME", help="the dataset's name, e.g. beir/scifact (irforge datasets list)")
    download.add_argument("--to", type=Path, metavar="DIR",
                          help=f"the datasets folder (default ${DIR_VARIABLE} or the user data dir + /datasets); "
                               "the copy goes to DIR/NAME")
    _add_catalog(download)
    download.add_argument("--mirror", metavar="BASE_URL",
                          help=f"fetch BEIR archives from BASE_URL/<name>.zip instead of BEIR's server (default "
                               f"${MIRROR_VARIABLE}); the published checksum still decides")
    download.add_argument("--proxy", metavar="URL",
                          help="HTTP(S) proxy for the download (default: HTTPS_PROXY / HTTP_PROXY / ALL_PROXY, NO_PROXY)")
    download.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS",
                          help="give up on a connection, or a body that stalls, after this long (default 30)")
    download.add_argument("--retries", type=int, default=3, metavar="N",
                          help="further tries after a connection failure or a 5xx, each resuming the bytes received "
                               "(default 3)")
    download.add_argument("--force", action="store_true",
                          help="replace what DIR/NAME holds when it is not a complete copy of this archive, or download "
                               "a complete one again")
    caps = download.add_argument_group("caps (each: the flag, else its variable, else the catalogue's declared size, "
                                       "else the default)")
    caps.add_argument("--max-download", metavar="SIZE",
                      help=f"refuse an archive larger than SIZE (bytes, or 500M, 4G; default {human(DEFAULT_DOWNLOAD)}, "
                           f"${VARIABLES['download']}, or the catalogue's archive_size)")
    caps.add_argument("--max-unpacked", metavar="SIZE",
                      help=f"refuse an archive that unpacks to more than SIZE in all (default {human(DEFAULT_UNPACKED)}, "
                           f"${VARIABLES['unpacked']}, or the catalogue's unpacked_size)")
    caps.add_argument("--max-ratio", metavar="N",
                      help=f"refuse an archive that unpacks to more than N times its size (default {DEFAULT_RATIO:g}, "
                           f"${VARIABLES['ratio']}; not checked below 10 MiB unpacked, nor when the catalogue declares "
                           "unpacked_size)")
    caps.add_argument("--max-files", metavar="N",
                      help=f"refuse an archive of more than N entries (default {DEFAULT_FILES:,}, ${VARIABLES['files']})")
    download.set_defaults(handler=run_download)


def _add_catalog(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--catalog", type=Path, metavar="FILE",
                        help=f"also name the datasets of this YAML/JSON list of {{name, url, md5 or sha256}} "
                             f"(default ${CATALOG_VARIABLE})")


def run_list(args: argparse.Namespace) -> int:
    catalog = load_catalog(args.catalog)
    folder = args.dir or default_datasets_dir()
    rows = []
    for entry in catalog:
        state = copy_state(entry, folder)
        rows.append({"name": entry.name, "url": entry.url, "algorithm": entry.algorithm, "checksum": entry.checksum,
                     "source": entry.source, "complete": state.complete, "path": str(state.path) if state.complete else None,
                     "copy": state.describe})
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"datasets folder: {folder}")
    table = [("NAME", "CHECKSUM", "COPY", "URL")] + [
        (row["name"], f"{row['algorithm']}:{row['checksum']}", row["copy"], row["url"]) for row in rows]
    widths = [max(len(line[column]) for line in table) for column in range(3)]
    for line in table:
        print("  ".join(cell.ljust(width) for cell, width in zip(line, widths)) + "  " + line[3])
    print(f"not listed: {', '.join('beir/' + name for name in BEIR_UNPUBLISHED)} (BEIR publishes no archive or checksum "
          "for them)")
    return 0


def run_download(args: argparse.Namespace) -> int:
    if args.retries < 0 or not args.timeout > 0:
        raise DatasetError("--retries must be 0 or more and --timeout positive")
    catalog = load_catalog(args.catalog)
    entry = catalog.get(args.name.strip().strip("/"))
    limits = Limits(
        download=None if args.max_download is None else parse_size(args.max_download, "--max-download"),
        unpacked=None if args.max_unpacked is None else parse_size(args.max_unpacked, "--max-unpacked"),
        ratio=None if args.max_ratio is None else parse_positive(args.max_ratio, "--max-ratio"),
        files=None if args.max_files is None else parse_positive(args.max_files, "--max-files", int))
    options = DownloadOptions(datasets_dir=args.to, mirror=args.mirror or os.environ.get(MIRROR_VARIABLE) or None,
                              proxy=args.proxy, timeout_s=args.timeout, retries=args.retries, force=args.force,
                              limits=limits)
    outcome = download_dataset(entry, options)
    if not outcome.downloaded:
        print(f"{entry.name}: already downloaded and complete at {outcome.path} ({entry.algorithm} {entry.checksum}); "
              "nothing to do")
    else:
        print(f"{entry.name}: {outcome.size} bytes from {outcome.url}, {entry.algorithm} verified, "
              f"{outcome.files} files in {outcome.path}")
    default = args.to is None or Path(args.to).resolve() == default_datasets_dir().resolve()
    prefix = "" if default else f"{DIR_VARIABLE}={args.to} "
    catalog_var = f"{CATALOG_VARIABLE}={args.catalog} " if args.catalog and entry.source != "BEIR" else ""
    print(f"use it: {prefix}{catalog_var}irforge eval --dataset {entry.name} --out runs/{entry.name.rsplit('/', 1)[-1]}",
          file=sys.stdout)
    return 0
