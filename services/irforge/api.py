"""irforge from Python: what `irforge eval`, `metrics` and `judge-holes` do, in a notebook.

    import irforge

    results = irforge.evaluate("../shared/data/beir/scifact", retriever="bm25", k1=1.2, b=0.75)
    results = irforge.evaluate("beir/scifact")   # a downloaded dataset by name (docs/datasets.md)
    results.metrics["nDCG@10"]            # 0.6791; results is results.json as a dict
    print(results.table())                # the table `irforge eval` prints

    scores = irforge.metrics("qrels/test.tsv", "runs/x/run.trec", measures=["nDCG@10", "P@10"], complete=True)
    report = irforge.judge_holes("../shared/data/beir/scifact", "runs/x/run.trec", depth=10, out="runs/x-judged")
    following = irforge.evaluate_instructions("data/scifact-instructions", retriever="bm25")   # docs/instructions.md

`evaluate` and `evaluate_instructions` take a pipeline configuration (irforge.config.PipelineConfig,
its mapping, or a YAML/JSON file: `config=`) and/or its options as keywords, by their flags' long
names with `_` for `-` (`top_k=100`, `k1=1.2`, `fill_holes=10`, `keep_identical_ids=True`,
`measures=[...]` for `-m`): the same typed fields the command line is derived from, checked by the
same rules, run by the same use case (irforge.app). An unknown or bad option raises ValueError naming it.

`metrics`, `compare_results` and `agreement` take their commands' options as typed keywords
(`measures`, `complete`, `max_docs`, `relevance_level`; `baseline`, `tests`, `correction`, `out`;
`qrels_a`, `qrels_b`, `a`, `b`, `table`) and call the same use cases the commands call
(irforge.app.metrics, .compare, .agreement); an unknown keyword raises TypeError naming it.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

from irforge.results import Results

__all__ = ["Results", "agreement", "compare_results", "evaluate", "evaluate_instructions", "judge_holes", "metrics"]


def _config(dataset, config, options: dict, use: str):
    """The PipelineConfig for a call: `config` (a PipelineConfig, a mapping as in results.json's
    `config`, or a YAML/JSON file) or the defaults, then `dataset` and the keyword options."""
    from irforge.config import PipelineConfig, from_mapping, load, with_options

    if config is None:
        base = PipelineConfig()
    elif isinstance(config, PipelineConfig):
        base = config
    elif isinstance(config, dict):
        base = from_mapping(PipelineConfig, config)
    else:
        base = load(PipelineConfig, config)
    if dataset is not None:
        options = {"dataset": str(dataset), **options}
    return with_options(base, options, source=f"irforge.{use}")


def evaluate(dataset: str | Path | None = None, *, out: str | Path | None = None, config=None, **options) -> Results:
    """Index, retrieve and evaluate as `irforge eval` does, and return what it writes to
    OUT/results.json. DATASET is a folder or a downloaded dataset's name (`beir/scifact`); `config`
    a PipelineConfig, its mapping or a YAML/JSON file (keyword options override it). Without
    `out`, a new temporary folder holds run.trec and results.json (`results.folder`)."""
    from irforge.app.evaluate import evaluate as run

    out = Path(out) if out is not None else Path(tempfile.mkdtemp(prefix="irforge-eval-"))
    return run(_config(dataset, config, options, "evaluate"), out)


def evaluate_instructions(dataset: str | Path | None = None, *, out: str | Path | None = None, config=None,
                          **options) -> Results:
    """Instruction-following evaluation as `irforge eval-instructions` (e.g. `instruction_template=
    "Instruct: {instruction}\\nQuery: {query}"`, `retriever="dense"`); returns OUT/results.json.
    Without `out`, a new temporary folder holds it and the run files."""
    from irforge.app.evaluate import evaluate_instructions as run

    out = Path(out) if out is not None else Path(tempfile.mkdtemp(prefix="irforge-instructions-"))
    return run(_config(dataset, config, options, "evaluate_instructions"), out)


def metrics(qrels: str | Path, run: str | Path, *, measures: str | Sequence[str] | None = None, complete: bool = False,
            max_docs: int | None = None, relevance_level: int | None = None, keep_identical_ids: bool = False) -> Results:
    """trec_eval's numbers for a run, as `irforge metrics QRELS RUN` computes them (TREC or BEIR
    qrels; `measures` is -m, `complete=True` is -c: qrels queries the run misses count as 0, as
    `evaluate` does; `max_docs` is -M (default: every document), `relevance_level` -l (default 1),
    `keep_identical_ids` --keep-identical-ids). Returns `metrics` (aggregate) and `per_query`,
    keyed by the measures' trec_eval names. A bad value raises ValueError naming the flag."""
    from irforge.app.metrics import measure

    defaulted = _given(max_docs=max_docs, relevance_level=relevance_level)
    return measure(qrels, run, measures=measures, complete=complete, keep_identical_ids=keep_identical_ids, **defaulted)


def judge_holes(dataset: str | Path, run: str | Path, *, depth: int, out: str | Path, split: str = "test",
                measures=None, keep_identical_ids: bool = False, judge: str = "embedded", store=None, thresholds=None,
                relevant_from: int = 2, flagged: str = "leave", second_judge=None) -> dict:
    """Judge the unlabelled documents of each query's top `depth` as `irforge judge-holes` does
    (embedded judge unless `judge=` names a spec file), write holes.json and the judged layer into
    `out`, and return the report (holes.json's content: counts, labels, metrics before/after).
    `flagged`: what happens to holes whose texts address the judge (leave, second-judge with
    `second_judge=` a spec file, label); see irforge.judge.flagged."""
    from irforge.app.holes import JudgeChoice, judge_holes as run_judge

    choice = JudgeChoice(judge=str(judge), store=str(store) if store else None,
                         thresholds=str(thresholds) if thresholds else None, relevant_from=relevant_from,
                         flagged=flagged, second_judge=str(second_judge) if second_judge else None)
    return run_judge(dataset, run, depth=depth, out=out, split=split, measures=measures,
                     keep_identical_ids=keep_identical_ids, choice=choice)


def compare_results(*inputs: str | Path, qrels: str | Path | None = None, labels: str | Sequence[str] | None = None,
                    baseline: str | None = None, measures: str | Sequence[str] | None = None,
                    tests: str | Sequence[str] | None = None, significance_test: str | None = None,
                    correction: str | None = None, alpha: float | None = None, permutations: int | None = None,
                    bootstrap_samples: int | None = None, confidence: float | None = None, seed: int | None = None,
                    allow_different: str | Sequence[str] | None = None, keep_identical_ids: bool = False,
                    out: str | Path | None = None) -> dict:
    """Paired significance tests between systems, as `irforge compare INPUT... ` (results folders,
    bench folders, or TREC runs with `qrels=`): returns comparison.json's content (`table`,
    `comparisons` with every p-value, `per_query`), and writes it (and .md/.tex/.csv) into `out`
    when given. E.g. `irforge.compare_results("runs/a", "runs/b", baseline="a", correction="bh",
    tests=["t", "randomization"], out="runs/a-vs-b")`. Keywords are the command's flags (`labels`
    is --label, `measures` -m, `tests` --test); None is the command's default. A bad value raises
    ValueError naming the flag."""
    from irforge.app.compare import compare

    defaulted = _given(significance_test=significance_test, correction=correction, alpha=alpha,
                       permutations=permutations, bootstrap_samples=bootstrap_samples, confidence=confidence, seed=seed)
    return compare(inputs, qrels=qrels, labels=labels, baseline=baseline, measures=measures, tests=tests,
                   allow_different=allow_different, keep_identical_ids=keep_identical_ids, out=out, **defaulted)


def agreement(*runs: str | Path, qrels_a: str | Path | Sequence[str | Path] | None = None,
              qrels_b: str | Path | Sequence[str | Path] | None = None, a: Sequence[str | Path] | None = None,
              b: Sequence[str | Path] | None = None, table: str | Path | None = None, lower_is_better: bool = False,
              measure: str | None = None, keep_identical_ids: bool = False, permutations: int | None = None,
              seed: int | None = None) -> dict:
    """Kendall's tau, tau_AP and Spearman's rho between system rankings under two label sets, as
    `irforge agreement` (runs with `qrels_a=[...]`, `qrels_b=[...]`; or `a=[...]`, `b=[...]`
    results; or `table=`); returns `irforge agreement --format json`'s content. None is the
    command's default (`measure` nDCG@10). A bad value raises ValueError naming the flag."""
    from irforge.app.agreement import agreement as run_agreement

    defaulted = _given(measure=measure, permutations=permutations, seed=seed)
    return run_agreement(runs, qrels_a=qrels_a, qrels_b=qrels_b, a=a, b=b, table=table, lower_is_better=lower_is_better,
                         keep_identical_ids=keep_identical_ids, **defaulted)


def _given(**options) -> dict:
    """The options given (not None): the others keep the use case's own defaults."""
    return {name: value for name, value in options.items() if value is not None}
