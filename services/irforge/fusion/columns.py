"""What both fusion methods share: per query, every run's ranking as arrays, and the sum of the
runs' contributions per document as one Ranking."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from irforge.ranking import Ranking

_NOTHING: Mapping[str, float] = {}


def rankings_of(runs: Sequence[Mapping[str, Mapping[str, float]]], query_id: str) -> list[Ranking]:
    """The query's ranking in each run (empty where a run lacks it), ordered by the tie rule."""
    return [Ranking.of(run.get(query_id, _NOTHING)) for run in runs]


def summed_by_document(rankings: Sequence[Ranking], contributions: Sequence[np.ndarray]) -> Ranking:
    """Each document's contributions added up, as a Ranking ordered by the tie rule.

    Bit for bit what adding them into a dict run by run gives: bincount adds each document's
    values in array order (run order) starting from 0.0, the sum a dict would build."""
    doc_ids = np.concatenate([ranking.doc_ids for ranking in rankings])
    values = np.concatenate(contributions)
    # np.unique sorts the ids (Python's str order, the tie rule's): a document's position is its id rank.
    unique, positions = np.unique(doc_ids, return_inverse=True)
    totals = np.bincount(positions.reshape(-1), weights=values, minlength=len(unique))
    order = np.lexsort((-np.arange(len(unique)), -totals))
    return Ranking(unique[order], totals[order])
