"""MessageLog: a chat history merged by ``add_messages`` (``MessagesState``), stored like
an append log.

A history mostly grows at its end, so its snapshots use the append log's immutable
segments: each snapshot writes only the messages added since the one before. It can also
be edited (a message replaced by id, removed, or the whole history cleared); a fold that
does so marks the history rewritten, and the next snapshot starts a new segment index
(one full copy), after which snapshots are incremental again. The mark is set by the fold
itself, so reconstruction computes it exactly as execution did.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from wayline.graph.channels.append_log import AppendLog
from wayline.graph.channels.base import MISSING
from wayline.graph.channels.reducer import ReducerChannel

__all__ = ["MessageLog"]


class MessageLog(AppendLog):
    """``Annotated[list, add_messages]``: folds through the reducer, snapshots as segments
    while the history only grows."""

    __slots__ = ()

    def __init__(self, key: str, reducer: Callable[[Any, Any], Any]) -> None:
        super().__init__(key, reducer)

    def update(self, values: Sequence[Any]) -> bool:
        before = self.value
        changed = ReducerChannel.update(self, values)  # never the append-in-place path
        if changed and not self.rewritten and not _extends(before, self.value):
            self.rewritten = True
        return changed

    def fresh(self) -> MessageLog:
        return MessageLog(self.key, self.reducer)

    def copy(self) -> MessageLog:
        new = self.fresh()
        new.value = self.value
        new.rewritten = self.rewritten
        return new


def _extends(before: Any, after: Any) -> bool:
    """Whether ``after`` is ``before`` with items appended (the same objects, in place)."""
    if before is MISSING or not before:
        return True
    if len(after) < len(before):
        return False
    return all(a is b for a, b in zip(before, after, strict=False))
