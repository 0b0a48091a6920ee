"""The one results object: what `irforge eval` writes as results.json, as a dict (so it compares
equal to `json.load(open("results.json"))` and serialises unchanged), with a few conveniences
for notebooks. The CLI, `irforge.evaluate` and the orchestrator's jobs all produce it."""

from __future__ import annotations

import json
from pathlib import Path


class Results(dict):
    """results.json as a dict, plus where it lives (`folder`, None for results not on disk)."""

    def __init__(self, record: dict, folder: Path | None = None):
        super().__init__(record)
        self.folder = Path(folder) if folder is not None else None

    @classmethod
    def load(cls, folder: str | Path) -> Results:
        """The results an earlier run wrote into `folder` (its results.json)."""
        folder = Path(folder)
        return cls(json.loads((folder / "results.json").read_text(encoding="utf-8")), folder)

    @property
    def metrics(self) -> dict[str, float]:
        """Aggregate values, in the order the measures were asked for."""
        return self["metrics"]

    @property
    def per_query(self) -> dict[str, dict[str, float]]:
        return self["per_query"]

    @property
    def run_path(self) -> Path | None:
        """The TREC run file written beside results.json (None for instruction-following results,
        which have one per dimension and mode: see `run_paths`)."""
        name = self["files"].get("run")
        return self.folder / name if self.folder is not None and name else None

    @property
    def run_paths(self) -> dict[str, Path]:
        """Every run file beside results.json, by name (instruction-following results: one per dimension and mode)."""
        if self.folder is None:
            return {}
        files = self["files"]
        names = [files["run"]] if "run" in files else [n for runs in files.get("runs", {}).values() for n in runs.values()]
        return {name: self.folder / name for name in names}

    def table(self) -> str:
        """The table `irforge eval` prints."""
        import io

        text = io.StringIO()
        print_results_table(self, text)
        return text.getvalue()

    def __repr__(self) -> str:
        metrics = ", ".join(f"{name}={value:.4f}" for name, value in self.get("metrics", {}).items())
        return f"Results({self.get('dataset')!r}, {metrics})"


def describe_retriever(retriever: dict) -> str:
    """One line for results.json's `retriever` (eval's table, bench's suite.md, reports): what ran,
    with the settings that tell runs apart; a description it does not know falls back to its name."""
    if not retriever:
        return "(not recorded)"
    try:
        return _describe(retriever)
    except (KeyError, TypeError, AttributeError):
        return str(retriever.get("name") or retriever.get("kind") or "(unnamed)")


def _describe(retriever: dict) -> str:
    if "first_stage" in retriever:
        return f"{_describe(retriever['first_stage'])} reranked (depth {retriever['rerank_depth']})"
    if retriever["name"] == "bm25":
        return f"bm25 ({retriever['backend']}, k1={retriever.get('k1')}, b={retriever.get('b')})"
    if retriever["name"] == "dense":
        search = retriever["search"] if isinstance(retriever["search"], str) else "hnsw"
        return f"dense ({retriever['encoder']['model']}, {search}, {retriever['vector_backend']})"
    if retriever["name"] == "sparse":
        return f"sparse ({retriever['encoder']['model']}, exact dot, {retriever['vector_backend']})"
    if retriever["name"] == "hybrid":
        second = "dense" if "dense" in retriever else "sparse"
        model = retriever[second]["encoder"]["model"]
        return f"hybrid ({retriever['fusion']['method']} of bm25 + {model if second == 'dense' else 'sparse ' + model})"
    return retriever["name"]


def print_results_table(results: dict, out) -> None:
    """The table of `irforge eval` or of `irforge eval-instructions`, whichever made `results`."""
    if results.get("kind") == "instructions":
        from irforge.cli.instructions_cmd import print_table
    else:
        from irforge.cli.eval_cmd import print_table
    print_table(results, out)
