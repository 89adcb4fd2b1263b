"""Barrier: a join edge ``add_edge([a, b], c)`` waits until every source has finished."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from wayline.graph.channels.base import MISSING, Channel

__all__ = ["Barrier"]


class Barrier(Channel):
    """Collects source names; ``consume`` fires once all have arrived, then resets.

    Its value is a sorted tuple (not a set) so its encoding is the same in every process.
    """

    __slots__ = ("sources",)

    def __init__(self, key: str, sources: Sequence[str]) -> None:
        super().__init__(key)
        self.sources = tuple(sorted(sources))

    def update(self, values: Sequence[Any]) -> bool:
        if not values:
            return False
        seen = set(self.value) if self.value is not MISSING else set()
        seen.update(values)
        self.value = tuple(sorted(seen))
        return True

    def complete(self) -> bool:
        return self.value is not MISSING and set(self.value) >= set(self.sources)

    def consume(self) -> None:
        self.value = MISSING

    def fresh(self) -> Barrier:
        return Barrier(self.key, self.sources)
