"""LastValue: a key without a reducer keeps the one value written last."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from wayline.errors import InvalidUpdateError
from wayline.graph.channels.base import Channel

__all__ = ["LastValue"]


class LastValue(Channel):
    """Holds one value; two writes in one superstep are ambiguous and rejected."""

    __slots__ = ()

    def update(self, values: Sequence[Any]) -> bool:
        if not values:
            return False
        if len(values) > 1:
            raise InvalidUpdateError(
                f"At key {self.key!r}: the channel received {len(values)} values in one "
                "superstep but keeps only one: give it a reducer, e.g. Annotated[list, add], "
                "or let a single node write it"
            )
        self.value = values[-1]
        return True

    def fresh(self) -> LastValue:
        return LastValue(self.key)

    def copy(self) -> LastValue:
        if type(self) is not LastValue:  # a subclass may hold more: the general way
            return super().copy()  # type: ignore[return-value]
        new = LastValue.__new__(LastValue)
        new.key, new.value = self.key, self.value
        return new
