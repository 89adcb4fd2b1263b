"""PostgreSQL's wake-ups for idle worker slots (``wayline.store.pg_listen``): one LISTEN a
store, read as notices come; a notice that found every slot busy wakes no slot later, and a
stop wakes a waiting slot at once."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

import wayline
from wayline.store.postgres import PostgresStore

T = "tenant-a"
G = ("g", "v1", "")
DEADLINE = 30.0


@pytest.fixture
def stores(pg_url: str) -> Iterator[tuple[PostgresStore, PostgresStore]]:
    worker, client = wayline.connect(pg_url), wayline.connect(pg_url)
    assert isinstance(worker, PostgresStore) and isinstance(client, PostgresStore)
    yield worker, client
    client.close()
    worker.close()


def _until(check: object, what: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.005)


def test_notices_sent_while_every_slot_was_busy_end_no_later_wait(
    stores: tuple[PostgresStore, PostgresStore],
) -> None:
    worker, client = stores
    worker.wait_for_work(0.0)  # a slot's first wait starts the store's listener
    assert worker._relay.listening.wait(DEADLINE)
    for i in range(5):  # while no slot waits: each start sends its notice
        client.enqueue(T, f"r{i}", b"", graph_name="g", graph_version="v1", durability="sync")
    _until(lambda: worker._relay.received >= 5, "the five notices reached the listener")

    claimed = [worker.claim_next(owner="w", lease_seconds=30, graphs=[G]) for _ in range(5)]
    assert all(c is not None for c in claimed)
    assert worker.claim_next(owner="w", lease_seconds=30, graphs=[G]) is None
    # The scan that found nothing began after every notice: none of them ends a wait now
    # (they once stayed on the connection, and each woke a slot for an empty claim).
    for _ in range(3):
        began = time.monotonic()
        worker.wait_for_work(0.3)
        assert time.monotonic() - began >= 0.29


def test_a_start_elsewhere_wakes_one_waiting_slot_and_a_stop_wakes_every_one(
    stores: tuple[PostgresStore, PostgresStore],
) -> None:
    worker, client = stores
    worker.wait_for_work(0.0)
    assert worker._relay.listening.wait(DEADLINE)
    woke: list[str] = []

    def slot(name: str) -> None:
        assert worker.claim_next(owner=name, lease_seconds=30, graphs=[G]) is None
        worker.wait_for_work(DEADLINE * 2)
        woke.append(name)

    slots = [threading.Thread(target=slot, args=(f"s{i}",)) for i in range(3)]
    for t in slots:
        t.start()
    _until(lambda: worker._work.waiting() == 3, "three slots waiting")
    client.enqueue(T, "r", b"", graph_name="g", graph_version="v1", durability="sync")
    _until(lambda: len(woke) == 1, "one slot woken by the start")
    assert worker._work.waiting() == 2

    worker.wake_waiting()  # a worker stopping: its idle slots go now, not at their poll
    for t in slots:
        t.join(DEADLINE)
    assert sorted(woke) == ["s0", "s1", "s2"]
