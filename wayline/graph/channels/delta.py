"""``DeltaChannel``: LangGraph 1.2's batch-reducer channel, ``Annotated[list, DeltaChannel(r)]``.

LangGraph stores such a channel as the writes of each step and rebuilds it by replaying them
through ``reducer(state, [write, ...])``, one call per batch. Every wayline channel is stored
that way already (a step's delta, folded again on reconstruction, snapshots at a bounded
interval), so here it is only its fold: one reducer call per superstep with all that step's
writes, an ``Overwrite`` replacing the value and the step's other writes ignored, as
LangGraph's ``update`` does. Replay folds the same batches, so a reducer that is not
batching-invariant still reconstructs exactly the state that ran. ``snapshot_frequency`` is
accepted and checked for a port's sake; the store's own snapshot policy bounds replay.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

from wayline.errors import InvalidUpdateError, ReducerError
from wayline.graph.channels.base import CONCRETE, MISSING, Channel
from wayline.graph.channels.overwrite import overwrite_of

__all__ = ["DeltaChannel"]


class DeltaChannel(Channel):
    """A key folded once a step by ``reducer(value, writes)`` (a list of the step's writes).

    Written in a state schema as LangGraph's: ``Annotated[list, DeltaChannel(reducer)]``;
    the schema binds it to its key (``bind``) with the annotated type as ``typ`` when none
    is given. The value starts as ``typ()``.
    """

    __slots__ = ("reducer", "snapshot_frequency", "typ")

    def __init__(
        self,
        reducer: Callable[[Any, list[Any]], Any],
        typ: type | None = None,
        *,
        snapshot_frequency: int = 1000,
        key: str = "",
    ) -> None:
        if not isinstance(snapshot_frequency, int) or snapshot_frequency <= 0:
            raise ValueError(
                f"snapshot_frequency must be a positive int, got {snapshot_frequency!r}"
            )
        super().__init__(key)
        self.reducer = reducer
        self.snapshot_frequency = snapshot_frequency
        self.typ: type | None = CONCRETE.get(typ, typ)

    def bind(self, key: str, annotated: Any) -> DeltaChannel:
        """This channel for state key ``key`` whose annotated type builds ``annotated``."""
        bound = DeltaChannel(
            self.reducer,
            self.typ or annotated,
            snapshot_frequency=self.snapshot_frequency,
            key=key,
        )
        return bound.fresh()

    def _empty(self) -> Any:
        return self.typ() if self.typ is not None else MISSING

    def update(self, values: Sequence[Any]) -> bool:
        if not values:
            return False
        overwrites = [new for is_ow, new in map(overwrite_of, values) if is_ow]
        if len(overwrites) > 1:
            raise InvalidUpdateError(
                f"channel {self.key!r}: Can receive only one Overwrite value per super-step. "
                "Let one node overwrite it in a step; nothing was written"
            )
        if overwrites:
            (new,) = overwrites
            self.value = copy.copy(new) if new is not None else self._empty()
            return True
        base = self._empty() if self.value is MISSING else self.value
        try:
            self.value = self.reducer(base, list(values))
        except Exception as exc:
            raise ReducerError(self.key, exc) from exc
        return True

    def fresh(self) -> DeltaChannel:
        new = DeltaChannel(
            self.reducer, self.typ, snapshot_frequency=self.snapshot_frequency, key=self.key
        )
        if new.typ is not None:
            try:
                new.value = new.typ()
            except Exception:  # a type that cannot be built empty starts absent
                new.typ = None
        return new

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, DeltaChannel)
            and self.reducer is other.reducer
            and self.snapshot_frequency == other.snapshot_frequency
        )

    def __hash__(self) -> int:
        return hash((DeltaChannel, id(self.reducer), self.snapshot_frequency))

    def __repr__(self) -> str:
        name = getattr(self.reducer, "__name__", repr(self.reducer))
        return f"DeltaChannel({name}, snapshot_frequency={self.snapshot_frequency})"
