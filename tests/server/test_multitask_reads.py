"""A thread's line read while a queued run commits (``wayline.server.multitask.line_of``):
the run that holds the thread stays the latest started one.

A cron tick's (or an ``enqueue`` run's) API record and its queue entry commit in one
transaction. ``line_of`` once read the queue before the runs: a tick committing between the
two reads left a line of the tick alone, and the run still holding the thread was read,
and recorded, as ended ``success`` (seen once in the full suite, under load, in
test_crons.py's enqueue test). Here the commit is placed between the two reads exactly.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, TypedDict

import wayline
from wayline import END, START, StateGraph
from wayline.client import Wayline
from wayline.server.multitask import NOT_STARTED, line_of
from wayline.store.server_tables import ServerTables, ThreadRunRecord
from wayline.store.sqlite import SQLiteStore


class N(TypedDict):
    n: int


def _record(run_id: str, start_step: int, at: float) -> ThreadRunRecord:
    return ThreadRunRecord("default", run_id, "t", "slow", "pending", start_step, {}, {}, at, at)


def test_a_queued_run_committing_between_the_reads_leaves_the_holder_latest(
    tmp_path: Path,
) -> None:
    store = wayline.connect(f"sqlite:///{tmp_path / 'line.db'}")
    assert isinstance(store, SQLiteStore)
    g = StateGraph(N, name="slow")
    g.add_node("tick", lambda s: {"n": s["n"] + 1})
    g.add_edge(START, "tick")
    g.add_edge("tick", END)
    Wayline(store).start(g.compile(store), {"n": 0}, run_id="t")  # the thread's run row
    tables = ServerTables(store)
    tables.insert_thread("default", "t", {})
    now = time.time()
    tables.insert_run(_record("holder", 0, now))  # started at step 0: it holds the thread

    real = store.queued_inputs
    fired: list[str] = []

    def queue_then_tick(tenant_id: str, run_id: str) -> list[Any]:
        seen = real(tenant_id, run_id)
        if not fired:  # the tick commits right after this read: record and entry together
            fired.append("tick")
            tables.insert_run(_record("tick", NOT_STARTED, now + 1), then=queue)
        return seen

    def queue(db: Any) -> None:
        store.queue_in(db, "default", "t", b"\x80", label="tick")

    store.queued_inputs = queue_then_tick  # type: ignore[method-assign]
    line = line_of(store, tables, "default", "t")
    assert fired == ["tick"]
    latest = line.latest_started()
    assert latest is not None and latest.run_id == "holder"
    store.queued_inputs = real  # type: ignore[method-assign]
    after = line_of(store, tables, "default", "t")  # and read whole, after the commit
    assert [r.run_id for r in after.runs] == ["holder", "tick"]
    assert "tick" in after.waiting
    started = after.latest_started()
    assert started is not None and started.run_id == "holder"
    store.close()
