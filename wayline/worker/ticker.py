"""A worker's schedule ticker: fires the due ticks of the schedules of the graphs it serves
(``wayline.store.schedules``), then sleeps until the next one is due, or a poll interval
for schedules made meanwhile. Every worker runs one; a tick's fire is one transaction that
spends it, so several tickers fire each tick once."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence

from wayline.errors import WaylineError
from wayline.store.base import Store
from wayline.store.schedules import schedules

__all__ = ["tick_schedules"]

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
            for fired in book.fire_due(graphs, tenant_id=tenant_id):
                log.info("schedule %s fired run %s", fired.schedule_id, fired.run_id)
            due = book.next_due(graphs, tenant_id=tenant_id)
        except WaylineError as exc:  # the store is away, or a damaged schedule row
            log.error("schedules could not be fired: %s", exc)
        wait = poll_interval if due is None else min(poll_interval, due - time.time())
        stopping.wait(max(0.001, wait))
