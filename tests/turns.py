"""Holding a SQLite database's write turn from another thread, as another process's
transaction would (a second handle takes the same file lock). Shared by the tests of group
commit and of the writer turns."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from wayline.store.base import Store

DEADLINE_S = 30.0


@contextmanager
def holding_write_turn(other: Store) -> Iterator[None]:
    """``other``'s write turn is held by a thread of its own until the block ends."""
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with other.write_turn():
            holding.set()
            release.wait(DEADLINE_S)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert holding.wait(DEADLINE_S), "the holder never got the write turn"
        yield
    finally:
        release.set()
        holder.join(DEADLINE_S)
