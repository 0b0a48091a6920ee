"""`irforge bench --airbench-submission DIR` on a split whose qrels AIR-Bench keeps private (its
test split: the leaderboard scores it): nothing can be evaluated, so each dataset's queries of the
split are searched by the system (eval's own pipeline, from the one builder), the run written to
OUT/<label>/run.trec and the submission (irforge.bench.airbench) from those runs."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

from irforge.app.bench import dataset_config
from irforge.app.evaluate import checked, open_pipeline
from irforge.bench.airbench import Submission, check_names, system_names, write_submission
from irforge.bench.suite import Suite, SuiteError
from irforge.common.output_set import OutputSet
from irforge.config import PipelineConfig
from irforge.data import BeirDataset, write_trec_run
from irforge.data.airbench import AIRBENCH, airbench_qrels_path, airbench_query_files, layout_of
from irforge.datasets import resolve_dataset
from irforge.pipeline.retrievers import CorpusTracker


def unjudged_split(suite: Suite) -> bool:
    """True when every dataset is in AIR-Bench's layout with the split's queries and no qrels for
    it; False when every dataset has its qrels; SuiteError when the suite mixes both."""
    private = []
    for entry in suite.entries:
        folder = resolve_dataset(entry.location)
        private.append(layout_of(folder) is AIRBENCH and airbench_qrels_path(folder, entry.split) is None
                       and entry.split in airbench_query_files(folder))
    if any(private) and not all(private):
        shown = ", ".join(e.label for e, p in zip(suite.entries, private) if p)
        raise SuiteError(f"datasets {shown} have no qrels for their split (AIR-Bench's private test) and the others do: "
                         "bench them apart (one bench searches only, the other evaluates)")
    return all(private)


def search_for_submission(config: PipelineConfig, suite: Suite, out: Path, folder: Path, model: str | None,
                          reranker: str | None, *, say: Callable[[str], None]) -> list[Path]:
    """Search every dataset's split queries and write the submission; the paths written."""
    datasets, description = [], {}
    for position, entry in enumerate(suite.entries, 1):
        one = checked(dataset_config(config, entry, ["nDCG@10"]), out / entry.label)
        with ExitStack() as stack:
            retriever, _, _ = open_pipeline(one, stack)
            dataset = BeirDataset.open(one.dataset)
            queries = list(dataset.split_queries(entry.split))
            say(f"[{position}/{len(suite.entries)}] {entry.label}: {len(queries)} {entry.split} queries, no qrels "
                "(AIR-Bench keeps them private): searching only")
            retriever.prepare(dataset, dataset.corpus_fingerprint(), CorpusTracker(judged=set()))
            run = retriever.retrieve(queries, one.top_k)
            description = retriever.describe()
            with OutputSet(out / entry.label) as staging:
                write_trec_run(staging / "run.trec", run, tag=f"irforge-{retriever.name}")
        datasets.append({"label": entry.label, "path": one.dataset, "split": entry.split})
    default_model, default_reranker = system_names(description)
    submission = Submission(folder, model or default_model, reranker or default_reranker)
    check_names(submission.model, submission.reranker)
    return write_submission(submission, out, datasets)
