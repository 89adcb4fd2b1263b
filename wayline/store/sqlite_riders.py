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

A write nobody needs to wait for (a status derived from durable rows, recorded so later
reads need not derive it again) does not even wait for the lock: ``_write_later`` queues it
and returns, and the store's next transaction of any kind runs it before its COMMIT. A
``GET`` of a finished run (the SDK sends one after every stream) used to pay a transaction
of its own for that status, behind the workers' step commits. Measured with
``bench/server.py``'s load (8 clients, in-process workers, alternated pairs, medians): the
first sets showed the server's CPU a run going from 7.4 to 6.7 ms and 8.4 to 7.9 ms; later
sets against the same base (10 pairs x 40 runs, 6 x 60; with a claim change since reverted)
showed no difference (7.17 / 7.22, 6.94 / 6.90 ms): on the 2-core machine the gain, if
any, is within its noise. What stays is that a read begins no transaction and waits for no
writer.
"""

from __future__ import annotations

import dataclasses
import sqlite3
import threading
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

__all__ = ["LATER_LIMIT", "Rider", "SQLiteRiders"]

T = TypeVar("T")
LATER_LIMIT = 256
"""Writes ``_write_later`` keeps queued at most: the one that fills the queue runs them all in
a transaction of its own (a store nobody else writes to would otherwise keep them)."""


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
    _lease_tx: Callable[..., Any]
    _rider_error: Callable[[sqlite3.Error], Exception]
    _durable: bool
    _riders: list[Rider]
    _riders_mutex: threading.Lock
    _later: dict[Hashable, Callable[[sqlite3.Connection], Any]]
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

    def _write_later(
        self, tenant: str | None, key: Hashable, fn: Callable[[sqlite3.Connection], Any]
    ) -> None:
        """``fn(db)`` in this store's next transaction, not waited for: for a write whose
        loss costs only its being made again (nothing durable depends on it, and what it
        records is derived again the same). One queued under the same ``key`` is replaced.
        Its error is dropped (the record stays as it was, and is derived again)."""
        with self._riders_mutex:
            self._later[key] = fn
            full = len(self._later) >= LATER_LIMIT
        if full:
            self._flush_later(tenant)

    def _flush_later(self, tenant: str | None = None) -> None:
        """The writes ``_write_later`` queued, now, in a transaction of their own."""
        if self._later:
            with self._lease_tx(tenant):
                pass  # the transaction seats them (``_seat_riders``)

    def _seat_later(self, db: sqlite3.Connection) -> None:
        with self._riders_mutex:
            later, self._later = self._later, {}
        for fn in later.values():
            _in_savepoint(db, fn)  # an error is dropped: what it records is derived again

    def _seat_riders(self, db: sqlite3.Connection) -> list[Rider]:
        """Before a COMMIT: run what ``_write_later`` queued (any transaction), and the
        queued riders' statements, each under its own savepoint (a lease's NORMAL commit
        seats no rider: it would not be durable)."""
        if self._later:
            self._seat_later(db)
        if not self._durable or not self._riders:  # none queued (one queuing now waits
            return []  # for the lock, then writes in a transaction of its own if no one did)
        with self._riders_mutex:
            riders, self._riders = self._riders, []
        me = threading.get_ident()
        for rider in riders:
            rider.result, exc = _in_savepoint(db, rider.fn)
            if exc is not None:
                rider.error = self._rider_error(exc) if isinstance(exc, sqlite3.Error) else exc
            if rider.thread != me:
                self.rides += 1
        return riders

    def _land(self, riders: list[Rider], *, committed: bool) -> None:
        """After the COMMIT, or its failure (then each writes again on its own)."""
        for rider in riders:
            rider.alone = not committed
            rider.done.set()


def _in_savepoint(
    db: sqlite3.Connection, fn: Callable[[sqlite3.Connection], Any]
) -> tuple[Any, Exception | None]:
    """``fn(db)`` under a savepoint of its own: its error rolls back its statements alone."""
    db.execute("SAVEPOINT wayline_rider")
    try:
        result, error = fn(db), None
    except Exception as exc:
        db.execute("ROLLBACK TO SAVEPOINT wayline_rider")
        result, error = None, exc
    db.execute("RELEASE SAVEPOINT wayline_rider")
    return result, error
