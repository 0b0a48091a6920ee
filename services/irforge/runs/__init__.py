"""Runs that come from outside irforge: one reader of the field's run files (TREC, JSON, TSV),
and what turns such a file into a system irforge evaluates like its own retrievers; FollowIR's
and MTEB's candidate lists (top_ranked)."""

from irforge.runs.reading import RUN_FORMATS, GivenRun, read_run_file, run_labels

__all__ = ["RUN_FORMATS", "GivenRun", "read_run_file", "run_labels"]
