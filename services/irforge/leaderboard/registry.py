"""Registered datasets: an operator's BEIR folder copied into the state dir, where its qrels stay.

STATE_DIR/leaderboard/datasets/<name>/
    <name>/           corpus.jsonl, queries.jsonl, qrels/<split>.tsv: the copy every job reads
                      (only the registered split's qrels are copied; the source is never read again;
                      named after the dataset, as jobs and results.json name a dataset by its folder)
    candidates.trec   the fixed BM25 top 100 of every query of the split: the reranking
                      category's candidates, computed once at registration (no label in it)
A registration is staged beside the datasets and renamed into place only once it is whole, so a
failed one leaves nothing behind.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

from irforge.data import BeirDataset
from irforge.data.errors import DataFormatError
from irforge.leaderboard.board import CATEGORIES, BoardError, main_metric_for
from irforge.leaderboard.errors import DatasetExists, LeaderboardError
from irforge.leaderboard.store import DatasetRecord, LeaderboardStore

NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
POLICIES = ("withheld", "coarsened", "shown")
__all__ = ["CATEGORIES", "POLICIES", "Registry", "checked_main_metric", "checked_name", "per_query_policy"]
CANDIDATES_DEPTH = 100
CANDIDATES_FILE = "candidates.trec"


def checked_name(name: str, what: str = "dataset name") -> str:
    if not NAME.fullmatch(name or ""):
        raise LeaderboardError(f"{what} {name!r}: use 1 to 64 lower-case letters, digits, '.', '_' or '-', starting "
                               "with a letter or digit")
    return name


def checked_main_metric(task: str, main_metric: str | None) -> str:
    """The task's main metric (AIR-Bench's: nDCG@10 for qa, R@10 for long-doc), or the one named."""
    from irforge.evaluator.measures import MeasureError, parse_measures

    try:
        metric = main_metric_for(task, main_metric)
        parse_measures([metric])
    except (BoardError, MeasureError) as error:
        raise LeaderboardError(f"--task {task} --main-metric {main_metric or '(default)'}: {error}") from None
    return metric


def per_query_policy(closed: bool, policy: str | None) -> str:
    """Closed datasets withhold per-query values unless the operator chose otherwise; open ones show them."""
    if policy is None:
        return "withheld" if closed else "shown"
    if policy not in POLICIES:
        raise LeaderboardError(f"per-query policy {policy!r}: one of {', '.join(POLICIES)}")
    return policy


class Registry:
    def __init__(self, root: Path, store: LeaderboardStore):
        self.root = Path(root)            # STATE_DIR/leaderboard
        self.store = store

    def folder(self, name: str) -> Path:
        return self.root / "datasets" / name

    def data_dir(self, name: str) -> Path:
        """The registered BEIR folder every job of the dataset reads (on the server only)."""
        return self.folder(name) / name

    def candidates_path(self, name: str) -> Path:
        return self.folder(name) / CANDIDATES_FILE

    def stage(self, name: str, source: Path, split: str) -> tuple[Path, BeirDataset]:
        """A staged copy of `source`'s corpus, queries and the split's qrels, read back as a dataset
        (a bad file is refused here, naming it). The caller commits or discards the staging folder."""
        checked_name(name)
        if self.store.has_dataset(name) or self.folder(name).exists():
            raise DatasetExists(f"a dataset named {name!r} is registered already")
        try:
            original = BeirDataset.open(source)
            files = [original.corpus_path, original.queries_path, original.qrels_path(split)]
        except DataFormatError as error:
            raise LeaderboardError(f"--from {source}: {error}") from None
        (self.root / "datasets").mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".staging-{name}-", dir=self.root / "datasets"))
        try:
            data = staging / name
            (data / "qrels").mkdir(parents=True)
            for path in files:
                shutil.copyfile(path, data / path.relative_to(original.root))
            copy = BeirDataset.open(data)
            copy.qrels(split)   # parsed and checked against the queries now, not in a team's job
        except DataFormatError as error:
            shutil.rmtree(staging, ignore_errors=True)
            raise LeaderboardError(f"--from {source}: {error}".replace(str(staging / name), str(source))) from None
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        return staging, copy

    def commit(self, staging: Path, record: DatasetRecord) -> None:
        """Move the staged folder into place, then record the dataset (a failure undoes the move)."""
        final = self.folder(record.name)
        staging.rename(final)
        try:
            self.store.add_dataset(record)
        except BaseException:
            shutil.rmtree(final, ignore_errors=True)
            raise

    def closed_roots(self) -> list[Path]:
        """The folders of the closed datasets: no spec a team sends may name a path inside them."""
        return [self.data_dir(record.name) for record in self.store.datasets() if record.closed]
