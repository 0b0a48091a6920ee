"""The one results object: what `irforge eval` writes as results.json, as a dict (so it compares
equal to `json.load(open("results.json"))` and serialises unchanged), with a few conveniences
for notebooks. The CLI, `irforge.evaluate` and the orchestrator's jobs all produce it, and it
renders itself (`table()`, `markdown()`: irforge.results.render)."""

from __future__ import annotations

from pathlib import Path

from irforge.results.reading import ResultsFileError, read_results
from irforge.results.render import describe_retriever

__all__ = ["Results", "ResultsFileError", "describe_retriever"]


class Results(dict):
    """results.json as a dict, plus where it lives (`folder`, None for results not on disk)."""

    def __init__(self, record: dict, folder: Path | None = None):
        super().__init__(record)
        self.folder = Path(folder) if folder is not None else None

    @classmethod
    def load(cls, folder: str | Path) -> Results:
        """The results an earlier run wrote into `folder` (its results.json), checked
        (irforge.results.reading): ResultsFileError naming the file and field otherwise."""
        folder = Path(folder)
        return cls(read_results(folder / "results.json"), folder)

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
        """The table `irforge eval` (or `eval-instructions`) prints, with the holes summary when holes were filled."""
        from irforge.results.render import text

        return text(self)

    def markdown(self) -> str:
        """The metric table as Markdown."""
        from irforge.results.render import markdown

        return markdown(self)

    def __repr__(self) -> str:
        metrics = ", ".join(f"{name}={value:.4f}" for name, value in self.get("metrics", {}).items())
        return f"Results({self.get('dataset')!r}, {metrics})"

