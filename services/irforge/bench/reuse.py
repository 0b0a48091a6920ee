"""Whether a dataset's earlier results still stand: OUT/<label>/results.json was made by the same
system (retriever description, top_k, measures, split, identical-ids option) on the same data
(the corpus and qrels fingerprints of the dataset as it is now). Then `irforge bench` reuses it
instead of evaluating again; otherwise it says which field differs and redoes the dataset.

The retriever's description is only complete once it has attached to its index (BM25 names its
index and settings, a dense retriever its encoder's identity, an endpoint the answer to its probe),
so the check opens eval's own pipeline and prepares it on the dataset: an index that exists is
found and reused, never rebuilt; nothing is retrieved or evaluated."""

from __future__ import annotations

import json
from contextlib import ExitStack
from pathlib import Path

from irforge.builder.pipeline import PipelineBuilder
from irforge.config import PipelineConfig
from irforge.data import BeirDataset
from irforge.data.qrels import qrels_fingerprint
from irforge.pipeline.eval_job import split_judgements
from irforge.pipeline.retrievers import CorpusTracker
from irforge.results.reading import read_results

# Keys of a retriever description that count what one run did (calls made to an endpoint), not
# what the system is: two runs of the same system differ there.
VOLATILE_KEYS = frozenset({"calls"})


def reuse_problem(config: PipelineConfig, folder: Path) -> str | None:
    """None when folder/results.json stands for evaluating `config` (checked: its dataset a
    folder) now; else why not, naming the
    field that differs ("" when there are no earlier results at all)."""
    path = folder / "results.json"
    if not path.exists():
        return ""
    try:
        previous = read_results(path)   # ResultsFileError is a ValueError: "cannot be read" below
        return _first_difference(config, folder, previous)
    except (ValueError, KeyError, TypeError) as error:   # unreadable, or not an `irforge eval` results.json
        return f"results.json cannot be read as eval results ({type(error).__name__}: {error})"


def _first_difference(config: PipelineConfig, folder: Path, previous: dict) -> str | None:
    run = previous["files"]["run"]
    if not (folder / run).is_file():
        return f"{run} is missing beside results.json"
    measures = list(config.evaluation.measures)
    identical_ids = "kept" if config.evaluation.keep_identical_ids else "dropped"
    for field, before, now in (("split", previous["split"], config.split),
                               ("top_k", previous["retriever"]["top_k"], config.top_k),
                               ("measures", previous["evaluation"]["measures"], measures),
                               ("identical ids", previous["evaluation"]["identical_ids"], identical_ids)):
        if before != now:
            return f"{field}: results.json has {before!r}, this run asks for {now!r}"
    dataset = BeirDataset.open(Path(config.dataset))
    if str(dataset.root.resolve()) != previous["data"]["path"]:
        return f"dataset path: results.json has {previous['data']['path']}, this run reads {dataset.root.resolve()}"
    fingerprint = dataset.corpus_fingerprint()
    if fingerprint != previous["data"]["corpus_fingerprint_sha256"]:
        return (f"corpus fingerprint: results.json has {previous['data']['corpus_fingerprint_sha256'][:12]}, "
                f"the corpus now {fingerprint[:12]} (corpus.jsonl changed)")
    qrels = qrels_fingerprint(split_judgements(dataset, config.split)[2])
    if qrels != previous["data"].get("qrels_sha256"):
        return f"qrels fingerprint: results.json has {str(previous['data'].get('qrels_sha256'))[:12]}, the qrels now {qrels[:12]}"
    now = stable(json.loads(json.dumps(current_description(config, dataset, fingerprint))))  # as written: lists, not tuples
    before = stable(previous["retriever"])
    if now != before:
        return f"retriever: {_describe_difference(before, now)}"
    return None


def current_description(config: PipelineConfig, dataset: BeirDataset, fingerprint: str) -> dict:
    """results.json's `retriever` as evaluating `config` now would record it: eval's pipeline from
    the one builder, prepared on the dataset (finding its index), nothing retrieved."""
    with ExitStack() as stack:
        retriever = PipelineBuilder(config, stack).retriever()
        retriever.prepare(dataset, fingerprint, CorpusTracker(judged=set()))
        return {**retriever.describe(), "top_k": config.top_k}


def stable(value):
    """The description without what counts a run's work (VOLATILE_KEYS), for comparison."""
    if isinstance(value, dict):
        return {key: stable(item) for key, item in value.items() if key not in VOLATILE_KEYS}
    if isinstance(value, list):
        return [stable(item) for item in value]
    return value


def _describe_difference(before, now) -> str:
    """Where two descriptions differ, with both values: the settings first, then the ids derived
    from them (a changed k1 also changes the index's corpus_id), at most three."""
    differences = sorted(_differences(before, now, ""), key=lambda item: item[0].rsplit(".", 1)[-1].endswith("_id"))
    shown = [f"{where or 'description'}: results.json has {old!r}, this run {new!r}" for where, old, new in differences[:3]]
    more = len(differences) - len(shown)
    return "; ".join(shown) + (f" (and {more} more)" if more > 0 else "")


def _differences(before, now, where: str):
    if isinstance(before, dict) and isinstance(now, dict):
        for key in [*before, *(k for k in now if k not in before)]:
            if before.get(key) != now.get(key):
                yield from _differences(before.get(key), now.get(key), f"{where}.{key}" if where else key)
    else:
        yield where, before, now
