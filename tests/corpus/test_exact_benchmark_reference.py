"""The yardstick of benchmarks/exact_search.py (and scale_dense.py): its blockwise float64 reference
top k against one full np.lexsort of every score, with exact ties that must fall to the larger doc
id (row), and its agreement shares on answers crafted to differ in order, in set, or only by a swap
within float32 rounding. A wrong yardstick would misreport every engine's "same top 100"."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def exact_search():
    sys.path.insert(0, str(BENCHMARKS))
    try:
        yield importlib.import_module("exact_search")
    finally:
        sys.path.remove(str(BENCHMARKS))


def corpus(seed: int = 3, rows: int = 1_000, dim: int = 384):
    rng = np.random.default_rng(seed)
    docs = rng.normal(size=(rows, dim)).astype(np.float32)
    docs /= np.linalg.norm(docs, axis=1, keepdims=True)
    docs[500:520] = docs[10]    # 21 identical rows: tied scores for every query, spread over blocks
    queries = np.concatenate([docs[10:11] * 0.9 + docs[11:12] * 0.1, rng.normal(size=(9, dim)).astype(np.float32)])
    return docs, queries / np.linalg.norm(queries, axis=1, keepdims=True)


def test_reference_top_equals_a_full_sort_with_ties_to_the_larger_row(exact_search):
    docs, queries = corpus()
    rows, scores = exact_search.reference_top(docs, queries, block_rows=64)
    full = queries.astype(np.float64) @ docs.astype(np.float64).T
    for query, row in enumerate(full):
        expected = np.lexsort((-np.arange(len(docs)), -row))[:exact_search.K]
        assert rows[query].tolist() == expected.tolist()
        assert np.allclose(scores[query], row[expected], rtol=0, atol=1e-12)
    # The first query's top holds the 21 tied copies, larger rows first.
    assert rows[0][:21].tolist() == [*range(519, 499, -1), 10]


def test_agreement_tells_order_set_and_rounding_apart(exact_search):
    docs, queries = corpus()
    reference = exact_search.reference_top(docs, queries)
    rows = reference[0].tolist()
    assert exact_search.agreement(rows, docs, queries, reference) == {
        "same_order": 1.0, "same_set": 1.0, "within_float32_rounding": 1.0}
    swapped_ties = [list(r) for r in rows]
    swapped_ties[0][0], swapped_ties[0][1] = swapped_ties[0][1], swapped_ties[0][0]   # two identical vectors
    far = [list(r) for r in rows]
    far[1][0], far[1][-1] = far[1][-1], far[1][0]                                    # first and last: far apart
    outside = [list(r) for r in rows]
    outside[2][-1] = next(i for i in range(len(docs)) if i not in set(rows[2]))      # a document not in the top
    shares = {name: exact_search.agreement(answer, docs, queries, reference)
              for name, answer in (("ties", swapped_ties), ("far", far), ("outside", outside))}
    assert shares["ties"] == {"same_order": 0.9, "same_set": 1.0, "within_float32_rounding": 1.0}
    assert shares["far"] == {"same_order": 0.9, "same_set": 1.0, "within_float32_rounding": 0.9}
    assert shares["outside"] == {"same_order": 0.9, "same_set": 0.9, "within_float32_rounding": 0.9}
