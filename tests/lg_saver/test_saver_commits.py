"""One commit per step under LangGraph's own loop: a task's pending writes ride in the
transaction of the checkpoint that follows them (``wayline.langgraph.batching``), counted
through a wrapper on the store and SQLite's statement trace, never timed. A linger of 60 s
makes the counts independent of the machine's load: a ``put_writes`` no ``put`` joined
would hold the run for a minute and show up as a batch of its own."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from langchain_core.runnables import RunnableConfig
from test_saver_storage import growing, item

import wayline
from wayline.errors import LeaseLost
from wayline.instrument import byte_report
from wayline.langgraph import WaylineSaver
from wayline.langgraph.batching import SKIP_AFTER_TIMEOUT, TIMEOUTS_BEFORE_SKIP, StepBatcher
from wayline.langgraph.fence import FENCE_KEY, RunFence
from wayline.store import lg_sql
from wayline.store.base import Store
from wayline.store.lg_records import LgOp, LgPut, LgPutWrites

STEPS = 40
LONG = 60.0


def cfg(thread: str = "t") -> RunnableConfig:
    return {"configurable": {"thread_id": thread}, "recursion_limit": 1_000}


class Batches:
    """The store, recording each ``lg_write_batch`` (one transaction) and its operations."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.batches: list[list[str]] = []

    def lg_write_batch(self, tenant_id: str, thread_id: str, ops: Sequence[LgOp]) -> None:
        self.store.lg_write_batch(tenant_id, thread_id, ops)
        self.batches.append(["put" if isinstance(op, LgPut) else "writes" for op in ops])

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


def test_each_step_is_one_transaction_with_its_task_writes(store: Store) -> None:
    counted = Batches(store)
    saver = WaylineSaver(cast(Store, counted), writes_linger=LONG)
    out = growing(saver, STEPS).invoke({"log": [], "n": 0}, cfg(), durability="sync")
    assert out["log"] == [item(i) for i in range(STEPS)]
    checkpoints = list(saver.list(cfg()))
    assert len(checkpoints) == STEPS + 2  # the input's, then one a step
    # one transaction a checkpoint; each step's task writes in its checkpoint's
    assert len(counted.batches) == len(checkpoints)
    assert all(b.count("put") == 1 for b in counted.batches)
    assert sum(b.count("writes") for b in counted.batches) == STEPS + 1  # input's, tasks'
    # what a fresh process reads is what ran, pending writes included
    fresh = WaylineSaver(store)
    latest = fresh.get_tuple(cfg())
    assert latest is not None and latest.checkpoint["channel_values"]["log"] == out["log"]
    mid = checkpoints[STEPS // 2]
    found = fresh.get_tuple(mid.config)
    assert found is not None
    assert sorted(found.pending_writes or []) == sorted(mid.pending_writes or [])
    assert any(channel == "log" for _, channel, _ in found.pending_writes or [])


def test_sqlite_commits_once_a_step_in_a_bounded_number_of_statements(tmp_path: Path) -> None:
    store = wayline.connect(f"sqlite:///{tmp_path / 'lg.db'}")
    statements: Counter[str] = Counter()
    db = store._db  # type: ignore[attr-defined]  # the SQLite store's one write connection
    db.set_trace_callback(lambda sql: statements.update([sql.split(None, 1)[0].upper()]))
    saver = WaylineSaver(store, writes_linger=LONG)
    growing(saver, STEPS).invoke({"log": [], "n": 0}, cfg(), durability="sync")
    db.set_trace_callback(None)
    checkpoints = STEPS + 2
    assert statements["COMMIT"] == checkpoints  # one fsync a step at synchronous=FULL
    assert statements["BEGIN"] == checkpoints
    # a step: the run row, the checkpoint, one channel version (the list's: the counter and
    # LangGraph's routing channel ride in the checkpoint row), three task writes and a
    # meter row for each of those five rows (SQLite traces executemany row by row)
    per_step = sum(statements.values()) / checkpoints
    assert per_step <= 2 + 1 + 1 + 1 + 3 + 5, statements
    store.close()


def test_writes_no_checkpoint_follows_commit_after_the_linger(store: Store) -> None:
    saver = WaylineSaver(store, writes_linger=0.05)
    growing(saver, 2).invoke({"log": [], "n": 0}, cfg(), durability="sync")
    latest = saver.get_tuple(cfg())
    assert latest is not None
    saver.put_writes(latest.config, [("log", ["late"])], "task-1")  # returns once durable
    found = WaylineSaver(store).get_tuple(latest.config)
    assert found is not None
    assert ("task-1", "log", ["late"]) in (found.pending_writes or [])
    # the thread's next writes no longer wait: they commit at once, alone
    counted = Batches(store)
    after = WaylineSaver(cast(Store, counted), writes_linger=LONG)
    after._batcher._skip[("default", "t")] = 1
    after.put_writes(latest.config, [("log", ["later"])], "task-2")
    assert counted.batches == [["writes"]]


def test_a_stale_fence_fails_the_batch_and_every_call_in_it_writes_nothing(
    store: Store,
) -> None:
    saver = WaylineSaver(store, writes_linger=LONG)
    growing(saver, 1).invoke({"log": [], "n": 0}, cfg(), durability="sync")
    latest = saver.get_tuple(cfg())
    assert latest is not None
    stale = RunFence(token=99, owner="gone", take_inbox=False)
    fenced: RunnableConfig = {"configurable": {**latest.config["configurable"], FENCE_KEY: stale}}
    errors: list[BaseException] = []

    def write() -> None:
        try:
            saver.put_writes(fenced, [("log", ["fenced"])], "task-f")
        except BaseException as exc:  # LeaseLost is a BaseException (a control signal)
            errors.append(exc)

    writer = threading.Thread(target=write)
    writer.start()  # lingers for the put of its thread
    deadline = time.monotonic() + LONG
    while ("default", "t") not in saver._batcher._queues:
        assert time.monotonic() < deadline, "the writes never queued"
        time.sleep(0.001)
    with pytest.raises(LeaseLost):  # joins the lingering writes: the batch fails
        saver.put(fenced, latest.checkpoint, latest.metadata, {})
    writer.join(LONG)
    assert not writer.is_alive()
    assert len(errors) == 1 and isinstance(errors[0], LeaseLost)  # retried alone: stale too
    found = WaylineSaver(store).get_tuple(latest.config)
    assert found is not None
    assert all(task != "task-f" for task, _, _ in found.pending_writes or [])


def test_async_writes_commit_at_once_without_holding_the_shared_executor(store: Store) -> None:
    saver = WaylineSaver(store, writes_linger=LONG)
    growing(saver, 1).invoke({"log": [], "n": 0}, cfg(), durability="sync")
    latest = saver.get_tuple(cfg())
    assert latest is not None
    counted = Batches(store)
    later = WaylineSaver(cast(Store, counted), writes_linger=LONG)
    asyncio.run(later.aput_writes(latest.config, [("log", ["async"])], "task-a"))
    assert counted.batches == [["writes"]]  # alone, without waiting for an aput
    found = WaylineSaver(store).get_tuple(latest.config)
    assert found is not None and ("task-a", "log", ["async"]) in (found.pending_writes or [])


def test_one_linger_that_ran_out_does_not_stop_batching_three_in_a_row_do() -> None:
    batches: list[int] = []
    batcher = StepBatcher(lambda tenant, thread, ops: batches.append(len(ops)), linger=0.001)
    key = ("default", "t")
    op = LgPutWrites([], False)
    batcher.submit(key, op, linger=True)  # nobody joins: it commits alone, once it ran out
    assert batches == [1] and key not in batcher._skip
    batcher.linger = LONG  # the next writes still linger, and the put joins them
    writer = threading.Thread(target=batcher.submit, args=(key, op), kwargs={"linger": True})
    writer.start()
    deadline = time.monotonic() + LONG
    while key not in batcher._queues:
        assert time.monotonic() < deadline, "the writes never queued"
        time.sleep(0.001)
    batcher.submit(key, op, linger=False)
    writer.join(LONG)
    assert batches == [1, 2]
    batcher.linger = 0.001  # a graph whose put waits for its writes: every linger runs out
    for _ in range(TIMEOUTS_BEFORE_SKIP):
        batcher.submit(key, op, linger=True)
    assert batcher._skip[key] == SKIP_AFTER_TIMEOUT  # its next writes commit at once
    batcher.linger = LONG
    batcher.submit(key, op, linger=True)  # would hold a minute if it lingered
    assert batches == [1, 2, 1, 1, 1, 1]


def test_the_thread_row_moves_at_most_once_a_second(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A step that finds the run row updated within the second leaves it (its page) alone."""
    clock = [1_000.0]
    monkeypatch.setattr(lg_sql, "time", SimpleNamespace(time=lambda: clock[0]))
    saver = WaylineSaver(store, writes_linger=0)  # writes alone commit at once
    growing(saver, 1).invoke({"log": [], "n": 0}, cfg(), durability="sync")
    latest = saver.get_tuple(cfg())
    assert latest is not None
    run = store.get_run("default", "t")
    assert run is not None and run.updated_at == 1_000.0
    clock[0] = 1_000.5
    saver.put_writes(latest.config, [("log", ["a"])], "task-1")
    run = store.get_run("default", "t")
    assert run is not None and run.updated_at == 1_000.0  # not rewritten
    clock[0] = 1_001.5
    saver.put_writes(latest.config, [("log", ["b"])], "task-2")
    run = store.get_run("default", "t")
    assert run is not None and run.updated_at == 1_001.5


def test_postgres_sends_a_steps_statements_in_its_pipeline_without_waiting_for_row_counts(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each version and write meters itself in its own statement (``WITH ... RETURNING``):
    nothing of a step's transaction runs outside its one pipeline (one round trip)."""
    from wayline.store.pg_statements import PgExecutor

    outside: Counter[str] = Counter()
    inside: Counter[str] = Counter()
    plain = PgExecutor.execute

    def execute(self: Any, query: str, params: Sequence[Any] = ()) -> Any:
        counted = inside if self.conn._pipeline is not None else outside
        counted.update([" ".join(query.split()[:3])])
        return plain(self, query, params)

    def executemany(self: Any, query: str, rows: Sequence[Sequence[Any]]) -> Any:
        outside.update([" ".join(query.split()[:3])])  # a wait for the rows' results
        return many(self, query, rows)

    many = PgExecutor.executemany
    store = wayline.connect(pg_url)
    saver = WaylineSaver(store, writes_linger=LONG)
    monkeypatch.setattr(PgExecutor, "execute", execute)
    monkeypatch.setattr(PgExecutor, "executemany", executemany)
    out = growing(saver, STEPS).invoke({"log": [], "n": 0}, cfg(), durability="sync")
    monkeypatch.undo()
    assert out["log"] == [item(i) for i in range(STEPS)]
    assert not outside, outside
    assert inside["WITH stored AS"] >= 4 * STEPS  # a version and three writes a step
    report = byte_report(store, "default", "t")  # metered once each, as on SQLite
    assert report.by_channel()[("lg_writes", "log")] > STEPS * 500
    store.close()
