"""Group commit across runs: the step commits of different runs that are ready at the same
time share one transaction, so one fsync (one WAL flush on PostgreSQL) makes all of them
durable.

A worker holding eight runs in sync mode used to pay eight fsyncs for eight steps; the disk's
one-row commit rate was the ceiling of the whole worker (measured on the 2-vCPU dev machine:
872 steps/s at concurrency 8 against 7,003 one-row fsync'd commits/s). Here the first run to
arrive commits at once (no timer: concurrency 1 pays one lock, not a wait); runs that arrive
while that transaction is in flight queue, and when it ends the first of them is woken to
commit the whole queue together, the others only when their commit is done (one wake-up a
request: every thread switch costs a worker CPU under the GIL). The leader wakes only the
first of its group, and each woken thread wakes the next: a group woken at once put all its
threads on the run queues of every core together, to fight over the GIL, and one worker at
concurrency 8 on two cores ran 5,870 steps/s that way against 6,300 woken in a chain (the
worker cell of ``bench/fleet.py``, SQLite, 3 runs each way). Each run still waits for its
own commit before its next step, so sync semantics are unchanged.

Inside the shared transaction each run's batch is fenced by its own token
(``Store.commit_many``): a run whose lease is gone or whose rows are bad gets its own error,
under a savepoint of its own, and the others commit.
"""

from __future__ import annotations

import dataclasses
import itertools
import threading
from collections.abc import Callable
from typing import Any

from wayline.store.base import Store
from wayline.store.records import CommitBatch

__all__ = ["GroupCommit", "GroupStats"]


@dataclasses.dataclass(slots=True)
class _Request:
    tenant_id: str
    run_id: str
    token: int
    batch: CommitBatch
    wake: threading.Lock | None = None
    """Held while the request waits: released once, when it is done or must lead. Made
    only for a request that queues behind a leader (one that leads at once never waits)."""
    done: bool = False
    error: BaseException | None = None
    then: _Request | None = None
    """The next of its group to wake: each committed request wakes the one after it."""


@dataclasses.dataclass(slots=True)
class GroupStats:
    """Counts, not timings: what the tests and ``bench/fleet.py`` read back."""

    commits: int = 0
    """Run commits requested (one per step in sync mode)."""
    transactions: int = 0
    """Transactions they went out in: each is one fsync of the database's log."""
    largest: int = 0
    """The most run commits one transaction carried."""

    @property
    def per_transaction(self) -> float:
        return self.commits / self.transactions if self.transactions else 0.0


class GroupCommit:
    """A commit combiner shared by every run a worker holds; ``commit`` has the signature of
    ``Store.commit`` and returns once this run's batch is durable (or raises its error)."""

    def __init__(self, store: Store, *, max_group: int = 64) -> None:
        self.store = store
        self.max_group = max_group
        """A bound on one transaction's size, so a huge queue cannot hold the write lock long."""
        self.stats = GroupStats()
        self._mutex = threading.Lock()
        self._queue: list[_Request] = []
        self._leading = False
        self._parked: list[_Request] = []
        """Commits of cooperative callers (``park``), for the next ``drain``."""

    def commit(self, tenant_id: str, run_id: str, token: int, batch: CommitBatch) -> None:
        request = _Request(tenant_id, run_id, token, batch)
        with self._mutex:
            self._queue.append(request)
            self.stats.commits += 1
            follow = self._leading
            if follow:
                wake = request.wake = threading.Lock()
                wake.acquire()
            self._leading = True
        if follow:
            wake.acquire()  # until a leader committed it, or handed it the lead
            if request.done:
                if request.then is not None:
                    _wake(request.then)
                return _outcome(request)
        group: list[_Request] = []
        try:
            with self.store.write_turn():  # what queues while it waits joins this group
                group = self._take()  # the queue, this thread's own request included
                self._commit_group(group)
        except BaseException as exc:  # taking or giving back the turn failed
            group = group or self._take()
            for r in group:
                r.error = r.error or exc
        finally:
            with self._mutex:
                self.stats.transactions += 1
                self.stats.largest = max(self.stats.largest, len(group))
                others = [r for r in group if r is not request]
                for r, after in itertools.pairwise(others):
                    r.then = after
                for r in group:
                    r.done = True
                if others:
                    _wake(others[0])  # which wakes the next, and so on
                if self._queue:
                    _wake(self._queue[0])  # the next in line leads the next group
                else:
                    self._leading = False
        return _outcome(request)

    def park(
        self, tenant_id: str, run_id: str, token: int, batch: CommitBatch, wait: Callable[[], Any]
    ) -> None:
        """``commit`` for a caller that yields instead of blocking: the commit waits for the
        next ``drain`` while ``wait`` gives the thread away, and returns (or raises its
        error) once ``wait`` returns after that drain (``wayline.worker.hub``'s slots)."""
        request = _Request(tenant_id, run_id, token, batch)
        self._parked.append(request)
        with self._mutex:
            self.stats.commits += 1
        wait()
        assert request.done, "a parked commit resumed before its drain"
        return _outcome(request)

    def drain(self) -> int:
        """Commit every parked request in one transaction (the parked callers' own thread
        calls it, between their turns); how many there were."""
        group, self._parked = self._parked, []
        if not group:
            return 0
        try:
            with self.store.write_turn():
                self._commit_group(group)
        except BaseException as exc:  # taking or giving back the turn failed
            for request in group:
                request.error = request.error or exc
        with self._mutex:
            self.stats.transactions += 1
            self.stats.largest = max(self.stats.largest, len(group))
        for request in group:
            request.done = True
        return len(group)

    def _take(self) -> list[_Request]:
        with self._mutex:
            group, self._queue = self._queue[: self.max_group], self._queue[self.max_group :]
        return group

    def queued(self) -> int:
        """Requests waiting for the next transaction (for tests that line a group up)."""
        with self._mutex:
            return len(self._queue)

    def _commit_group(self, group: list[_Request]) -> None:
        try:
            if len(group) == 1:
                r = group[0]
                try:
                    self.store.commit(r.tenant_id, r.run_id, r.token, r.batch)
                except BaseException as exc:
                    r.error = exc
            else:
                items = [(r.tenant_id, r.run_id, r.token, r.batch) for r in group]
                errors = self.store.commit_many(items)
                for r, error in zip(group, errors, strict=True):
                    r.error = error
        except BaseException as exc:  # the transaction itself failed: nothing of it committed
            for r in group:
                r.error = r.error or exc


def _wake(request: _Request) -> None:
    """Release a queued request (only one that queued behind a leader is ever woken)."""
    assert request.wake is not None
    request.wake.release()


def _outcome(request: _Request) -> None:
    if request.error is not None:
        raise request.error
