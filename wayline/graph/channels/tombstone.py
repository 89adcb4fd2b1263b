"""A channel whose class was erased: it reads as its ``Redacted`` tombstone, whatever is
folded into it. Reconstruction puts one in place of a channel when a stored write or
snapshot value is a tombstone, so the erased value's reducer never sees a tombstone (a
list reducer could not add one) and the channel never reads as a partial, older value."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from wayline.classes import Redacted
from wayline.graph.channels.base import Channel

__all__ = ["Tombstone"]


class Tombstone(Channel):
    __slots__ = ()

    def __init__(self, key: str, value: Redacted) -> None:
        super().__init__(key)
        self.value = value

    def update(self, values: Sequence[Any]) -> bool:
        return bool(values)  # still triggers the nodes that listen to the channel

    def fresh(self) -> Channel:
        return Tombstone(self.key, self.value)
