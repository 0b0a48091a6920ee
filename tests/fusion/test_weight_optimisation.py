"""Weights chosen on a development split: irforge's grid search tries the points ranx's
optimize_fusion tries, scores each as ranx scores it and chooses what ranx chooses, on real SciFact
runs; `irforge eval --run A --run B --fusion-optimize-on dev` records and prints the choice and its
dev score, and its test figures equal ranx's fuse with those weights scored by pytrec_eval (ranx's
evaluate orders tied scores otherwise than trec_eval's rule); the split being reported is never the
one the weights are chosen on. (On these dev queries no tie moves a grid point's score, so ranx's
own scores of the points agree with irforge's to 1e-9.)

SciFact's train qrels are not among the shared data, so the development split here is half of its
test queries (every other id) and the reported split the other half: disjoint, as dev and test are."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest
import pytrec_eval
from ranx import fuse as ranx_fuse
from ranx import optimize_fusion

from irforge.cli.main import main
from irforge.data import BeirDataset
from irforge.evaluator.core import EvaluationOptions, Evaluator
from irforge.fusion import Fusion
from irforge.fusion.optimise import WeightSearch, optimise_weights, weight_grid
from irforge.ranking import ranked
from irforge.runs import read_run_file

from .ranx_reference import ranx_qrels, ranx_run

DATA = Path(__file__).parent / "data"
RUNS = (DATA / "scifact-bm25.top50.trec.gz", DATA / "scifact-minilm.top50.trec.gz")


@pytest.fixture(scope="module")
def halves(beir_dir, tmp_path_factory) -> Path:
    """SciFact with qrels/dev.tsv and qrels/test.tsv: its test queries, alternately (disjoint halves)."""
    source = beir_dir / "scifact"
    root = tmp_path_factory.mktemp("scifact-halves")
    (root / "qrels").mkdir()
    for name in ("corpus.jsonl", "queries.jsonl"):
        (root / name).symlink_to(source / name)
    qrels = BeirDataset.open(source).qrels("test")
    queries = sorted(qrels, key=int)
    for split, chosen in (("dev", queries[0::2]), ("test", queries[1::2])):
        lines = [f"{q}\t{d}\t{r}" for q in chosen for d, r in qrels[q].items()]
        (root / "qrels" / f"{split}.tsv").write_text("query-id\tcorpus-id\tscore\n" + "\n".join(lines) + "\n")
    return root


def restricted(run: dict, qrels: dict) -> dict:
    return {q: dict(ranked(run.get(q, {}))) for q in qrels}


@pytest.fixture(scope="module")
def dev(halves):
    qrels = BeirDataset.open(halves).qrels("dev")
    return qrels, [restricted(read_run_file(path).run, qrels) for path in RUNS]


def test_the_grid_is_ranx_optimize_fusions_and_counted_in_whole_steps():
    assert weight_grid(2, 0.1) == [(i / 10, (10 - i) / 10) for i in range(11)]
    assert [round(sum(w), 12) for w in weight_grid(3, 0.1)] == [1.0] * 66   # ranx's float sum keeps 0.7+0.2+0.1 out
    assert len(weight_grid(4, 0.25)) == 35
    with pytest.raises(ValueError, match="whole steps"):
        weight_grid(2, 0.3)


def test_the_search_chooses_what_ranx_optimize_fusion_chooses_scoring_each_point_alike(dev):
    qrels, runs = dev
    evaluator, options = Evaluator(), EvaluationOptions(drop_identical_ids=False, complete=True)
    choice = optimise_weights(Fusion("wsum"), runs, ["bm25", "minilm"], WeightSearch("dev", "nDCG@10", 0.1),
                              lambda run: evaluator.evaluate(qrels, run, ["nDCG@10"], options).aggregate["nDCG@10"], k=50)

    best, report = optimize_fusion(ranx_qrels(qrels), [ranx_run(run) for run in runs], norm="min-max", method="wsum",
                                   metric="ndcg@10", step=0.1, show_progress=False, return_optimization_report=True)
    # ranx's points, in its order (its report names each by the str of a tuple of numpy floats)
    assert [str(tuple(map(float, eval(config.replace("np.float64", ""))))) for config in report.configs] == \
        [str(weights) for weights, _ in choice.trials]
    for (weights, score), expected in zip(choice.trials, report.results):
        assert score == pytest.approx(expected, abs=1e-9), weights
    assert choice.weights == tuple(map(float, best["weights"])) and choice.queries == len(qrels)
    assert choice.score == pytest.approx(max(report.results), abs=1e-9)


def trec_ndcg10(qrels: dict, fused) -> float:
    """Mean nDCG@10 of ranx's fused scores as trec_eval ranks them (ties by doc id descending, as
    irforge): ranx's own evaluate orders equal scores otherwise, and equal weights make such ties
    (a document first in one run only, another first in the other only: 0.5 each)."""
    found = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate({q: dict(fused.run[q]) for q in fused.run})
    return sum(found.get(q, {}).get("ndcg_cut_10", 0.0) for q in qrels) / len(qrels)


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def test_eval_fuses_run_files_with_weights_chosen_on_dev_recorded_and_printed(halves, dev, tmp_path):
    code, printed, _ = run_cli(["eval", "--dataset", str(halves), "--split", "test", "--top-k", "50",
                                "--run", str(RUNS[0]), "--run", str(RUNS[1]), "--fusion", "wsum",
                                "--fusion-optimize-on", "dev", "-m", "nDCG@10", "--out", str(tmp_path / "out")])
    assert code == 0
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    fusion = results["retriever"]["fusion"]
    chosen = fusion["optimisation"]
    qrels, runs = dev
    best = optimize_fusion(ranx_qrels(qrels), [ranx_run(run) for run in runs], norm="min-max", method="wsum",
                           metric="ndcg@10", step=0.1, show_progress=False)["weights"]
    labels = [path.name for path in RUNS]
    best = [float(w) for w in best]
    assert chosen["weights"] == dict(zip(labels, best)) and fusion["weights"] == best
    assert (chosen["split"], chosen["measure"], chosen["search_space"]["points"]) == ("dev", "nDCG@10", 11)
    assert f"fusion weights chosen on dev ({len(qrels)} queries; 11 grid points" in printed
    assert f"nDCG@10 {chosen['score']:.4f} on dev" in printed

    # The reported half's figure: ranx's fuse of the same files with the chosen weights, scored by trec_eval.
    test_qrels = BeirDataset.open(halves).qrels("test")
    test_runs = [ranx_run(restricted(read_run_file(path).run, test_qrels)) for path in RUNS]
    fused = ranx_fuse(test_runs, norm="min-max", method="wsum", params={"weights": list(best)})
    assert results["metrics"]["nDCG@10"] == pytest.approx(trec_ndcg10(test_qrels, fused), abs=1e-9)
    assert results["latency"] == {"absent": results["latency"]["absent"]} and "only their fusion" in results["latency"]["absent"]


@pytest.mark.parametrize("extra, message", [
    (["--fusion", "wsum", "--fusion-optimize-on", "test"], "--fusion-optimize-on test is the split being reported"),
    (["--fusion", "combmnz", "--fusion-weights", "1,2"], "--fusion-weights 1.0,2.0 does not apply here"),
    (["--fusion", "wsum", "--fusion-weights", "1,2,3"], "--fusion-weights needs 2 weights, one per --run file"),
    (["--fusion", "rrf", "--fusion-norm", "zmuv"], "--fusion-norm zmuv does not apply here"),
    (["--fusion", "wsum", "--fusion-weights", "1,2", "--fusion-optimize-on", "dev"], "both set the weights"),
    (["--fusion", "wsum", "--fusion-optimize-on", "dev", "--fusion-grid-step", "0.0002"], "5,001 weight vectors"),
])
def test_what_cannot_run_is_refused_before_any_work(halves, tmp_path, extra, message):
    code, _, err = run_cli(["eval", "--dataset", str(halves), "--run", str(RUNS[0]), "--run", str(RUNS[1]), *extra,
                            "--out", str(tmp_path / "out")])
    assert code == 2 and message in err, err
    assert not (tmp_path / "out").exists()


def test_the_hybrid_chooses_its_weights_on_dev_as_ranx_would_from_its_own_two_runs(scifact_tiny, tmp_path):
    """irforge's own retrievers fused with weights chosen on dev: BM25 and MiniLM runs made apart
    (eval --split dev / test), ranx chooses from the dev pair and scores the test pair; the hybrid
    agrees on both, its dev retrieval kept out of the reported latency."""
    root = tmp_path / "tiny"
    (root / "qrels").mkdir(parents=True)
    for name in ("corpus.jsonl", "queries.jsonl"):
        (root / name).symlink_to(scifact_tiny / name)
    lines = (scifact_tiny / "qrels" / "test.tsv").read_text().splitlines()[1:]
    queries = sorted({line.split("\t")[0] for line in lines})
    for split, chosen in (("dev", queries[:2]), ("test", queries[2:])):
        (root / "qrels" / f"{split}.tsv").write_text(
            "query-id\tcorpus-id\tscore\n" + "".join(f"{line}\n" for line in lines if line.split("\t")[0] in chosen))
    stores = ["--index-dir", str(tmp_path / "i"), "--vector-dir", str(tmp_path / "v"), "--embedding-cache", str(tmp_path / "c")]
    common = ["eval", "--dataset", str(root), "--top-k", "10", "-m", "nDCG@10", *stores]
    apart = {}
    for retriever in ("bm25", "dense"):
        for split in ("dev", "test"):
            out = tmp_path / f"{retriever}-{split}"
            assert run_cli([*common, "--retriever", retriever, "--split", split, "--out", str(out)])[0] == 0
            apart[retriever, split] = ranx_run({q: dict(ranked(s)) for q, s in read_run_file(out / "run.trec").run.items()})
    code, printed, _ = run_cli([*common, "--retriever", "hybrid", "--fusion", "wsum", "--fusion-norm", "zmuv",
                                "--fusion-optimize-on", "dev", "--out", str(tmp_path / "hybrid")])
    assert code == 0
    results = json.loads((tmp_path / "hybrid" / "results.json").read_text())

    dev_qrels, test_qrels = (BeirDataset.open(root).qrels(split) for split in ("dev", "test"))
    best = optimize_fusion(ranx_qrels(dev_qrels), [apart["bm25", "dev"], apart["dense", "dev"]], norm="zmuv", method="wsum",
                           metric="ndcg@10", step=0.1, show_progress=False)["weights"]
    chosen = results["retriever"]["fusion"]["optimisation"]
    assert list(chosen["weights"].values()) == [float(w) for w in best] and list(chosen["weights"]) == ["bm25", "dense"]
    fused = ranx_fuse([apart["bm25", "test"], apart["dense", "test"]], norm="zmuv", method="wsum",
                      params={"weights": [float(w) for w in best]})
    assert results["metrics"]["nDCG@10"] == pytest.approx(trec_ndcg10(test_qrels, fused), abs=1e-9)
    assert "fusion weights chosen on dev (2 queries; 11 grid points" in printed
    assert results["latency"]["end_to_end"]["count"] == 1   # the reported split's one query, not dev's two
