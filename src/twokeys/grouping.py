"""Consecutive items in groups of about a given size: texts by characters, term lists by
terms, documents by chunks. The one batching rule of the build's streaming stages."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")


def groups_by_size(items: Iterable[T], size: Callable[[T], int], limit: int) -> Iterator[list[T]]:
    """``items`` in order, in lists closed once their summed ``size`` reaches ``limit``
    (the last list may be smaller; no list is empty)."""
    group: list[T] = []
    total = 0
    for item in items:
        group.append(item)
        total += size(item)
        if total >= limit:
            yield group
            group, total = [], 0
    if group:
        yield group
