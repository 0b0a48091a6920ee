"""Rank agreement: AIR-Bench's published consistency figure reproduced from the rank lists in
its documentation, tau_AP by hand, and label sets given as qrels plus a judged layer."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as scipy_stats

from irforge.cli.main import main
from irforge.compare.agreement import agreement, tau_ap_score

# AIR-Bench docs/data_generation.md ("Quality Verification"), AIR-Bench/AIR-Bench@1742e273: the
# 18 models' ranks on MS MARCO dev (human labels) and on the generated MS MARCO.
AIRBENCH_RANKS = Path(__file__).parent / "data" / "airbench_msmarco_ranks.tsv"


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    code = main([*map(str, argv)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_airbench_published_consistency_is_reproduced(capsys, tmp_path):
    # The 18-model table: the figure AIR-Bench's own snippet prints (rho 0.8204, p 3.04e-5).
    code, out, err = run_cli(capsys, "agreement", "--table", AIRBENCH_RANKS, "--lower-is-better", "--format", "json")
    assert code == 0, err
    result = json.loads(out)
    assert result["spearman_rho"]["value"] == pytest.approx(0.8204334365325078, abs=1e-12)
    assert result["spearman_rho"]["p"] == pytest.approx(3.0420805277771525e-05, rel=1e-9)
    # The 17 models of the analysis page and leaderboard (no jina-embeddings-v3): rho 0.8211, p 5.3e-5.
    rows = [line for line in AIRBENCH_RANKS.read_text().splitlines() if not line.startswith("jina-embeddings-v3")]
    seventeen = tmp_path / "ranks17.tsv"
    seventeen.write_text("\n".join(rows) + "\n")
    code, out, err = run_cli(capsys, "agreement", "--table", seventeen, "--lower-is-better", "--format", "json")
    result = json.loads(out)
    assert result["systems"] == 17
    assert round(result["spearman_rho"]["value"], 4) == 0.8211
    assert f"{result['spearman_rho']['p']:.1e}" == "5.3e-05"
    assert result["kendall_tau"]["value"] == pytest.approx(scipy_stats.kendalltau(*np.loadtxt(seventeen, skiprows=1, usecols=(1, 2), unpack=True)).statistic)
    code, out, _ = run_cli(capsys, "agreement", "--table", seventeen, "--lower-is-better")
    assert "Spearman's rho  +0.8211  p = 5.3e-05" in out


def test_tau_ap_by_hand():
    names = ["a", "b", "c"]
    reference = np.array([3.0, 2.0, 1.0])
    assert tau_ap_score(names, reference, np.array([3.0, 2.0, 1.0])) == 1.0
    assert tau_ap_score(names, reference, np.array([1.0, 2.0, 3.0])) == -1.0
    # A swap at the top costs more than the same swap at the bottom (Kendall's tau: 1/3 for both).
    assert tau_ap_score(names, reference, np.array([2.0, 3.0, 1.0])) == pytest.approx(0.0)
    assert tau_ap_score(names, reference, np.array([3.0, 1.0, 2.0])) == pytest.approx(0.5)
    # Ties are broken by name descending: c before b.
    assert tau_ap_score(names, reference, np.array([3.0, 1.0, 1.0])) == pytest.approx(0.5)


def test_agreement_refuses_too_few_or_unpaired_systems():
    with pytest.raises(ValueError, match="at least 3 systems"):
        agreement(["a", "b"], [1, 2], [1, 2])
    with pytest.raises(ValueError, match="3 systems but 3 and 2 scores"):
        agreement(["a", "b", "c"], [1, 2, 3], [1, 2])


def test_runs_under_human_labels_and_a_judged_layer(bm25_systems, scifact_subset, tmp_path, capsys):
    """Label set B = the human qrels plus a layer that labels each system's unjudged top document
    relevant (what qrels.judged.tsv adds after --fill-holes): the scores equal evaluating each
    run with the merged qrels, and a layer contradicting a human label is refused."""
    import irforge

    human = scifact_subset / "qrels" / "test.tsv"
    judged = {tuple(line.split("\t")[:2]) for line in human.read_text().splitlines()[1:]}
    layer_lines = set()
    for label in ("bm25-flat",):
        for line in (bm25_systems[label] / "run.trec").read_text().splitlines():
            q, _, d, rank, _, _ = line.split()
            if int(rank) <= 3 and (q, d) not in judged:
                layer_lines.add(f"{q}\t{d}\t1")
    layer = tmp_path / "qrels.judged.tsv"
    layer.write_text("query-id\tcorpus-id\tscore\n" + "\n".join(sorted(layer_lines)) + "\n")
    merged = tmp_path / "merged.tsv"
    merged.write_text(human.read_text().rstrip("\n") + "\n" + "\n".join(sorted(layer_lines)) + "\n")

    runs = [folder / "run.trec" for folder in bm25_systems.values()]
    code, out, err = run_cli(capsys, "agreement", *runs, "--qrels-a", human, "--qrels-b", human, "--qrels-b", layer,
                             "-m", "nDCG@10", "--permutations", "200", "--format", "json")
    assert code == 0, err
    result = json.loads(out)
    assert len(layer_lines) > 5
    for label, run in zip(bm25_systems, runs):
        for side, qrels in (("A", human), ("B", merged)):
            expected = irforge.metrics(qrels, run, measures=["nDCG@10"], complete=True).metrics["nDCG@10"]
            assert result["ranks"][label][f"score_{side}"] == pytest.approx(expected, abs=1e-12)
    assert result["ranks"]["bm25-flat"]["score_B"] > result["ranks"]["bm25-flat"]["score_A"]

    contradiction = tmp_path / "contradiction.tsv"
    q, d = sorted(judged)[0]
    contradiction.write_text(f"query-id\tcorpus-id\tscore\n{q}\t{d}\t0\n")
    code, _, err = run_cli(capsys, "agreement", *runs, "--qrels-a", human, "--qrels-b", human, "--qrels-b", contradiction)
    assert code == 2 and f"({q}, {d}) is labelled 0 here and 1" in err


def test_agreement_input_forms_are_exclusive(bm25_systems, capsys):
    code, _, err = run_cli(capsys, "agreement", "--a", *bm25_systems.values(), "--table", AIRBENCH_RANKS)
    assert code == 2 and "give one of" in err
    code, out, err = run_cli(capsys, "agreement", "--a", *bm25_systems.values(), "--b", *bm25_systems.values(),
                             "--permutations", "200")
    assert code == 0, err
    assert "Kendall's tau   +1.0000" in out


def test_python_api_returns_the_json_the_command_prints(bm25_systems, scifact_subset, capsys):
    """irforge.agreement calls the use case `irforge agreement` calls: each input form gives the
    dict `--format json` prints."""
    import irforge

    human = scifact_subset / "qrels" / "test.tsv"
    runs = [folder / "run.trec" for folder in bm25_systems.values()]
    results = list(bm25_systems.values())
    forms = [
        (["-m", "RR@10", *runs, "--qrels-a", human, "--qrels-b", human],
         irforge.agreement(*runs, qrels_a=[human], qrels_b=human, measure="RR@10", permutations=300, seed=3)),
        (["--a", *results, "--b", *reversed(results)], irforge.agreement(a=results, b=results[::-1], permutations=300, seed=3)),
        (["--table", AIRBENCH_RANKS, "--lower-is-better"],
         irforge.agreement(table=AIRBENCH_RANKS, lower_is_better=True, permutations=300, seed=3)),
    ]
    for argv, api in forms:
        code, out, err = run_cli(capsys, "agreement", *argv, "--permutations", "300", "--seed", "3", "--format", "json")
        assert code == 0, err
        assert json.loads(json.dumps(api)) == json.loads(out)
    with pytest.raises(ValueError, match="--lower-is-better applies to --table only"):
        irforge.agreement(a=results, b=results, lower_is_better=True)
    with pytest.raises(ValueError, match="give one of"):
        irforge.agreement(a=results, table=AIRBENCH_RANKS)
