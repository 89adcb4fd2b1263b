"""What the event loop answers without a hop to a thread (``wayline.server.http.call``): an
ended run's record on SQLite (the SDK asks for it after every stream), and a key looked up
less than ``key_cache_seconds`` ago. Counted by wrapping ``call``, which still runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from harness import as_dict, start
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
