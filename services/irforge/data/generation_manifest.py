"""Reading a generated collection's manifest (generation.json, written by `irforge generate`,
irforge.generation.output): the key facts `irforge eval` records in results.json data.generation.
A data concern, so that the eval job reads it without depending on the generation room."""

from __future__ import annotations

import json
from pathlib import Path

from irforge.common.files import file_sha256

MANIFEST_NAME = "generation.json"


def generation_facts(dataset_root: Path) -> dict | None:
    """The manifest's key facts for results.json (None when the folder was not generated, or its
    manifest is unreadable: a results file never fails for it)."""
    path = Path(dataset_root) / MANIFEST_NAME
    if not path.is_file():
        return None
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        return {"recipe": manifest["recipe"], "model": manifest["model"], "seed": manifest["seed"],
                "complete": manifest["complete"], "queries": manifest["output"]["queries"],
                "templates": {name: t["sha256"] for name, t in manifest["templates"].items()},
                "cost_usd": manifest["cost"]["cost_usd"], "qc": manifest["qc"]["ran"],
                "manifest_sha256": file_sha256(path)}
    except (ValueError, KeyError, TypeError):
        return {"error": f"{path} is not a readable generation manifest"}
