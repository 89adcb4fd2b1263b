"""A worker's schedule ticker: fires the due ticks of the schedules of the graphs it serves
(``wayline.store.schedules``), then sleeps until the next one is due, or a poll interval
for schedules made meanwhile. Every worker runs one; a tick's fire is one transaction that
spends it, so several tickers fire each tick once. Whether anything is due is a read: a
worker with nothing due takes no write transaction (which would queue behind, and hold up,
the step commits of the runs it executes)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence

from wayline.errors import WaylineError
from wayline.store.base import Store
from wayline.store.schedules import Schedules, schedules

__all__ = ["tick_once", "tick_schedules"]

log = logging.getLogger("wayline.worker")


def tick_schedules(
    store: Store,
    graphs: Sequence[tuple[str, str]],
    *,
    tenant_id: str | None,
    stopping: threading.Event,
    poll_interval: float,
) -> None:
    """Fire due ticks until ``stopping`` is set."""
    book = schedules(store)
    if book is None:
        return
    while not stopping.is_set():
        due: float | None = None
        try:
            due = tick_once(book, graphs, tenant_id=tenant_id)
        except WaylineError as exc:  # the store is away, or a damaged schedule row
            log.error("schedules could not be fired: %s", exc)
        wait = poll_interval if due is None else min(poll_interval, due - time.time())
        stopping.wait(max(0.001, wait))


def tick_once(
    book: Schedules, graphs: Sequence[tuple[str, str]], *, tenant_id: str | None
) -> float | None:
    """Fire what is due now, if anything is (read first: no write transaction otherwise);
    returns when the next tick falls due (None: no schedule enabled)."""
    due = book.next_due(graphs, tenant_id=tenant_id)
    if due is None or due > time.time():
        return due
    for fired in book.fire_due(graphs, tenant_id=tenant_id):
        log.info("schedule %s fired run %s", fired.schedule_id, fired.run_id)
    return book.next_due(graphs, tenant_id=tenant_id)
