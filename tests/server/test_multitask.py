"""``multitask_strategy`` on a busy thread through ``langgraph-sdk``, on SQLite and
PostgreSQL: ``reject`` (the default) is 409; ``interrupt`` stops the running run at its
next step boundary (its API run ``interrupted``, its finished steps kept) and the new run
continues the thread; ``enqueue`` records the new run ``pending`` and starts it when the
runs before it have ended, in order, its stream starting when it starts."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from harness import Running, as_dict, until
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient


def client(server: Running) -> SyncLangGraphClient:
    return get_sync_client(url=server.url, api_key=server.keys["alice"], timeout=60.0)


def _busy(c: SyncLangGraphClient, ticks: int = 400) -> tuple[str, dict[str, Any]]:
    tid = c.threads.create()["thread_id"]
    first = c.runs.create(tid, "slow", input={"n": 0, "until": ticks})
    until(lambda: c.runs.get(tid, first["run_id"])["status"] == "running", what="running")
    until(lambda: _n(c, tid) >= 2, what="two ticks")
    return tid, dict(first)


def _n(c: SyncLangGraphClient, tid: str) -> int:
    values = c.threads.get_state(tid)["values"]
    return int(values.get("n", 0)) if isinstance(values, dict) else 0


def test_reject_is_the_default(server: Running) -> None:
    c = client(server)
    tid, first = _busy(c)
    with pytest.raises(httpx.HTTPStatusError) as busy:
        c.runs.create(tid, "slow", input={"n": 0, "until": 1})
    assert busy.value.response.status_code == 409
    with pytest.raises(httpx.HTTPStatusError) as also:
        c.runs.create(tid, "slow", input={"until": 1}, multitask_strategy="reject")
    assert also.value.response.status_code == 409
    c.runs.cancel(tid, first["run_id"], wait=True)


def test_interrupt_stops_the_running_run_and_continues_the_thread(server: Running) -> None:
    c = client(server)
    tid, first = _busy(c)
    second = c.runs.create(tid, "slow", input={"until": 0}, multitask_strategy="interrupt")
    assert second["multitask_strategy"] == "interrupt"
    out = as_dict(c.runs.join(tid, second["run_id"]))
    assert c.runs.get(tid, first["run_id"])["status"] == "interrupted"
    assert c.runs.get(tid, second["run_id"])["status"] == "success"
    ticks = out["items"]
    assert len(ticks) >= 3 and ticks == [f"t{i}" for i in range(len(ticks))]
    assert out["n"] == len(ticks) < 400  # the first run's steps kept, then one more tick


def test_an_unknown_strategy_is_422(server: Running) -> None:
    c = client(server)
    tid = c.threads.create()["thread_id"]
    with pytest.raises(httpx.HTTPStatusError) as refused:
        c.runs.create(tid, "slow", input={"until": 1}, multitask_strategy="sideways")  # type: ignore[call-overload]
    assert refused.value.response.status_code == 422


def test_enqueued_runs_wait_then_run_in_order(server: Running) -> None:
    c = client(server)
    tid, first = _busy(c, ticks=30)
    second = c.runs.create(tid, "slow", input={"until": 34}, multitask_strategy="enqueue")
    third = c.runs.create(tid, "slow", input={"until": 37}, multitask_strategy="enqueue")
    assert second["status"] == "pending" and second["multitask_strategy"] == "enqueue"
    assert c.runs.get(tid, third["run_id"])["status"] == "pending"
    assert c.runs.get(tid, first["run_id"])["status"] == "running"
    with pytest.raises(httpx.HTTPStatusError) as busy:  # reject still refuses while any wait
        c.runs.create(tid, "slow", input={"until": 1})
    assert busy.value.response.status_code == 409

    # the third run's stream opens now and sends nothing until its turn, then its own steps
    seen = [
        as_dict(part.data)["n"]
        for part in c.runs.join_stream(tid, third["run_id"], stream_mode="values")
        if part.event == "values"
    ]
    assert seen[0] == 34 and seen[-1] == 37 and seen == sorted(seen)

    out = as_dict(c.runs.join(tid, third["run_id"]))
    assert out["n"] == 37 and out["items"] == [f"t{i}" for i in range(37)]
    assert as_dict(c.runs.join(tid, first["run_id"]))["n"] == 30  # what each one left
    assert as_dict(c.runs.join(tid, second["run_id"]))["n"] == 34
    for run in (first, second, third):
        assert c.runs.get(tid, run["run_id"])["status"] == "success"
    first_steps = [
        as_dict(part.data)["n"]
        for part in c.runs.join_stream(tid, first["run_id"], stream_mode="values")
        if part.event == "values"
    ]
    assert first_steps[-1] == 30  # its stream ends where the second run took over


def test_a_queued_run_cancelled_leaves_the_queue(server: Running) -> None:
    c = client(server)
    tid, first = _busy(c, ticks=30)
    second = c.runs.create(tid, "slow", input={"until": 33}, multitask_strategy="enqueue")
    third = c.runs.create(tid, "slow", input={"until": 35}, multitask_strategy="enqueue")
    c.runs.cancel(tid, second["run_id"])
    assert c.runs.get(tid, second["run_id"])["status"] == "interrupted"
    out = as_dict(c.runs.join(tid, third["run_id"]))
    assert out["n"] == 35 and out["items"] == [f"t{i}" for i in range(35)]
    assert c.runs.get(tid, first["run_id"])["status"] == "success"
    assert c.runs.get(tid, third["run_id"])["status"] == "success"
