"""Runs between orchestrator steps: stored as columns, read back as the same Rankings; old files still read."""

import json

from irforge.orchestrator.steps import read_run, write_run
from irforge.ranking import Ranking


def test_a_run_round_trips_exactly_as_rankings(tmp_path):
    run = {"q1": Ranking(["b", "a", "c"], [0.1 + 0.2, 0.1 + 0.2, 1 / 3]), "q2": {"x": 1.5, "y": 2.5}, "q3": {}}
    write_run(tmp_path / "run.json", run)
    back = read_run(tmp_path / "run.json")
    assert all(isinstance(ranking, Ranking) for ranking in back.values())
    assert {q: r.pairs() for q, r in back.items()} == {
        "q1": [("b", 0.30000000000000004), ("a", 0.30000000000000004), ("c", 1 / 3)],
        "q2": [("y", 2.5), ("x", 1.5)],  # a dict value is ordered by the tie rule on the way in
        "q3": []}


def test_a_run_file_from_before_the_columns_still_reads(tmp_path):
    (tmp_path / "old.json").write_text(json.dumps({"q1": {"a": 1.0, "b": 2.0}}))
    assert read_run(tmp_path / "old.json") == {"q1": {"a": 1.0, "b": 2.0}}
