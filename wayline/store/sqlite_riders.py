"""Small writes that ride on the durable transaction in flight instead of paying their own
fsync: the server's thread and run inserts, on SQLite.

A server beside in-process workers wrote each thread and each accepted run in a
transaction of its own: it waited for the store's writer behind a group of step commits,
then paid an fsync for one row. Now such a write queues on the store and waits for the
writer's lock, as it did; the next durable transaction to begin (usually the next group of
step commits, whose leader was waiting for the same lock) runs the queued statements just
before its COMMIT, each under a savepoint of its own, and the rider returns once that
COMMIT, fsync included, is done. If the lock comes to the rider first, it begins the
transaction itself and carries whatever queued meanwhile. So a rider is exactly as durable
as alone (a lease's NORMAL commit carries none), its error is its own (its savepoint rolls
back alone and it raises in its own thread), and if the transaction that carried it fails
it writes again on its own.
"""

from __future__ import annotations

import dataclasses
import sqlite3
import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["Rider", "SQLiteRiders"]

T = TypeVar("T")


@dataclasses.dataclass(slots=True)
class Rider:
    fn: Callable[[sqlite3.Connection], Any]
    thread: int = dataclasses.field(default_factory=threading.get_ident)
    done: threading.Event = dataclasses.field(default_factory=threading.Event)
    result: Any = None
    error: BaseException | None = None
    alone: bool = False
    """The transaction that seated it failed: write again in a transaction of its own."""


class SQLiteRiders:
    """Mixed into ``SQLiteStore``: ``_tx`` seats the queued riders before its COMMIT
    (``_seat_riders``) and lands them after it (``_land``)."""

    _lock: Any
    _tx: Callable[..., Any]
    _rider_error: Callable[[sqlite3.Error], Exception]
    _durable: bool
    _riders: list[Rider]
    _riders_mutex: threading.Lock
    rides = 0
    """Writes another thread's transaction carried (for tests and the server's log)."""

    def _ride(self, tenant: str | None, fn: Callable[[sqlite3.Connection], T]) -> T:
        """``fn(db)`` committed durably: queued for the next durable transaction of this
        store, which the writer in flight (a group of step commits) will usually begin; if
        the writer's lock comes free with nobody having taken it, in one of its own (with
        whatever queued meanwhile)."""
        if self._lock._is_owned():  # inside this thread's own transaction: nothing to wait for
            with self._tx(tenant) as db:
                return fn(db)
        rider = Rider(fn)
        with self._riders_mutex:
            self._riders.append(rider)
        with self._lock:  # the transaction in flight ends; the next seats the queue
            if not rider.done.is_set():
                with self._tx(tenant):
                    pass  # nobody took it: a transaction of its own seats it
        if rider.alone:
            with self._tx(tenant) as db:
                return fn(db)
        if rider.error is not None:
            raise rider.error
        result: T = rider.result
        return result

    def _seat_riders(self, db: sqlite3.Connection) -> list[Rider]:
        """Before a durable COMMIT: run the queued riders' statements, each under its own
        savepoint (a lease's NORMAL commit seats none: they would not be durable)."""
        if not self._durable or not self._riders:  # none queued (one queuing now waits
            return []  # for the lock, then writes in a transaction of its own if no one did)
        with self._riders_mutex:
            riders, self._riders = self._riders, []
        me = threading.get_ident()
        for rider in riders:
            db.execute("SAVEPOINT wayline_rider")
            try:
                rider.result = rider.fn(db)
            except Exception as exc:
                db.execute("ROLLBACK TO SAVEPOINT wayline_rider")
                rider.error = self._rider_error(exc) if isinstance(exc, sqlite3.Error) else exc
            db.execute("RELEASE SAVEPOINT wayline_rider")
            if rider.thread != me:
                self.rides += 1
        return riders

    def _land(self, riders: list[Rider], *, committed: bool) -> None:
        """After the COMMIT, or its failure (then each writes again on its own)."""
        for rider in riders:
            rider.alone = not committed
            rider.done.set()
