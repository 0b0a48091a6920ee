"""Is system B better than A? `irforge compare INPUT...` and `irforge.compare_results`.

Inputs are results folders (or results.json files) of `irforge eval`, `irforge bench` folders
(suite.json), or TREC runs with `qrels`. The use case loads them, refuses incomparable ones
(naming the field, unless `allow_different` names it), runs the paired tests and, with `out`,
writes comparison.json/.md/.tex/.csv as one set. It returns comparison.json's content.
Errors are ComparisonError (a ValueError) naming the flag or input.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from irforge.app.metrics import listed, read_qrels
from irforge.common.files import write_json_atomic
from irforge.common.output_set import OutputSet, check_output_folder
from irforge.compare import stats
from irforge.compare.comparison import CompareSettings, compare_systems
from irforge.compare.render import render, render_suite
from irforge.bench.record import bench_folders
from irforge.compare.suites import compare_suites, is_suite
from irforge.compare.systems import IDENTITY, ComparisonError, System, check_comparable, load_results, load_run
from irforge.results.mteb import beside_published, beside_text, read_mteb_results

COMPARISON_SET = ("comparison.json", "comparison.md", "comparison.tex", "comparison.csv")


@dataclass(frozen=True)
class CompareOptions:
    """`irforge compare`'s flags, typed (--format only changes what the command prints)."""
    qrels: str | Path | None = None                 # --qrels: the inputs are TREC runs evaluated against it
    labels: tuple[str, ...] | None = None           # --label, one per input
    baseline: str | None = None                     # --baseline (None: every pair)
    measures: tuple[str, ...] | None = None         # -m/--measure (None: every measure all inputs have)
    tests: tuple[str, ...] | None = None            # --test (None: all four)
    significance_test: str = "t"                    # --significance-test
    correction: str = "holm"                        # --correction
    alpha: float = 0.05                             # --alpha
    permutations: int = stats.TestSettings.permutations
    bootstrap_samples: int = stats.TestSettings.bootstrap_samples
    confidence: float = stats.TestSettings.confidence
    seed: int = stats.TestSettings.seed
    allow_different: tuple[str, ...] = ()           # --allow-different FIELD...
    keep_identical_ids: bool = False                # --keep-identical-ids (TREC run inputs)
    out: str | Path | None = None                   # --out
    mteb: tuple[str | Path, ...] = ()               # --mteb: MTEB results files or folders to set beside (means only)

    def settings(self) -> CompareSettings:
        """The comparison's settings; ComparisonError naming what is wrong. A significance test
        not among `tests` falls back to the first test run."""
        tests = tuple(dict.fromkeys(self.tests)) if self.tests else stats.TESTS
        unknown = [field for field in self.allow_different if field not in IDENTITY]
        if unknown:
            raise ComparisonError(f"--allow-different {unknown[0]!r}: one of {', '.join(IDENTITY)}")
        try:
            return CompareSettings(
                tests=tests,
                significance_test=self.significance_test if not self.tests or self.significance_test in tests else tests[0],
                correction=self.correction, alpha=self.alpha, baseline=self.baseline, measures=self.measures,
                test_settings=stats.TestSettings(self.permutations, self.bootstrap_samples, self.confidence, self.seed),
            )
        except ValueError as error:
            raise ComparisonError(str(error)) from None


def compare(inputs: Iterable[str | Path], *, qrels: str | Path | None = None, labels: str | Iterable[str] | None = None,
            baseline: str | None = None, measures: str | Iterable[str] | None = None,
            tests: str | Iterable[str] | None = None, significance_test: str = "t", correction: str = "holm",
            alpha: float = 0.05, permutations: int = stats.TestSettings.permutations,
            bootstrap_samples: int = stats.TestSettings.bootstrap_samples,
            confidence: float = stats.TestSettings.confidence, seed: int = stats.TestSettings.seed,
            allow_different: str | Iterable[str] | None = None, keep_identical_ids: bool = False,
            out: str | Path | None = None, mteb: str | Path | Iterable[str | Path] | None = None) -> dict:
    """`irforge compare`: load the inputs, check they are comparable, run the tests, write `out`
    (comparison.json/.md/.tex/.csv) when given; with `mteb` (MTEB results files or folders), their
    published figures beside each system's (`published`); returns comparison.json's content."""
    options = CompareOptions(qrels=qrels, labels=listed(labels), baseline=baseline, measures=listed(measures),
                             tests=listed(tests), significance_test=significance_test, correction=correction,
                             alpha=alpha, permutations=permutations, bootstrap_samples=bootstrap_samples,
                             confidence=confidence, seed=seed, allow_different=listed(allow_different) or (),
                             keep_identical_ids=keep_identical_ids, out=out,
                             mteb=(mteb,) if isinstance(mteb, (str, Path)) else tuple(mteb or ()))
    return compare_with(list(inputs), options)


def compare_with(inputs: list[str | Path], options: CompareOptions) -> dict:
    """`compare` over a CompareOptions."""
    settings = options.settings()
    inputs = bench_folders(list(inputs))   # a several-systems bench's OUT: its systems' folders
    if options.labels and len(options.labels) != len(inputs):
        raise ComparisonError(f"--label given {len(options.labels)} times for {len(inputs)} inputs: one per input, in order")
    out = Path(options.out) if options.out is not None else None
    if out is not None:
        check_output_folder(out)
    allowed = set(options.allow_different)
    published = [result for path in options.mteb for result in read_mteb_results(path)]   # read before any work
    suites = [is_suite(path) for path in inputs]
    if any(suites) and options.qrels is None:
        if not all(suites):
            raise ComparisonError("give either irforge bench folders (suite.json) or results, not both")
        comparison = compare_suites(inputs, list(options.labels) if options.labels else None, settings, allowed)
    else:
        systems = load_systems(inputs, options)
        check_comparable(systems, allowed)
        comparison = compare_systems(systems, settings)
    if published:
        comparison["published"] = beside_published(figures_of(comparison), published)
    if out is not None:
        with OutputSet(out, replaces=COMPARISON_SET) as staging:
            write_json_atomic(staging / "comparison.json", comparison)
            for fmt, name in (("markdown", "comparison.md"), ("latex", "comparison.tex"), ("csv", "comparison.csv")):
                (staging / name).write_text(render_any(comparison, fmt), encoding="utf-8")
    return comparison


def render_any(comparison: dict, fmt: str) -> str:
    """A comparison (of results or of bench suites) in one of compare.render.FORMATS; with published
    MTEB figures (--mteb), their side-by-side table after it in text and Markdown (JSON holds it as
    `published`; CSV and LaTeX keep to the comparison)."""
    rendered = render_suite(comparison, fmt) if comparison["kind"] == "suite-comparison" else render(comparison, fmt)
    if comparison.get("published") and fmt in ("text", "markdown"):
        block = beside_text(comparison["published"])
        rendered += "\n" + (block if fmt == "text" else "```\n" + block + "```\n")
    return rendered


def figures_of(comparison: dict) -> list[dict]:
    """Each system's own means per dataset (as its results.json reports them, not over the compared
    queries only): what a published mean is set beside."""
    per_dataset = comparison["comparisons"].values() if comparison["kind"] == "suite-comparison" else [comparison]
    return [{"system": s["label"], "dataset": s.get("dataset"), "split": s.get("split"),
             "metrics": s.get("metrics_reported") or s["metrics"]} for c in per_dataset for s in c["systems"]]


def load_systems(inputs: list[str | Path], options: CompareOptions) -> list[System]:
    labels = options.labels or [None] * len(inputs)
    if options.qrels is None:
        return [load_results(path, label) for path, label in zip(inputs, labels)]
    qrels_path = Path(options.qrels)
    qrels = read_qrels(qrels_path, Path(inputs[0])).qrels
    measures = list(options.measures) if options.measures else None
    return [load_run(path, qrels, str(qrels_path), measures, options.keep_identical_ids, label)
            for path, label in zip(inputs, labels)]
