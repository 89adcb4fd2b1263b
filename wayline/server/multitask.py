"""A thread's API runs in line: what ``multitask_strategy`` needs to know about them.

A thread is one wayline run; each API run is an input handed to it. With ``enqueue`` an
input given while the thread is busy waits in the store's queue (``QueueContract``) and
the claim query moves it into the thread's inbox when the run before it stops, so the API
runs of a thread start one after the other in the order they were created. ``Line`` reads
a thread's API runs with that queue: which still wait (``pending``), where each started
(recorded on its row as soon as it is seen: ``start_step`` is -2 until then), which one
holds the thread now, and how the run before a queued one ended (the queue entry says
what status the thread's run had when the next input moved in).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from wayline.server.http import ApiError
from wayline.store.base import Store
from wayline.store.records import QueuedInput
from wayline.store.server_tables import ServerTables, ThreadRunRecord, ThreadRunStatus

__all__ = ["NOT_STARTED", "STRATEGIES", "Line", "ended_as", "line_of", "strategy"]

NOT_STARTED = -2
"""``start_step`` of a queued API run whose input has not reached the thread yet."""
STRATEGIES = ("reject", "interrupt", "enqueue", "rollback")
LINE_READ = 200
"""API runs of a thread read to place queued ones (a queue longer than this is refused)."""
_ENDED: dict[str, ThreadRunStatus] = {
    "done": "success",
    "interrupted": "success",  # paused on interrupt(): the run ended, its thread waits
    "failed": "error",
    "cancelled": "interrupted",
}
"""The API status of a run, from its thread's run status when the next input moved in."""


def strategy(body: dict[str, Any]) -> str:
    given = body.get("multitask_strategy") or "reject"
    if given not in STRATEGIES:
        raise ApiError(
            422, f"multitask_strategy must be one of {', '.join(STRATEGIES)}, not {given!r}"
        )
    return str(given)


def ended_as(entry: QueuedInput | None) -> ThreadRunStatus:
    """How the API run before a queued one ended (success when nobody queued behind it)."""
    if entry is None or entry.prior_status is None:
        return "success"
    return _ENDED.get(entry.prior_status, "success")


@dataclasses.dataclass(frozen=True)
class Line:
    """A thread's API runs, oldest first, and its queue entries by label (API run id)."""

    runs: tuple[ThreadRunRecord, ...]
    entries: dict[str, QueuedInput]

    @property
    def waiting(self) -> frozenset[str]:
        return frozenset(k for k, e in self.entries.items() if e.promoted_at is None)

    def fresh(self, rec: ThreadRunRecord) -> ThreadRunRecord:
        """``rec`` as this line read it (its start step recorded)."""
        return next((r for r in self.runs if r.run_id == rec.run_id), rec)

    def latest_started(self) -> ThreadRunRecord | None:
        """The API run that holds the thread now, or held it last."""
        started = [r for r in self.runs if r.start_step != NOT_STARTED]
        return started[-1] if started else None

    def successor(self, rec: ThreadRunRecord) -> ThreadRunRecord | None:
        """The API run that started after ``rec`` on the thread."""
        later = [
            r for r in self.runs if r.created_at > rec.created_at and r.start_step != NOT_STARTED
        ]
        return later[0] if later else None


def line_of(store: Store, tables: ServerTables, tenant: str, thread_id: str) -> Line:
    """The thread's line. Without a queue it is its latest API run alone (one read more
    than before queues existed: the queue's, by the thread's key).

    The latest run is read before the queue: a queued run's record and its queue entry
    commit together, so a record seen here has its entry seen next. Read the other way, a
    cron tick committing between the two reads left a line of the tick alone, and the
    run still holding the thread was read, and recorded, as ended ``success``
    (tests/server/test_multitask_reads.py)."""
    latest = tables.latest_run(tenant, thread_id)
    entries = {e.label: e for e in store.queued_inputs(tenant, thread_id)}
    if not entries:
        return Line(() if latest is None else (latest,), {})
    runs = list(reversed(tables.list_runs(tenant, thread_id, limit=LINE_READ)))
    for i, rec in enumerate(runs):
        entry = entries.get(rec.run_id)
        if rec.start_step == NOT_STARTED and entry is not None and entry.from_step is not None:
            tables.set_start_step(tenant, rec.run_id, entry.from_step)
            runs[i] = dataclasses.replace(rec, start_step=entry.from_step)
    return Line(tuple(runs), entries)
