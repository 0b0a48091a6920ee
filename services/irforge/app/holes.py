"""Judging holes: `irforge judge-holes` (a run file) and `irforge eval --fill-holes K` (the run
just written). The judge is chosen by a JudgeChoice (embedded or a spec file, its store,
thresholds and the relevance cut); the report is holes.json's content."""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from irforge.app.errors import UsageError
from irforge.common.output_set import OutputSet, check_output_folder, check_outside
from irforge.runs import read_run_file
from irforge.evaluator.measures import DEFAULT_MEASURES
from irforge.judge.base import DEFAULT_RELEVANT_FROM
from irforge.common.progress import tqdm_progress

EXIT_NOT_ALL_JUDGED = 1   # the report is written, but the judge failed on some pairs (re-run to retry them)


@dataclass(frozen=True)
class JudgeChoice:
    judge: str = "embedded"                 # 'embedded' or a judge spec YAML file
    store: str | None = None                # the judgement store (default: $IRFORGE_JUDGE_STORE or the user data dir)
    thresholds: str | None = None           # the embedded judge's thresholds file
    relevant_from: int = DEFAULT_RELEVANT_FROM
    flagged: str = "leave"                  # holes whose texts address the judge: leave, second-judge, label
    second_judge: str | None = None         # the judge spec for them under second-judge

    def check(self) -> None:
        """UsageError for a judge that is neither 'embedded' nor an existing file, or a flagged
        policy that cannot run (before any work)."""
        from irforge.config.rules import flagged_problem

        if self.judge != "embedded" and not Path(self.judge).exists():   # reading it says what else it is
            raise UsageError(f"--judge {self.judge}: neither 'embedded' nor an existing judge spec file")
        if problem := flagged_problem(self):
            raise UsageError(problem)
        if self.second_judge and self.second_judge != "embedded" and not Path(self.second_judge).exists():
            raise UsageError(f"--second-judge {self.second_judge}: neither 'embedded' nor an existing judge spec file")

    def open(self):
        from irforge.judge.factory import open_judge

        return open_judge(self.judge, Path(self.store) if self.store else None,
                          thresholds_path=Path(self.thresholds) if self.thresholds else None)

    def open_second(self):
        """The second judge (the same store), or None unless the policy is second-judge."""
        from irforge.judge.factory import open_judge

        if self.flagged != "second-judge":
            return None
        return open_judge(self.second_judge, Path(self.store) if self.store else None)


def fill_holes(choice: JudgeChoice, dataset: Path, run_path: Path, out: Path, depth: int, split: str, measures,
               drop_identical: bool, report_name: str | None, run_name: str | None = None) -> dict:
    """Read the run, judge its holes, write the layer (and the report unless report_name is None);
    the report names the run `run_name` (default: run_path)."""
    from irforge.judge.holes import HoleFiller, HoleSettings, write_outputs

    settings = HoleSettings(depth=depth, relevant_from=choice.relevant_from, drop_identical_ids=drop_identical,
                            measures=tuple(measures or DEFAULT_MEASURES), flagged=choice.flagged)
    run = read_run_file(run_path).run
    with choice.open() as core, ExitStack() as stack:
        second = choice.open_second()
        if second is not None:
            stack.enter_context(second)
        report, labelled, _ = HoleFiller(core, settings, tqdm_progress, second_judge=second).run(
            dataset, run, split, run_name=run_name or str(run_path))
        report["store"] = str(core.store.path) if core.store is not None else None
    write_outputs(out, report, labelled, report_name)
    return report


def judge_holes(dataset: str | Path, run: str | Path, *, depth: int, out: str | Path, split: str = "test",
                measures=None, keep_identical_ids: bool = False, choice: JudgeChoice = JudgeChoice()) -> dict:
    """`irforge judge-holes`: check the options (UsageError before any judging), judge the holes of
    the run's top `depth`, write holes.json and the judged layer into OUT as one set; returns the
    report (as in holes.json)."""
    from irforge.judge.flagged import FLAGGED_FILE
    from irforge.judge.holes import JUDGED_QRELS, PROVENANCE, REPORT

    out = Path(out)
    if depth < 1:
        raise UsageError(f"--depth must be at least 1, got {depth}")
    choice.check()
    check_output_folder(out)  # before judging, not when the paid-for labels cannot be written
    check_outside(out, {"--dataset": dataset, "--store": choice.store})
    # The report and the layer it describes change together (other files in OUT are kept).
    with OutputSet(out, replaces=(REPORT, JUDGED_QRELS, PROVENANCE, FLAGGED_FILE)) as staging:
        return fill_holes(choice, Path(dataset), Path(run), staging, depth, split, measures, not keep_identical_ids, REPORT)


def fill_holes_after_eval(choice: JudgeChoice, depth: int, spec, results: dict, run_name: str | None = None) -> dict:
    """`irforge eval --fill-holes K`: the same hole filling on the run just written; the report
    goes into results (and results.json) as `holes`, the layer beside run.trec. `run_name`: where
    the run will be once spec.out_dir, a staging folder, becomes OUT."""
    from irforge.judge.holes import join_results

    folder = Path(spec.out_dir)
    report = fill_holes(choice, spec.dataset, folder / results["files"]["run"], folder, depth, spec.split,
                        spec.measures, spec.drop_identical_ids, report_name=None, run_name=run_name)
    join_results(folder, report, results)
    return report
