"""Reducer channels: ``Annotated[T, reducer]`` folds each write with ``reducer(old, new)``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from wayline.errors import InvalidUpdateError, ReducerError
from wayline.graph.channels.base import MISSING, Channel
from wayline.graph.channels.overwrite import overwrite_of

__all__ = ["ReducerChannel"]


class ReducerChannel(Channel):
    """Folds writes one at a time, in fold order, through a binary reducer.

    The initial value is ``factory()`` when the declared type can be built empty (``list``,
    ``dict``, ``int``...), as LangGraph does; otherwise the first write becomes the value.
    """

    __slots__ = ("factory", "reducer")

    def __init__(
        self, key: str, reducer: Callable[[Any, Any], Any], factory: Callable[[], Any] | None
    ) -> None:
        super().__init__(key)
        self.reducer = reducer
        self.factory = factory
        if factory is not None:
            try:
                self.value = factory()
            except Exception:
                self.factory = None

    def update(self, values: Sequence[Any]) -> bool:
        if not values:
            return False
        value = self.value
        overwritten = False
        for item in values:
            is_overwrite, new = overwrite_of(item)
            if is_overwrite:
                if overwritten:
                    raise InvalidUpdateError(
                        f"channel {self.key!r}: Can receive only one Overwrite value per "
                        "super-step. Let one node overwrite it in a step; nothing was written"
                    )
                value, overwritten = new, True
                continue
            if overwritten:  # as LangGraph: the overwrite stands for the rest of the step
                continue
            if value is MISSING:
                value = item
                continue
            try:
                value = self.reducer(value, item)
            except Exception as exc:
                raise ReducerError(self.key, exc) from exc
        self.value = value
        self._overwritten(overwritten)
        return True

    def _overwritten(self, overwritten: bool) -> None:
        """A hook for channels that care that a fold replaced their value (append logs)."""

    def fresh(self) -> ReducerChannel:
        return ReducerChannel(self.key, self.reducer, self.factory)

    def copy(self) -> ReducerChannel:
        if type(self) is not ReducerChannel:  # a subclass may hold more: the general way
            return super().copy()  # type: ignore[return-value]
        new = ReducerChannel.__new__(ReducerChannel)  # not __init__: no factory() to discard
        new.key, new.value = self.key, self.value
        new.reducer, new.factory = self.reducer, self.factory
        return new
