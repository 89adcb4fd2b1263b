"""What the server answers without work it need not do. On the event loop, without a hop to
a thread (``wayline.server.http.call``): an ended run's record on SQLite (the SDK asks for
it after every stream), and a key looked up less than ``key_cache_seconds`` ago. Without
reading back: a thread it just created. Counted by wrapping the real calls, which still
run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from harness import as_dict, raw_stream, start, until
from langgraph_sdk import get_sync_client

from wayline.server import api, app, http


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    hops: list[str] = []
    real = http.call

    async def counted(fn: Any, *args: Any, **kwargs: Any) -> Any:
        hops.append(getattr(fn, "__name__", repr(fn)))
        return await real(fn, *args, **kwargs)

    monkeypatch.setattr(api, "call", counted)
    monkeypatch.setattr(app, "call", counted)
    return hops


def test_an_ended_runs_record_is_read_on_the_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    running = start(f"sqlite:///{tmp_path / 'ended.db'}", key_cache_seconds=60.0)
    try:
        c = get_sync_client(url=running.url, api_key=running.keys["alice"])
        tid = c.threads.create()["thread_id"]
        held = c.runs.create(tid, "slow", input={"n": 0, "until": 10_000})
        done_tid = c.threads.create()["thread_id"]
        done = c.runs.wait(done_tid, "slow", input={"n": 0, "until": 2})
        assert as_dict(done)["n"] == 2
        ended_id = c.runs.list(done_tid)[0]["run_id"]
        tables = running.app.state.service.tables
        until(  # listing it recorded how it ended: the held run's next commit carries that
            lambda: tables.get_run("acme", done_tid, ended_id).status == "success",
            what="the run's end to be recorded",
        )
        hops = _counting(monkeypatch)
        assert c.runs.get(done_tid, ended_id)["status"] == "success"
        assert hops == []  # neither the key (cached) nor the ended run's record
        assert c.runs.get(tid, held["run_id"])["status"] in ("pending", "running")
        assert len(hops) == 1  # a live run's status is worked out in a thread
        c.runs.cancel(tid, held["run_id"])
    finally:
        running.stop()


def test_a_key_not_looked_up_lately_is_read_in_a_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    running = start(f"sqlite:///{tmp_path / 'keys.db'}", key_cache_seconds=0.0)
    try:
        c = get_sync_client(url=running.url, api_key=running.keys["alice"])
        tid = c.threads.create()["thread_id"]
        hops = _counting(monkeypatch)
        assert c.threads.get(tid)["thread_id"] == tid
        assert "principal" in hops  # no cache: every request looks its key up
    finally:
        running.stop()


def test_a_stream_that_saw_its_run_end_records_how_it_ended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """So the ``GET`` the SDK sends after each stream reads it on the loop. The stream is
    read with plain HTTP here (the SDK's own ``GET`` would record it too)."""
    running = start(f"sqlite:///{tmp_path / 'record.db'}", key_cache_seconds=60.0)
    try:
        c = get_sync_client(url=running.url, api_key=running.keys["alice"])
        body = {"assistant_id": "slow", "input": {"n": 0, "until": 2}, "stream_mode": "values"}
        with raw_stream(running, body) as (tid, r):
            run_id = r.headers["location"].split("/")[-2]
            lines = list(r.iter_lines())
        assert sum(line.startswith("event: values") for line in lines) == 3
        c.threads.create()  # a write: it carries what waited for the store's next commit
        recorded = running.app.state.service.tables.get_run("acme", tid, run_id)
        assert recorded is not None and recorded.status == "success"
        hops = _counting(monkeypatch)
        assert c.runs.get(tid, run_id)["status"] == "success"
        assert hops == []
    finally:
        running.stop()


def test_a_new_thread_is_answered_as_created_without_reading_it_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    running = start(f"sqlite:///{tmp_path / 'new.db'}")
    try:
        c = get_sync_client(url=running.url, api_key=running.keys["alice"])
        store, tables = running.store, running.app.state.service.tables
        reads: list[str] = []
        for owner, name in ((store, "get_run"), (store, "queued_inputs"), (tables, "get_thread")):
            real = getattr(owner, name)

            def counted(*args: Any, _real: Any = real, _name: str = name) -> Any:
                reads.append(_name)
                return _real(*args)

            monkeypatch.setattr(owner, name, counted)
        made = c.threads.create(metadata={"n": 1, "tags": ("a", "b")})
        assert reads == []
        read_back = c.threads.get(made["thread_id"])
        assert reads  # the GET reads it
        assert made == read_back  # the same thread, field for field
        given = c.threads.create(thread_id="mine")  # an id of the caller's: read back
        assert given == c.threads.get("mine")
    finally:
        running.stop()


def test_a_streamed_runs_requests_match_the_first_routes(tmp_path: Path) -> None:
    """A request is matched against the app's routes in turn: the three a streamed run
    makes (create the thread, stream the run, the SDK's read of it) are the first three."""
    from starlette.routing import Match

    running = start(f"sqlite:///{tmp_path / 'routes.db'}")
    try:
        routes = running.app.routes
        for method, path in (
            ("POST", "/threads"),
            ("POST", "/threads/t1/runs/stream"),
            ("GET", "/threads/t1/runs/r1"),
        ):
            scope = {"type": "http", "method": method, "path": path, "root_path": ""}
            tried = [r.matches(scope)[0] for r in routes]
            assert Match.FULL in tried[:3], (method, path)
    finally:
        running.stop()
