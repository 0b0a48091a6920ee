"""run.trec written from the backend's Rankings is byte for byte the file the dict run gives."""

import itertools
import random

from irforge.corpus.lexical.embedded import EmbeddedBackend
from irforge.corpus.settings import Bm25Settings
from irforge.data import BeirDataset, write_trec_run
from irforge.runs import read_run_file
from irforge.ranking import Ranking


def test_a_run_of_rankings_writes_the_same_bytes_as_its_dicts(tmp_path, beir_dir):
    dataset = BeirDataset.open(beir_dir / "scifact")
    backend = EmbeddedBackend(tmp_path / "index")
    backend.create("slice", "fp", Bm25Settings())
    list(backend.ingest("slice", iter([list(itertools.islice(dataset.corpus(), 400))])))
    queries = list(itertools.islice(dataset.queries(), 60))
    rankings = dict(zip((q.query_id for q in queries), backend.search("slice", queries, 100), strict=True))
    assert all(isinstance(r, Ranking) for r in rankings.values()) and sum(map(len, rankings.values())) > 500

    # The dict path: doc id -> score in an arbitrary order, as the Hit lists used to be turned into.
    shuffled = {}
    for query_id, ranking in rankings.items():
        items = ranking.pairs()
        random.Random(query_id).shuffle(items)
        shuffled[query_id] = dict(items)
    write_trec_run(tmp_path / "rankings.trec", rankings, tag="t")
    write_trec_run(tmp_path / "dicts.trec", shuffled, tag="t")
    assert (tmp_path / "rankings.trec").read_bytes() == (tmp_path / "dicts.trec").read_bytes()
    assert read_run_file(tmp_path / "rankings.trec").run == {q: r.as_dict() for q, r in rankings.items() if len(r)}
