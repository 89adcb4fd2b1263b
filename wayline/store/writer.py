"""Durability modes as commit sinks: when a step's batch becomes durable.

- ``sync``: ``submit`` returns after the commit; the next step starts on durable ground.
- ``async``: a background thread group-commits queued batches. ``submit`` blocks while
  ``max_lag_steps`` batches are unflushed or the oldest has waited ``max_lag_ms``: that
  bound, not the loop's speed, is what a hard kill can cost. (LangGraph's async mode had
  987 of 1,000 checkpoints unwritten when its last node ran: LangGraph 1.2.22, SQLite saver,
  a trivial node, measured on the 2-vCPU dev machine on 2026-11-30.)
- ``exit``: batches merge in memory and commit once, at completion, interrupt or error.

Effects never go through a sink: their records are committed at once, whatever the mode,
through the same committer (``EffectLedger``).

A sink commits through ``store.commit`` or, in a worker, through a committer shared by every
run the worker holds (``wayline.store.group.GroupCommit``), which puts the commits of runs
that are ready together in one transaction.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

from wayline.errors import WaylineError
from wayline.store.base import Store
from wayline.store.records import SETTLED_STATUSES, CommitBatch, check_durability

__all__ = ["AsyncSink", "CommitSink", "Committer", "ExitSink", "SyncSink", "make_sink"]

Committer = Callable[[str, str, int, CommitBatch], None]
"""``Store.commit``'s signature: (tenant_id, run_id, token, batch), durable on return."""

SETTLED = SETTLED_STATUSES
"""A run in one of these statuses is claimable by nobody: its commit gives the lease up."""


class CommitSink:
    def __init__(
        self,
        store: Store,
        tenant_id: str,
        run_id: str,
        token: int,
        committer: Committer | None = None,
    ) -> None:
        self.store = store
        self.tenant_id = tenant_id
        self.run_id = run_id
        self.token = token
        self.committer: Committer = committer or store.commit
        self.released = False
        """The last commit settled the run and gave its lease up in the same transaction,
        so closing the run needs no transaction (and no fsync) of its own."""

    def _commit(self, batch: CommitBatch) -> None:
        if batch.is_empty():
            return
        run = batch.run
        settles = run is not None and run.status in SETTLED
        self.committer(self.tenant_id, self.run_id, self.token, batch)
        self.released = settles

    def submit(self, batch: CommitBatch) -> None:
        raise NotImplementedError

    def commit_now(self, batch: CommitBatch) -> None:
        """Commit ``batch`` at once, whatever the mode: a new run's input step, whose row
        its commit creates (nothing is held before it)."""
        self._commit(batch)

    def flush(self) -> None:
        """Return once everything submitted is durable."""

    def close(self) -> None:
        self.flush()


class SyncSink(CommitSink):
    def submit(self, batch: CommitBatch) -> None:
        self._commit(batch)


class ExitSink(CommitSink):
    def __init__(
        self,
        store: Store,
        tenant_id: str,
        run_id: str,
        token: int,
        committer: Committer | None = None,
    ) -> None:
        super().__init__(store, tenant_id, run_id, token, committer)
        self._held = CommitBatch()

    def submit(self, batch: CommitBatch) -> None:
        self._held.merge(batch)

    def flush(self) -> None:
        held, self._held = self._held, CommitBatch()
        self._commit(held)


class AsyncSink(CommitSink):
    def __init__(
        self,
        store: Store,
        tenant_id: str,
        run_id: str,
        token: int,
        committer: Committer | None = None,
        *,
        max_lag_steps: int = 8,
        max_lag_ms: float = 100.0,
    ) -> None:
        super().__init__(store, tenant_id, run_id, token, committer)
        if max_lag_steps < 1:
            raise WaylineError("max_lag_steps must be at least 1")
        self.max_lag_steps = max_lag_steps
        self.max_lag_s = max_lag_ms / 1000
        self._queue: deque[tuple[float, CommitBatch]] = deque()
        self._inflight = 0
        self._error: BaseException | None = None
        self._closed = False
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._run, name=f"wayline-writer-{run_id}")
        self._thread.daemon = True
        self._thread.start()

    def unflushed(self) -> int:
        """Batches submitted but not yet durable: the most a hard kill can lose."""
        with self._cond:
            return len(self._queue) + self._inflight

    def submit(self, batch: CommitBatch) -> None:
        with self._cond:
            while self._error is None and self._lagging():
                self._cond.wait(timeout=self.max_lag_s or None)
            self._raise_error()
            self._queue.append((time.monotonic(), batch))
            self._cond.notify_all()

    def _lagging(self) -> bool:
        pending = len(self._queue) + self._inflight
        if pending >= self.max_lag_steps:
            return True
        return bool(self._queue) and time.monotonic() - self._queue[0][0] >= self.max_lag_s

    def flush(self) -> None:
        with self._cond:
            while self._error is None and (self._queue or self._inflight):
                self._cond.wait()
            self._raise_error()

    def close(self) -> None:
        try:
            self.flush()
        finally:
            with self._cond:
                self._closed = True
                self._cond.notify_all()
            self._thread.join()

    def _raise_error(self) -> None:
        if self._error is not None:
            raise self._error

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closed:
                    self._cond.wait()
                if not self._queue:
                    return
                merged = CommitBatch()
                while self._queue:
                    merged.merge(self._queue.popleft()[1])
                    self._inflight += 1
            try:
                self._commit(merged)
            except BaseException as exc:  # handed to the loop on its next submit or flush
                with self._cond:
                    self._error = exc
                    self._inflight = 0
                    self._cond.notify_all()
                return
            with self._cond:
                self._inflight = 0
                self._cond.notify_all()


def make_sink(
    durability: str,
    store: Store,
    tenant_id: str,
    run_id: str,
    token: int,
    *,
    max_lag_steps: int = 8,
    max_lag_ms: float = 100.0,
    committer: Committer | None = None,
) -> CommitSink:
    if durability == "sync":
        return SyncSink(store, tenant_id, run_id, token, committer)
    if durability == "async":
        return AsyncSink(
            store,
            tenant_id,
            run_id,
            token,
            committer,
            max_lag_steps=max_lag_steps,
            max_lag_ms=max_lag_ms,
        )
    if durability == "exit":
        return ExitSink(store, tenant_id, run_id, token, committer)
    check_durability(durability)
    raise AssertionError(durability)  # pragma: no cover - check_durability refused it
