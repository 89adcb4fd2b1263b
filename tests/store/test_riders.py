"""Small writes ride on the next durable transaction (``wayline.store.sqlite_riders``):
one COMMIT for both, the rider's error its own, never on a lease's NORMAL commit, and a
holder that fails sends its riders to write on their own; writes nobody waits for
(``_write_later``) ride on any transaction, bounded in number."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest

from wayline.errors import StoreError
from wayline.store.server_tables import ServerTables
from wayline.store.sqlite import SQLiteStore
from wayline.store.sqlite_riders import LATER_LIMIT


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    s = SQLiteStore(str(tmp_path / "r.db"))
    yield s
    s.close()


def _holding(
    store: SQLiteStore, open_tx: Callable[[], AbstractContextManager[Any]], then: Callable[[], None]
) -> tuple[threading.Event, threading.Thread, list[BaseException]]:
    """A thread inside a transaction until the returned event is set; ``then`` runs in it."""
    inside, release = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def hold() -> None:
        try:
            with open_tx():
                inside.set()
                release.wait(30)
                then()
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=hold)
    thread.start()
    assert inside.wait(10)
    return release, thread, errors


def _rider(fn: Callable[[], Any]) -> tuple[threading.Thread, list[Any]]:
    out: list[Any] = []

    def run() -> None:
        try:
            out.append(fn())
        except BaseException as exc:
            out.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, out


def _queued(store: SQLiteStore, n: int) -> None:
    deadline = time.monotonic() + 10
    while len(store._riders) < n:
        assert time.monotonic() < deadline, "the rider never queued"
        time.sleep(0.005)


def _threads(store: SQLiteStore) -> set[str]:
    return {r[0] for r in store._read("SELECT thread_id FROM threads", ())}


def test_a_write_rides_the_open_transaction_to_its_commit(store: SQLiteStore) -> None:
    tables = ServerTables(store)
    begun: list[str] = []
    real = store._tx

    def counted(tenant: str | None = None) -> AbstractContextManager[Any]:
        begun.append(threading.current_thread().name)
        return real(tenant)

    store._tx = counted  # type: ignore[method-assign]
    release, holder, errors = _holding(store, lambda: store._tx("acme"), lambda: None)
    rider, out = _rider(lambda: tables.insert_thread("acme", "t1", {}))
    _queued(store, 1)
    assert _threads(store) == set()  # not before the holder's COMMIT
    release.set()
    holder.join(10)
    rider.join(10)
    assert out == [True] and errors == []
    assert _threads(store) == {"t1"}
    assert store.rides == 1
    assert len(begun) == 1  # one transaction for both: the rider began none of its own


def test_a_riders_failure_is_its_own_and_the_holder_commits(store: SQLiteStore) -> None:
    tables = ServerTables(store)
    tables.insert_thread("acme", "t0", {})
    duplicate = "INSERT INTO threads (tenant_id, thread_id, metadata, created_at, updated_at)"

    def insert_again(db: Any) -> None:
        db.execute(duplicate + " VALUES ('acme', 't0', '{}', 0, 0)")

    release, holder, errors = _holding(store, lambda: store._tx("acme"), lambda: None)
    rider, out = _rider(lambda: store._ride("acme", insert_again))
    ok, ok_out = _rider(lambda: tables.insert_thread("acme", "t2", {}))
    _queued(store, 2)
    release.set()
    for t in (holder, rider, ok):
        t.join(10)
    assert errors == []
    assert isinstance(out[0], StoreError) and "UNIQUE" in str(out[0])
    assert ok_out == [True]
    assert _threads(store) == {"t0", "t2"}  # the other rider and the holder committed


def test_no_write_rides_a_lease_transaction(store: SQLiteStore) -> None:
    """A lease's commit is NORMAL (no fsync): a rider there would not be durable."""
    tables = ServerTables(store)
    release, holder, errors = _holding(store, lambda: store._lease_tx("acme"), lambda: None)
    rider, out = _rider(lambda: tables.insert_thread("acme", "t1", {}))
    _queued(store, 1)  # queued, waiting for the writer's lock
    release.set()
    holder.join(10)
    rider.join(10)
    assert out == [True] and errors == []
    assert store.rides == 0
    assert _threads(store) == {"t1"}


def test_a_holder_that_fails_sends_its_riders_to_write_alone(store: SQLiteStore) -> None:
    tables = ServerTables(store)

    def fail() -> None:
        raise RuntimeError("the holder's own write failed")

    release, holder, errors = _holding(store, lambda: store._tx("acme"), fail)
    rider, out = _rider(lambda: tables.insert_thread("acme", "t1", {}))
    _queued(store, 1)
    release.set()
    holder.join(10)
    rider.join(10)
    assert [str(e) for e in errors] == ["the holder's own write failed"]
    assert out == [True]  # written in its own transaction after the holder rolled back
    assert store.rides == 0
    assert _threads(store) == {"t1"}


def test_queued_later_writes_are_bounded_and_flushed_on_close(tmp_path: Path) -> None:
    """``_write_later`` keeps at most ``LATER_LIMIT`` writes (the one that fills the queue
    writes them all), a failing one is dropped alone, and closing the store writes the rest."""
    path = tmp_path / "later.db"
    store = SQLiteStore(str(path))
    with store._tx() as db:
        db.execute("CREATE TABLE notes (k INTEGER PRIMARY KEY)")

    def note(k: int) -> Any:
        return lambda db: db.execute("INSERT INTO notes VALUES (?)", (k,))

    def count() -> int:
        return int(store._read("SELECT count(*) FROM notes", ())[0][0])

    store._write_later(None, "bad", lambda db: db.execute("INSERT INTO no_such_table VALUES (1)"))
    for k in range(LATER_LIMIT - 2):
        store._write_later(None, k, note(k))
    store._write_later(None, 0, note(0))  # the same key replaces: still LATER_LIMIT - 1 queued
    assert count() == 0 and len(store._later) == LATER_LIMIT - 1
    store._write_later(None, "last", note(10_000))  # fills it: all written, the bad one dropped
    assert count() == LATER_LIMIT - 1 and not store._later
    store._write_later(None, "closing", note(20_000))
    store.close()
    reopened = SQLiteStore(str(path))
    try:
        assert int(reopened._read("SELECT count(*) FROM notes", ())[0][0]) == LATER_LIMIT
    finally:
        reopened.close()
