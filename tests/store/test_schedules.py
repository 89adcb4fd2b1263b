"""Schedules at the store, on every backend: a tick fires once (two firing processes
race for it), queues the tick's run under a derived id and moves on; a schedule whose
ticks passed while nothing ran fires once (the catch-up policy); paused, ended, deleted
and damaged schedules fire nothing."""

from __future__ import annotations

import datetime as dt
import threading
import time
from typing import Any

import pytest

import wayline
from wayline.errors import ConfigError
from wayline.store.base import Store
from wayline.store.schedules import ScheduleRecord, Schedules, next_tick, schedules

T = "tenant-s"
G = ("g", "1")


def _book(store: Store) -> Schedules:
    book = schedules(store)
    assert book is not None
    return book


def _make(book: Schedules, sid: str = "s1", **kwargs: Any) -> ScheduleRecord:
    return book.create(
        T, sid, graph_name=G[0], graph_version=G[1], inbox=b"input", cron="0 9 * * *", **kwargs
    )


def _due(store: Store, sid: str, at: float) -> None:
    """Move a schedule's next tick (a daily cron is otherwise a day away)."""
    backend: object = store
    ph = store.placeholder  # type: ignore[attr-defined]
    with backend._tx(T) as db:  # type: ignore[attr-defined]
        db.execute(
            f"UPDATE schedules SET next_at = {ph} WHERE tenant_id = {ph} AND schedule_id = {ph}",
            (at, T, sid),
        )


def test_next_tick_reads_the_cron_in_its_time_zone() -> None:
    monday = dt.datetime(2026, 3, 9, 12, 0, tzinfo=dt.UTC).timestamp()  # 08:00 in New York
    at = next_tick("0 9 * * 1-5", "America/New_York", monday)
    assert dt.datetime.fromtimestamp(at, dt.UTC) == dt.datetime(2026, 3, 9, 13, 0, tzinfo=dt.UTC)
    with pytest.raises(ConfigError, match="not a cron expression"):
        next_tick("every day", "UTC", monday)
    with pytest.raises(ConfigError, match="IANA"):
        next_tick("0 9 * * *", "Mars/Olympus", monday)


def test_a_due_tick_fires_once_and_moves_on(store: Store) -> None:
    book = _book(store)
    made = _make(book)
    assert made.next_at is not None and made.next_at > time.time()
    assert book.fire_due([G]) == []  # not due
    tick = time.time() - 1
    _due(store, "s1", tick)
    (fired,) = book.fire_due([G])
    assert fired.tick == tick and fired.run_id == made.run_for(tick)
    assert book.fire_due([G]) == []  # spent
    run = store.get_run(T, fired.run_id)
    assert run is not None and run.status == "pending" and run.inbox == b"input"
    after = book.get(T, "s1")
    assert after is not None and after.fires == 1 and after.last_run_id == fired.run_id
    assert after.next_at == fired.next_at and after.next_at is not None
    assert after.next_at > time.time()


def test_missed_ticks_fire_once(store: Store) -> None:
    book = _book(store)
    _make(book)
    _due(store, "s1", time.time() - 30 * 86400)  # a month without a worker
    assert len(book.fire_due([G])) == 1
    assert book.fire_due([G]) == []
    after = book.get(T, "s1")
    assert after is not None and after.fires == 1
    assert after.next_at is not None and after.next_at > time.time()


def test_two_firing_processes_fire_each_tick_once(store_url: str) -> None:
    stores = [wayline.connect(store_url) for _ in range(2)]
    if store_url.endswith(":memory:"):  # one in-memory database is one connection's
        stores = [stores[0], stores[0]]
    books = [_book(s) for s in stores]
    for i in range(5):
        _make(books[0], f"s{i}")
        _due(stores[0], f"s{i}", time.time() - 1)
    results: list[list[object]] = [[], []]
    barrier = threading.Barrier(2)

    def fire(k: int) -> None:
        barrier.wait()
        results[k] = list(books[k].fire_due([G]))

    threads = [threading.Thread(target=fire, args=(k,)) for k in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    fired = [f.schedule_id for r in results for f in r]  # type: ignore[attr-defined]
    assert sorted(fired) == [f"s{i}" for i in range(5)]
    assert all(books[0].get(T, f"s{i}").fires == 1 for i in range(5))  # type: ignore[union-attr]
    for s in {id(x): x for x in stores}.values():
        s.close()


def test_a_thread_schedule_hands_one_run_each_tick(store: Store) -> None:
    book = _book(store)
    _make(book, thread_id="chat-1")
    for _ in range(2):
        _due(store, "s1", time.time() - 1)
        (fired,) = book.fire_due([G])
        assert fired.run_id == "chat-1"
    assert book.get(T, "s1").fires == 2  # type: ignore[union-attr]


def test_paused_ended_and_deleted_schedules_fire_nothing(store: Store) -> None:
    book = _book(store)
    _make(book, "paused")
    _make(book, "ended", end_at=time.time() + 1)
    _make(book, "gone")
    for sid in ("paused", "ended", "gone"):
        _due(store, sid, time.time() - 1)
    book.update(T, "paused", enabled=False)
    assert book.delete(T, "gone") and not book.delete(T, "gone")
    (fired,) = book.fire_due([G])  # the ended one fires its last tick, then stops
    assert fired.schedule_id == "ended" and fired.next_at is None
    ended = book.get(T, "ended")
    assert ended is not None and not ended.enabled and ended.next_at is None
    again = book.update(T, "paused", enabled=True)
    assert again is not None and again.next_at is not None and again.next_at > time.time()
    assert book.fire_due([G]) == []
    assert [s.schedule_id for s in book.search(T)] == ["paused", "ended"]


def test_another_tenant_sees_no_schedule(store: Store) -> None:
    book = _book(store)
    _make(book)
    assert book.get("other", "s1") is None and book.search("other") == []
    assert book.fire_due([G], tenant_id="other") == []


def test_a_fired_run_carries_the_schedules_graph_identity(store: Store) -> None:
    """A tick's run records the fingerprint (and shape, engine) of the graph the schedule
    was made for, so a worker serving another shape of ``g@1`` does not claim it."""
    book = _book(store)
    made = _make(book, fingerprint="fp-made", shape='{"nodes":{}}', engine="langgraph")
    assert (made.fingerprint, made.shape, made.engine) == ("fp-made", '{"nodes":{}}', "langgraph")
    _due(store, "s1", time.time() - 1)
    (fired,) = book.fire_due([G])
    run = store.get_run(T, fired.run_id)
    assert run is not None
    assert (run.fingerprint, run.shape, run.engine) == ("fp-made", '{"nodes":{}}', "langgraph")
    other = [(*G, "fp-other"), (*G, "")]  # another shape, and runs recorded before 0013
    assert store.claim_next(owner="w", lease_seconds=5, graphs=other, tenant_id=T) is None
    claimed = store.claim_next(owner="w", lease_seconds=5, graphs=[(*G, "fp-made")], tenant_id=T)
    assert claimed is not None and claimed[0].run_id == fired.run_id


def test_a_ticker_with_nothing_due_takes_no_write_transaction(tmp_path: Any) -> None:
    """The worker's ticker reads whether a tick is due before it writes: a write
    transaction a poll would queue behind, and hold up, the step commits of the runs."""
    from wayline.worker.ticker import tick_once

    store = wayline.connect(f"sqlite:///{tmp_path / 'ticks.db'}")
    book = _book(store)
    made = _make(book)
    begins: list[str] = []
    store._db.set_trace_callback(  # type: ignore[attr-defined]
        lambda sql: begins.append(sql) if sql.startswith("BEGIN") else None
    )
    for _ in range(50):
        assert tick_once(book, [G], tenant_id=None) == made.next_at
    assert begins == []
    _due(store, "s1", time.time() - 1)
    begins.clear()
    after = tick_once(book, [G], tenant_id=None)
    assert after is not None and after > time.time()  # fired, and moved to the next tick
    assert len(begins) == 2  # the fire, and its look for another due tick of the graph
    store.close()
