"""Accepting a run is one write transaction: the API run's record, its thread's tags and
the run's input for a worker commit together (``Service.start_run``), so a start waits
for the store's writer once, not three times behind the workers' step commits; and the
status a read derives of a finished run is recorded without an fsync of its own."""

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


def test_a_status_read_off_the_run_is_recorded_without_an_fsync_of_its_own(
    tmp_path: Path,
) -> None:
    """Reading a finished run records its status (so later reads need not derive it) in a
    commit at ``synchronous=NORMAL``: lost to a power cut, it is derived again the same."""
    running = start(f"sqlite:///{tmp_path / 'settle.db'}")
    try:
        c = get_sync_client(url=running.url, api_key=running.keys["alice"], timeout=30.0)
        tid = c.threads.create()["thread_id"]
        run = c.runs.create(tid, "slow", input={"n": 0, "until": 1})
        store = running.store
        until(lambda: getattr(store.get_run("acme", tid), "status", None) == "done", what="done")
        levels: list[int] = []
        real = store._tx

        @contextmanager
        def counted(tenant: str | None = None) -> Iterator[Any]:
            with real(tenant) as db:
                levels.append(db.execute("PRAGMA synchronous").fetchone()[0])
                yield db

        store._tx = counted
        assert c.runs.get(tid, run["run_id"])["status"] == "success"
        assert levels == [1]  # one commit, NORMAL: no fsync of its own
        assert c.runs.get(tid, run["run_id"])["status"] == "success"
        assert levels == [1]  # recorded: the second read derives nothing and writes nothing

        with real("acme") as db:  # the record lost, as a power cut before any fsync would
            db.execute(
                "UPDATE thread_runs SET status = 'pending' WHERE run_id = ?", (run["run_id"],)
            )
        assert c.runs.get(tid, run["run_id"])["status"] == "success"  # derived again
    finally:
        running.stop()
