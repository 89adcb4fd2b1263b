"""Crons through the official ``langgraph-sdk`` (``client.crons.*``) against wayline serve,
on SQLite and PostgreSQL: create (stateless and for a thread), search, count, update,
delete; a due tick is fired by the server's workers as a run the API shows."""

from __future__ import annotations

import datetime as dt
import time
from typing import Any

import graphs
import httpx
import pytest
from harness import Running, as_dict, make_cron_due, until
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient


def client(server: Running, key: str = "alice") -> SyncLangGraphClient:
    return get_sync_client(url=server.url, api_key=server.keys[key], timeout=30.0)


def _fired(c: SyncLangGraphClient, cron_id: str) -> list[dict[str, Any]]:
    """The API runs a cron's ticks made, across the tenant's threads."""
    runs = []
    for t in c.threads.search(limit=100):
        for r in c.runs.list(t["thread_id"]):
            if as_dict(r["metadata"]).get("cron_id") == cron_id:
                runs.append(dict(r))
    return runs


def test_a_stateless_cron_fires_a_run_on_a_new_thread(server: Running) -> None:
    c = client(server)
    cron = as_dict(
        c.crons.create("simple", schedule="*/5 * * * *", input={"n": 0}, metadata={"team": "ops"})
    )
    assert cron["schedule"] == "*/5 * * * *" and cron["enabled"] is True
    assert cron["timezone"] == "UTC" and cron["thread_id"] is None
    assert cron["next_run_date"] is not None
    listed = c.crons.search(assistant_id="simple", metadata={"team": "ops"})
    assert [x["cron_id"] for x in listed] == [cron["cron_id"]]
    assert c.crons.count(assistant_id="simple", metadata={"team": "ops"}) == 1
    make_cron_due(server, cron["cron_id"])
    (run,) = until(lambda: _fired(c, cron["cron_id"]), what="the tick's run")
    joined = c.runs.join(run["thread_id"], run["run_id"])
    assert as_dict(joined) == {"items": ["a", "b"], "n": 1}
    assert c.runs.get(run["thread_id"], run["run_id"])["status"] == "success"
    after = c.crons.search(assistant_id="simple", metadata={"team": "ops"})[0]
    assert after["next_run_date"] is not None  # the tick spent, the next one after now
    assert dt.datetime.fromisoformat(str(after["next_run_date"])).timestamp() > time.time()
    c.crons.delete(cron["cron_id"])


def test_a_thread_cron_hands_the_thread_each_tick(server: Running) -> None:
    c = client(server)
    thread = c.threads.create()
    tid = thread["thread_id"]
    cron = as_dict(
        c.crons.create_for_thread(
            tid, "simple", schedule="0 9 * * 1-5", input={"n": 5}, timezone="Europe/Paris"
        )
    )
    assert cron["thread_id"] == tid and cron["timezone"] == "Europe/Paris"
    for turn in (1, 2):
        make_cron_due(server, cron["cron_id"])
        until(lambda t=turn: len(_fired(c, cron["cron_id"])) == t, what=f"tick {turn}")
        until(lambda: c.threads.get(tid)["status"] == "idle", what="the thread to settle")
    assert as_dict(c.threads.get_state(tid)["values"])["items"] == ["a", "b", "a", "b"]
    c.crons.delete(cron["cron_id"])


def test_update_pause_and_delete(server: Running) -> None:
    c = client(server)
    cron = as_dict(c.crons.create("simple", schedule="0 9 * * *", metadata={"k": "upd"}))
    changed = as_dict(c.crons.update(cron["cron_id"], schedule="30 6 * * *", enabled=False))
    assert changed["schedule"] == "30 6 * * *" and changed["enabled"] is False
    assert c.crons.count(metadata={"k": "upd"}) == 1
    assert c.crons.search(enabled=False, metadata={"k": "upd"})[0]["cron_id"] == cron["cron_id"]
    make_cron_due(server, cron["cron_id"])  # paused: due, but not fired
    with pytest.raises(AssertionError):
        until(lambda: _fired(c, cron["cron_id"]), timeout=1.0, what="no fire")
    c.crons.delete(cron["cron_id"])
    assert c.crons.count(metadata={"k": "upd"}) == 0
    with pytest.raises(httpx.HTTPStatusError) as missing:
        c.crons.delete(cron["cron_id"])
    assert missing.value.response.status_code == 404


def test_bad_crons_are_422_and_other_tenants_see_none(server: Running) -> None:
    c = client(server)
    with pytest.raises(httpx.HTTPStatusError) as bad:
        c.crons.create("simple", schedule="every day")
    assert bad.value.response.status_code == 422
    assert "not a cron expression" in bad.value.response.text
    with pytest.raises(httpx.HTTPStatusError) as zone:
        c.crons.create("simple", schedule="0 9 * * *", timezone="Mars/Olympus")
    assert zone.value.response.status_code == 422
    cron = as_dict(c.crons.create("simple", schedule="0 9 * * *", metadata={"k": "mine"}))
    eve = client(server, "eve")
    assert eve.crons.count(metadata={"k": "mine"}) == 0
    with pytest.raises(httpx.HTTPStatusError) as other:
        eve.crons.delete(cron["cron_id"])
    assert other.value.response.status_code == 404
    c.crons.delete(cron["cron_id"])


def test_on_run_completed_keep_is_what_a_tick_does_and_delete_is_refused(server: Running) -> None:
    c = client(server)
    kept = as_dict(c.crons.create("simple", schedule="0 9 * * *", on_run_completed="keep"))
    assert kept["on_run_completed"] == "keep"
    make_cron_due(server, kept["cron_id"])
    (run,) = until(lambda: _fired(c, kept["cron_id"]), what="the tick's run")
    c.runs.join(run["thread_id"], run["run_id"])
    assert c.threads.get(run["thread_id"])["thread_id"] == run["thread_id"]  # kept
    with pytest.raises(httpx.HTTPStatusError) as deleting:
        c.crons.create("simple", schedule="0 9 * * *", on_run_completed="delete")
    assert deleting.value.response.status_code == 422
    assert "DELETE /threads/" in deleting.value.response.text
    c.crons.delete(kept["cron_id"])


def test_a_thread_cron_with_enqueue_waits_behind_the_busy_run(server: Running) -> None:
    """``multitask_strategy="enqueue"``: a tick on a busy thread is queued behind its run
    (pending), then runs from where that run ended; other strategies are refused."""
    c = client(server)
    tid = c.threads.create()["thread_id"]
    graphs.HOLD.clear()  # the first run stays running until the tick is seen queued
    first = c.runs.create(tid, "slow", input={"n": 0, "until": 20, "hold": True})
    until(lambda: c.runs.get(tid, first["run_id"])["status"] == "running", what="running")
    cron = as_dict(
        c.crons.create_for_thread(
            tid, "slow", schedule="0 9 * * *", input={"until": 63}, multitask_strategy="enqueue"
        )
    )
    make_cron_due(server, cron["cron_id"])
    (tick,) = until(lambda: _fired(c, cron["cron_id"]), what="the tick's run")
    assert tick["status"] == "pending" and tick["multitask_strategy"] == "enqueue"
    assert c.runs.get(tid, first["run_id"])["status"] == "running"
    graphs.HOLD.set()
    out = as_dict(c.runs.join(tid, tick["run_id"]))
    assert out["n"] == 63 and out["items"] == [f"t{i}" for i in range(63)]
    assert c.runs.get(tid, first["run_id"])["status"] == "success"
    assert c.runs.get(tid, tick["run_id"])["status"] == "success"
    c.crons.delete(cron["cron_id"])
    with pytest.raises(httpx.HTTPStatusError) as refused:
        c.crons.create_for_thread(tid, "slow", schedule="0 9 * * *", multitask_strategy="interrupt")
    assert refused.value.response.status_code == 422
