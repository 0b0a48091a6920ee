"""Small iteration helpers (itertools.batched arrives only in Python 3.12)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import islice
from typing import TypeVar

T = TypeVar("T")


def chunked(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """Consecutive lists of `size` items (the last may be shorter), consuming `items` lazily."""
    if size <= 0:
        raise ValueError(f"chunk size must be positive, got {size}")
    iterator = iter(items)
    while chunk := list(islice(iterator, size)):
        yield chunk
