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
"""

from __future__ import annotations

import argparse
import contextlib
import io
import tempfile
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


def metrics(qrels: str | Path, run: str | Path, *, measures: list[str] | None = None, complete: bool = False,
            **options) -> Results:
    """trec_eval's numbers for a run, as `irforge metrics QRELS RUN` computes them (TREC or BEIR
    qrels; `complete=True` is `-c`: qrels queries the run misses count as 0, as `evaluate` does).
    Returns `metrics` (aggregate) and `per_query`, keyed by the measures' trec_eval names."""
    from irforge.cli import metrics_cmd

    names = {"max_docs": "M", "relevance_level": "l"}
    flags = {names.get(key, key): value for key, value in options.items()}
    args = _arguments("metrics", {"qrels": qrels, "run": run, "m": measures, "c": complete, **flags})
    measured = metrics_cmd.measure(args, io.StringIO())
    result = measured["result"]
    return Results({"metrics": dict(result.aggregate), "per_query": {q: dict(v) for q, v in result.per_query.items()},
                    "measures": list(result.measure_names), "run_tag": measured["run"].tag,
                    "qrels_layout": measured["qrels_layout"], "options": measured["options"].as_dict()})


def judge_holes(dataset: str | Path, run: str | Path, *, depth: int, out: str | Path, split: str = "test",
                measures=None, keep_identical_ids: bool = False, judge: str = "embedded", store=None, thresholds=None,
                relevant_from: int = 2) -> dict:
    """Judge the unlabelled documents of each query's top `depth` as `irforge judge-holes` does
    (embedded judge unless `judge=` names a spec file), write holes.json and the judged layer into
    `out`, and return the report (holes.json's content: counts, labels, metrics before/after)."""
    from irforge.app.holes import JudgeChoice, judge_holes as run_judge

    choice = JudgeChoice(judge=str(judge), store=str(store) if store else None,
                         thresholds=str(thresholds) if thresholds else None, relevant_from=relevant_from)
    return run_judge(dataset, run, depth=depth, out=out, split=split, measures=measures,
                     keep_identical_ids=keep_identical_ids, choice=choice)


def compare_results(*inputs: str | Path, **options) -> dict:
    """Paired significance tests between systems, as `irforge compare INPUT... ` (results folders,
    bench folders, or TREC runs with `qrels=`): returns comparison.json's content (`table`,
    `comparisons` with every p-value, `per_query`). E.g. `irforge.compare_results("runs/a", "runs/b",
    baseline="a", correction="bh", tests=["t", "randomization"], out="runs/a-vs-b")`."""
    from irforge.cli import compare_cmd

    args = _arguments("compare", {"inputs": list(inputs), "test": options.pop("tests", None), **options})
    try:
        return compare_cmd.compare_from_args(args)
    except compare_cmd.ComparisonError as error:
        raise ValueError(str(error)) from None


def agreement(*runs: str | Path, **options) -> dict:
    """Kendall's tau, tau_AP and Spearman's rho between system rankings under two label sets, as
    `irforge agreement` (runs with `qrels_a=[...]`, `qrels_b=[...]`; or `a=[...]`, `b=[...]`
    results; or `table=`)."""
    from irforge.cli import agreement_cmd
    from irforge.compare.agreement import AgreementError

    args = _arguments("agreement", {"runs": list(runs), **options})
    try:
        return agreement_cmd.agreement_from_args(args)
    except (AgreementError, ValueError) as error:
        raise ValueError(str(error)) from None


def _arguments(command: str, options: dict) -> argparse.Namespace:
    """The Namespace `irforge COMMAND` would get for these options, via the command's own parser."""
    from irforge.cli.main import build_parser
    from irforge.cli.parser import nearest

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
    by_name = {}
    for action in sub._actions:
        for option in action.option_strings:
            by_name[option.lstrip("-").replace("-", "_")] = action
        if not action.option_strings:
            by_name[action.dest] = action
    by_name.setdefault("measures", by_name.get("m"))    # eval's -m is dest `measures`
    positionals, argv = [], [command]
    for key, value in options.items():
        action = by_name.get(key)
        if action is None:
            raise TypeError(f"irforge {command} has no option {key!r}{nearest(key, sorted(by_name))}")
        if value is None or value is False:
            continue
        if not action.option_strings:
            positionals.extend(map(str, value) if isinstance(value, (list, tuple)) else [str(value)])
        elif isinstance(action, (argparse._StoreTrueAction, argparse._StoreConstAction)):
            argv.append(action.option_strings[-1])
        elif action.nargs == "+" and isinstance(value, (list, tuple)):
            argv.append(action.option_strings[-1])
            argv.extend(map(str, value))
        elif isinstance(action, argparse._AppendAction):
            for item in [value] if isinstance(value, (str, Path)) else value:
                argv.append(f"{action.option_strings[-1]}={item}")
        else:
            argv.append(f"{action.option_strings[-1]}={value}")
    errors = io.StringIO()
    try:
        with contextlib.redirect_stderr(errors):
            return parser.parse_args([*argv, "--", *positionals] if positionals else argv)
    except SystemExit:
        raise ValueError(errors.getvalue().strip().splitlines()[-1]) from None
