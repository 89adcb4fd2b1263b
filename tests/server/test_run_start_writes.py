"""Accepting a run is one write transaction: the API run's record, its thread's tags and
the run's input for a worker commit together (``Service.start_run``), so a start waits
for the store's writer once, not three times behind the workers' step commits; and the
status a read derives of a finished run is recorded by the store's next transaction."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from harness import start, until
from langgraph_sdk import get_sync_client
from pg import schema_url


def _count_request_writes(store: Any) -> list[str]:
    """Count the write transactions that request threads begin (workers=0: nothing else
    writes; counted by wrapping the real store's transaction, which still runs)."""
    seen: list[str] = []
    real = store._tx

    @contextmanager
    def counted(tenant: str | None = None) -> Iterator[Any]:
        if threading.current_thread() is not threading.main_thread():
            seen.append(threading.current_thread().name)
        with real(tenant) as db:
            yield db

    store._tx = counted
    return seen


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_run_start_is_one_transaction(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = (
        f"sqlite:///{tmp_path / 'start.db'}"
        if backend == "sqlite"
        else schema_url(request.getfixturevalue("pg_base_url"))
    )
    running = start(url, workers=0)
    try:
        c = get_sync_client(url=running.url, api_key=running.keys["alice"], timeout=30.0)
        tid = c.threads.create(metadata={"owner": "ann"})["thread_id"]
        writes = _count_request_writes(running.store)
        run = c.runs.create(tid, "slow", input={"n": 0, "until": 1})
        assert len(writes) == 1
        assert run["status"] == "pending"
        thread = c.threads.get(tid)
        assert thread["metadata"] == {
            "owner": "ann",
            "graph_id": "slow",
            "assistant_id": run["assistant_id"],
        }
        stored = running.store.get_run("acme", tid)
        assert stored is not None and stored.status == "pending"  # the input waits for a worker
    finally:
        running.stop()


def test_a_status_read_off_the_run_is_recorded_by_the_next_transaction_not_one_of_its_own(
    tmp_path: Path,
) -> None:
    """Reading a finished run records its status (so later reads need not derive it) in the
    store's next transaction, whatever begins it: the read itself begins none and waits for
    no writer. Lost (a crash before that transaction, a power cut), it is derived again."""
    running = start(f"sqlite:///{tmp_path / 'settle.db'}")
    try:
        c = get_sync_client(url=running.url, api_key=running.keys["alice"], timeout=30.0)
        tid = c.threads.create()["thread_id"]
        run = c.runs.create(tid, "slow", input={"n": 0, "until": 1})
        store = running.store

        def released() -> bool:  # the worker's last write for it (the lease's release) done
            done = store.get_run("acme", tid)
            return done is not None and done.status == "done" and done.lease_owner is None

        until(released, what="the run done and its lease released")
        began: list[str] = []
        real = store._tx

        @contextmanager
        def counted(tenant: str | None = None) -> Iterator[Any]:
            began.append(threading.current_thread().name)
            with real(tenant) as db:
                yield db

        def recorded() -> str:
            rows = store._read("SELECT status FROM thread_runs WHERE run_id = ?", (run["run_id"],))
            return str(rows[0][0])

        store._tx = counted
        assert c.runs.get(tid, run["run_id"])["status"] == "success"
        assert c.runs.get(tid, run["run_id"])["status"] == "success"  # derived again, the same
        assert [n for n in began if n.startswith("wayline-call")] == []  # the reads began none
        with store._lock:  # no transaction in flight while both are looked at
            if store._later:  # no writer's transaction carried it yet: still queued
                assert recorded() == "pending" and len(store._later) == 1
            else:  # one in flight when the reads came (begun before `counted`) carried it
                assert recorded() == "success"
        c.threads.create()  # any write: its transaction carries the queued status
        assert recorded() == "success" and not store._later
        before = len(began)
        assert c.runs.get(tid, run["run_id"])["status"] == "success"
        assert [n for n in began[before:] if n.startswith("wayline-call")] == []
        assert not store._later  # recorded: nothing derived, nothing queued

        with real("acme") as db:  # the record lost, as a power cut before any fsync would
            db.execute(
                "UPDATE thread_runs SET status = 'pending' WHERE run_id = ?", (run["run_id"],)
            )
        assert c.runs.get(tid, run["run_id"])["status"] == "success"  # derived again
    finally:
        running.stop()


def test_a_status_read_off_the_run_on_postgres_is_recorded_at_once(pg_base_url: str) -> None:
    """PostgreSQL has no transaction in flight to carry it: the read records the status
    in a lease's transaction of its own, and the row says so as soon as the read returns."""
    running = start(schema_url(pg_base_url))
    try:
        c = get_sync_client(url=running.url, api_key=running.keys["alice"], timeout=30.0)
        tid = c.threads.create()["thread_id"]
        run = c.runs.create(tid, "slow", input={"n": 0, "until": 1})
        store = running.store
        until(lambda: getattr(store.get_run("acme", tid), "status", None) == "done", what="done")
        assert c.runs.get(tid, run["run_id"])["status"] == "success"
        rows = store._read(
            "SELECT status FROM thread_runs WHERE tenant_id = %s AND run_id = %s",
            ("acme", run["run_id"]),
            "acme",
        )
        assert [r[0] for r in rows] == ["success"]
    finally:
        running.stop()
