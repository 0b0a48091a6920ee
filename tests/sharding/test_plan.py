"""Shard arithmetic: every document in exactly one shard, contiguous, sizes within one."""

from __future__ import annotations

import itertools

import pytest
from irforge.sharding import plan_shards, shard_for

PAIRS = [(total, count) for total in [*range(40), 97, 1000, 5183, 3_633_000] for count in [*range(1, 13), 64, 101, 1000]]


@pytest.mark.parametrize("total,count", [p for p in PAIRS[::7] if p[0] <= 5183] + [(0, 1), (1, 1), (5, 8), (10, 3), (5183, 8)])
def test_every_document_is_in_exactly_one_shard(total, count):
    shards = plan_shards(total, count)
    assert [s.index for s in shards] == list(range(count))
    assert all(s.count == count for s in shards)
    covered = list(itertools.chain.from_iterable(range(s.start, s.stop) for s in shards))
    assert covered == list(range(total))                                 # once each, in order
    assert all(a.stop == b.start for a, b in itertools.pairwise(shards))     # contiguous
    sizes = [s.size for s in shards]
    assert max(sizes) - min(sizes) <= 1
    assert sizes == sorted(sizes, reverse=True)                           # larger shards first
    assert all(shard_for(total, count, i) == shards[i] for i in {0, count // 2, count - 1})


def test_all_pairs_cover_exactly_once():
    # The full grid, cheaply: sums and boundaries instead of materialised ranges.
    for total, count in PAIRS:
        shards = plan_shards(total, count)
        assert shards[0].start == 0 and shards[-1].stop == total
        assert sum(s.size for s in shards) == total
        assert all(a.stop == b.start and a.size >= b.size >= a.size - 1 for a, b in itertools.pairwise(shards))


def test_uneven_split_puts_the_remainder_first():
    assert [(s.start, s.stop) for s in plan_shards(10, 3)] == [(0, 4), (4, 7), (7, 10)]
    assert [s.size for s in plan_shards(5183, 8)] == [648] * 7 + [647]


def test_more_shards_than_documents_gives_empty_shards():
    shards = plan_shards(3, 5)
    assert [s.size for s in shards] == [1, 1, 1, 0, 0]
    assert shards[4].describe() == "shard 4 of 5 (empty)"
    assert shards[0].describe() == "shard 0 of 5 (documents 0-0)"
    assert shards[1].name == "shard-1-of-5"


@pytest.mark.parametrize("total,count,message", [
    (10, 0, "shard_count must be at least 1"), (-1, 2, "total_documents must be at least 0"),
    (10, 2.0, "shard_count must be an integer"), (True, 2, "total_documents must be an integer"),
])
def test_bad_arguments_are_refused_by_name(total, count, message):
    with pytest.raises(ValueError, match=message):
        plan_shards(total, count)


@pytest.mark.parametrize("index", [-1, 3, "1", None])
def test_shard_index_out_of_range(index):
    with pytest.raises(ValueError, match=r"shard index must be in \[0, 3\)"):
        shard_for(10, 3, index)
