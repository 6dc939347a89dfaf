"""Lists cut into slices of bounded size, for requests and statements that take many names at
once."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypeVar

T = TypeVar("T")


def chunks(items: Sequence[T], size: int) -> Iterator[list[T]]:
    """Consecutive slices of `items`, each at most `size` long, in order."""
    for i in range(0, len(items), size):
        yield list(items[i:i + size])
