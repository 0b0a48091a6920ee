"""Writing the corrected dataset: a complete BEIR folder, all or nothing.

Everything goes to a staging folder beside OUTDIR, swapped into place at the end: a failure or a kill
half way leaves no half-written OUTDIR (and an earlier OUTDIR untouched). Files are streamed line by line
and lines that QC does not change are copied byte for byte, so a run that changed nothing writes
exactly the input (gzip inputs come out decompressed).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Iterator
from pathlib import Path

from irforge.common.output_set import OutputSet
from irforge.data.errors import DataFormatError

SUMMARY_NAME = "qc_summary.json"
AUDIT_NAME = "qc_audit.jsonl"


def check_out_dir(dataset_root: Path, out_dir: Path) -> None:
    """Refuse an OUTDIR that is the dataset, inside it or around it (replacing it would destroy the
    input), or an existing folder that is not an earlier QC output. Raises ValueError."""
    source, target = dataset_root.resolve(), out_dir.resolve()
    if target == source or source in target.parents:
        raise ValueError(f"--out {out_dir} is inside the input dataset {dataset_root}: write the corrected copy elsewhere")
    if target in source.parents:
        raise ValueError(f"--out {out_dir} contains the input dataset {dataset_root}: it would be replaced")
    if target.exists():
        if not target.is_dir():
            raise ValueError(f"--out {out_dir} exists and is not a folder")
        if any(target.iterdir()) and not (target / SUMMARY_NAME).is_file():
            raise ValueError(f"--out {out_dir} exists, is not empty and is not an earlier `irforge qc` output: refusing to replace it")


def staged_folder(target: Path) -> OutputSet:
    """Context manager: a staging folder beside `target` that replaces it whole on success, in one
    atomic swap, with the same leftover cleaning as every irforge output folder (common/output_set)."""
    return OutputSet(target, replaces=None)


def _raw_lines(path: Path) -> Iterator[bytes]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as handle:
        yield from handle


def _json_id(path: Path, line: bytes, line_number: int) -> str:
    try:
        return str(json.loads(line)["_id"])
    except (ValueError, KeyError, TypeError):
        raise DataFormatError(path, "expected a JSON object with an `_id`", line_number) from None


def filter_jsonl(source: Path, target: Path, drop: Callable[[str], bool]) -> tuple[int, int]:
    """Copy `source` to `target` without the objects whose `_id` `drop` accepts: (kept, dropped)."""
    kept = dropped = 0
    with open(target, "wb") as out:
        for line_number, line in enumerate(_raw_lines(source), start=1):
            if line.strip() and drop(_json_id(source, line, line_number)):
                dropped += 1
                continue
            kept += bool(line.strip())
            out.write(line)
    return kept, dropped


def rewrite_qrels(source: Path, target: Path, drop: Callable[[str, str], bool],
                  added: list[tuple[str, str, int]]) -> tuple[int, int]:
    """Copy a qrels file without the (query, doc) lines `drop` accepts, then append `added`:
    (lines removed, lines added). The header and every other line are copied as they are."""
    removed = 0
    ends_with_newline = True
    with open(target, "wb") as out:
        for line in _raw_lines(source):
            fields = line.decode("utf-8").split("\t") if b"\t" in line else line.decode("utf-8").split()
            if len(fields) == 3 and drop(fields[0].strip(), fields[1].strip()):
                removed += 1
                continue
            out.write(line)
            ends_with_newline = line.endswith(b"\n")
        if added and not ends_with_newline:
            out.write(b"\n")
        out.writelines(f"{query_id}\t{doc_id}\t{label}\n".encode() for query_id, doc_id, label in added)
    return removed, len(added)


def write_json(path: Path, value) -> None:
    with open(path, "w", encoding="utf-8") as out:
        json.dump(value, out, indent=2, ensure_ascii=False)
        out.write("\n")


def write_jsonl(path: Path, records) -> int:
    count = 0
    with open(path, "w", encoding="utf-8") as out:
        for record in records:
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
            count += 1
    return count
