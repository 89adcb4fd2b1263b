"""Waking a run's streams when the run moves, instead of polling its row.

The store announces every transaction that moves a run (a step commit, grouped ones
included; a status change; appended stream events) with the run's tenant and id
(``wayline.store.observe.moved``). In this process that is a call from the committing
thread; from other processes on PostgreSQL it is a ``NOTIFY`` on the store's runs channel
(``PostgresStore.listen_runs``) when their store announces (``?announce=1``). A stream
waits on its ``Waiter`` (an asyncio event set from whichever thread rang) with a timer as
the fallback for commits nobody announces: another process's on SQLite, or a PostgreSQL
worker that does not announce.

Streams, ``runs/wait`` and ``join`` wait on a ``Waiter`` (in the event loop); the service's
blocking code (``multitask_strategy`` interrupt and rollback, waiting for a run to stop)
on a ``BlockingWaiter`` (a ``threading.Event``). The server's own moves that no store
transaction announces (an API run settled, a queued input dropped) ring the bell itself.

A waiter is keyed by tenant and run: a commit of tenant A's run ``x`` never wakes a stream
of tenant B's run ``x``.
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from collections.abc import Callable, Sequence

__all__ = ["Bell", "BlockingWaiter", "Waiter"]

Key = tuple[str, str]


class Waiter:
    """One stream's wake-up: ``wait`` returns True when the run moved (rung), False when
    the timer ran out. Counts both, so tests can tell what woke it."""

    def __init__(self, bell: Bell, key: Key, loop: asyncio.AbstractEventLoop) -> None:
        self.bell = bell
        self.key = key
        self.loop = loop
        self.event = asyncio.Event()
        self.pending = False
        """A wake-up is on its way to the loop (rings meanwhile need not send another)."""
        self.rung = 0
        """Waits a ring ended."""
        self.timed_out = 0
        """Waits the fallback timer ended."""

    def ring(self) -> None:
        """From any thread: wake the stream (at most one wake-up in flight)."""
        if self.pending:
            return
        self.pending = True
        try:
            self.loop.call_soon_threadsafe(self._set)
        except RuntimeError:  # the loop closed: the stream is gone
            self.pending = False

    def _set(self) -> None:
        self.pending = False
        self.event.set()

    def clear(self) -> None:
        """Before reading the run: a move from here on wakes the next ``wait``."""
        self.event.clear()

    async def wait(self, timeout: float) -> bool:
        try:
            await asyncio.wait_for(self.event.wait(), timeout)
        except TimeoutError:
            self.timed_out += 1
            return False
        self.rung += 1
        return True

    def close(self) -> None:
        self.bell.unsubscribe(self)
        with self.bell._lock:
            self.bell.counts["rung"] += self.rung
            self.bell.counts["timer"] += self.timed_out


class BlockingWaiter:
    """A waiter for a worker thread: ``wait`` blocks until the run moved (True) or the
    timer ran out (False), counted as ``Waiter``'s are."""

    def __init__(self, bell: Bell, key: Key) -> None:
        self.bell = bell
        self.key = key
        self.event = threading.Event()
        self.rung = 0
        self.timed_out = 0

    def ring(self) -> None:
        self.event.set()

    def clear(self) -> None:
        """Before reading the run: a move from here on wakes the next ``wait``."""
        self.event.clear()

    def wait(self, timeout: float) -> bool:
        if self.event.wait(max(0.0, timeout)):
            self.rung += 1
            return True
        self.timed_out += 1
        return False

    def close(self) -> None:
        self.bell.unsubscribe(self)
        with self.bell._lock:
            self.bell.counts["rung"] += self.rung
            self.bell.counts["timer"] += self.timed_out

    def __enter__(self) -> BlockingWaiter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Bell:
    """Who waits for which run, rung from any thread with the runs that moved."""

    def __init__(self) -> None:
        self._waiters: dict[Key, set[Waiter | BlockingWaiter]] = {}
        self._lock = threading.Lock()
        self.counts: Counter[str] = Counter()
        """Waits of closed waiters by what ended them: ``rung`` (the run moved), ``timer``."""
        self.stops: list[Callable[[], None]] = []
        """How to stop what rings it (listeners installed by ``create_app``)."""
        self.closing = False
        """The server is stopping: streams end at their next wake-up (``close_streams``)."""

    def subscribe(self, tenant: str, run_id: str) -> Waiter:
        """A waiter for the run, on the running event loop (call from a coroutine)."""
        waiter = Waiter(self, (tenant, run_id), asyncio.get_running_loop())
        with self._lock:
            self._waiters.setdefault(waiter.key, set()).add(waiter)
        return waiter

    def subscribe_blocking(self, tenant: str, run_id: str) -> BlockingWaiter:
        """A waiter for the run that blocks its thread (call from a worker thread)."""
        waiter = BlockingWaiter(self, (tenant, run_id))
        with self._lock:
            self._waiters.setdefault(waiter.key, set()).add(waiter)
        return waiter

    def unsubscribe(self, waiter: Waiter | BlockingWaiter) -> None:
        with self._lock:
            found = self._waiters.get(waiter.key)
            if found is not None:
                found.discard(waiter)
                if not found:
                    del self._waiters[waiter.key]

    def ring(self, runs: Sequence[Key]) -> None:
        """The runs ``runs`` (tenant, run id) moved: wake their streams."""
        if not self._waiters:
            return
        with self._lock:
            woken = [w for key in runs for w in self._waiters.get(key, ())]
        for waiter in woken:
            waiter.ring()

    def close_streams(self) -> None:
        """From any thread, as the server begins to stop: wake every waiter, and have each
        stream end (a client reconnects to its ``Location`` with ``Last-Event-ID`` and
        misses nothing) rather than hold the shutdown until its grace period runs out."""
        self.closing = True
        with self._lock:
            woken = [w for waiters in self._waiters.values() for w in waiters]
        for waiter in woken:
            waiter.ring()

    def watching(self) -> int:
        """Waiters now: streams, waits, joins (for tests and the dashboard)."""
        with self._lock:
            return sum(len(w) for w in self._waiters.values())

    def stop(self) -> None:
        for stop in self.stops:
            stop()
        self.stops.clear()
