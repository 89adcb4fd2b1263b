"""The channel contract: fold a step's writes, read, checkpoint, restore."""

from __future__ import annotations

import collections.abc
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar, Final

__all__ = ["CONCRETE", "MISSING", "Channel"]


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


MISSING: Final[Any] = _Missing()
"""A channel that has never been written holds MISSING (it is absent from the state)."""


CONCRETE: Final[dict[Any, type]] = {
    collections.abc.Sequence: list,
    collections.abc.MutableSequence: list,
    collections.abc.Set: set,
    collections.abc.MutableSet: set,
    collections.abc.Mapping: dict,
    collections.abc.MutableMapping: dict,
}
"""An abstract collection's empty value, as LangGraph's reducer channels make it
(``Annotated[Sequence[str], add_messages]`` starts from ``[]``)."""


class Channel(ABC):
    """One key of the state. Execution and reconstruction fold writes through ``update``.

    ``update`` receives all writes one superstep made to this channel, in fold order, in one
    call: replay calls it with exactly the same batches, so a channel whose result depends
    on batching still reconstructs the state that ran.
    """

    __slots__ = ("key", "value")

    is_log: ClassVar[bool] = False
    """An append-only list (``AppendLog``): snapshots store it as segments. A class flag,
    not ``isinstance``: the loop asks it of every channel each step, and ``isinstance``
    against an ABC's subclass goes through ``ABCMeta.__instancecheck__`` (about a tenth of
    an engine step's time went to those checks on a trivial graph)."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.value: Any = MISSING

    @abstractmethod
    def update(self, values: Sequence[Any]) -> bool:
        """Fold one step's writes; return whether the value changed."""

    def get(self) -> Any:
        return self.value

    def checkpoint(self) -> Any:
        return self.value

    def restore(self, value: Any) -> None:
        self.value = value

    @abstractmethod
    def fresh(self) -> Channel:
        """An empty channel of the same kind and configuration."""

    def copy(self) -> Channel:
        new = self.fresh()
        new.value = self.value
        return new
