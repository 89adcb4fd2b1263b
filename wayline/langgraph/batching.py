"""One commit per LangGraph step: a task's pending writes wait briefly for the checkpoint
that follows them and commit in its transaction.

LangGraph's loop submits ``put_writes`` (a task's writes against checkpoint N-1) to a
background thread as soon as the task finishes, then, after applying the writes, submits
``put`` (checkpoint N); with ``durability="sync"`` it waits only for ``put``. Committed
apart, a step is two transactions: two fsyncs on SQLite at ``synchronous=FULL`` (~0.27 ms
each on the 2-vCPU dev machine, 3,600-3,800 one-row commits/s), and the second waits for
the first's write lock.

So a ``put_writes`` of regular writes lingers (``linger`` seconds, 2 ms by default) for a
``put`` of the same thread, and whichever call commits takes every operation queued for the
thread into one transaction (``Store.lg_write_batch``). Durability is unchanged: no call
returns before its rows are committed, so a write LangGraph's loop waits on is durable
when the wait ends, and a task's writes are durable at most ``linger`` later than a commit
of their own would make them (a peer that finished is still kept when a slower peer fails
or the process dies after that).

Only the sync ``put_writes`` lingers (LangGraph's ``invoke`` and ``stream`` loops): the
async methods run in the event loop's shared executor, whose few threads lingering writes of
concurrent runs could all hold while the ``aput`` they wait for queues behind them.

When no ``put`` follows (a task's special writes: an error, an interrupt; ``update_state``;
a graph whose ``put`` waits for its writes first, as LangGraph does for ``DeltaChannel``
writes), the linger runs out and the writes commit alone. A thread whose linger ran out
``TIMEOUTS_BEFORE_SKIP`` times in a row (no ``put`` joined in between) commits its next
``SKIP_AFTER_TIMEOUT`` task writes at once, so such a graph pays the linger a few times in
that many steps; one late ``put`` (the process paused, a busy machine) does not turn
batching off, which cost every step after it a second commit. A batch that fails (a stale
fence, a store error) is retried one operation a transaction, so each caller gets its own
operation's outcome.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence

from wayline.store.lg_records import LgOp

__all__ = ["SKIP_AFTER_TIMEOUT", "TIMEOUTS_BEFORE_SKIP", "StepBatcher"]

SKIP_AFTER_TIMEOUT = 64
TIMEOUTS_BEFORE_SKIP = 3
_MAX_KEYS = 1024

Key = tuple[str, str]
"""(tenant, thread)"""


class _Ticket:
    __slots__ = ("done", "error", "op")

    def __init__(self, op: LgOp) -> None:
        self.op = op
        self.done = False
        self.error: BaseException | None = None


class _Queue:
    __slots__ = ("busy", "now", "tickets")

    def __init__(self) -> None:
        self.tickets: list[_Ticket] = []
        self.busy = False
        """A caller is committing this thread's batch (others queue for the next one)."""
        self.now = False
        """A caller that does not linger is waiting: commit as soon as the thread is free."""


class StepBatcher:
    """Commits a thread's operations, grouping those that arrive together (see module)."""

    def __init__(
        self, commit: Callable[[str, str, Sequence[LgOp]], None], *, linger: float = 0.002
    ) -> None:
        self._commit = commit
        self.linger = linger
        self._cond = threading.Condition()
        self._queues: dict[Key, _Queue] = {}
        self._skip: OrderedDict[Key, int] = OrderedDict()
        self._timeouts: OrderedDict[Key, int] = OrderedDict()
        """Lingers in a row that ran out with no ``put`` joining, per thread."""
        self.batches = 0
        """Transactions committed (for the count tests: one per step under LangGraph's loop)."""

    def submit(self, key: Key, op: LgOp, *, linger: bool) -> None:
        """Commit ``op`` (with whatever else of the thread is queued); returns once it is
        committed, raises its error otherwise."""
        ticket = _Ticket(op)
        with self._cond:
            if linger and self.linger > 0 and self._skip.get(key):
                self._skip[key] -= 1
                linger = False
            if not linger or self.linger <= 0:
                linger = False
            q = self._queues.get(key)
            if q is None:
                q = self._queues[key] = _Queue()
            elif not linger and q.tickets:  # a put joins lingering writes: batching works
                self._timeouts.pop(key, None)
            q.tickets.append(ticket)
            if not linger:
                q.now = True
                self._cond.notify_all()
            deadline = time.monotonic() + self.linger if linger else 0.0
            while not ticket.done:
                left = deadline - time.monotonic()
                if not q.busy and (q.now or left <= 0):
                    if not q.now:  # nobody joined: this thread's writes stop lingering
                        self._note_timeout(key)
                    self._run(key, q)
                elif q.busy or q.now:
                    self._cond.wait()
                else:
                    self._cond.wait(left)
        if ticket.error is not None:
            raise ticket.error

    def _run(self, key: Key, q: _Queue) -> None:
        """Commit every queued ticket of ``q`` (called and returning under the lock)."""
        batch, q.tickets, q.now, q.busy = q.tickets, [], False, True
        self._cond.release()
        try:
            try:
                self._commit(key[0], key[1], [t.op for t in batch])
                self.batches += 1
            except BaseException as exc:
                if len(batch) == 1:
                    batch[0].error = exc
                else:
                    for t in batch:  # each operation's own outcome
                        try:
                            self._commit(key[0], key[1], [t.op])
                            self.batches += 1
                        except BaseException as one:
                            t.error = one
        finally:
            self._cond.acquire()
            q.busy = False
            for t in batch:
                t.done = True
            if not q.tickets and self._queues.get(key) is q:
                del self._queues[key]
            self._cond.notify_all()

    def _note_timeout(self, key: Key) -> None:
        runs = self._timeouts.pop(key, 0) + 1
        if runs < TIMEOUTS_BEFORE_SKIP:
            self._timeouts[key] = runs
            while len(self._timeouts) > _MAX_KEYS:
                self._timeouts.popitem(last=False)
            return
        self._skip[key] = SKIP_AFTER_TIMEOUT
        self._skip.move_to_end(key)
        while len(self._skip) > _MAX_KEYS:
            self._skip.popitem(last=False)
