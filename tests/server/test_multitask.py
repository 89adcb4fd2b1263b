"""``multitask_strategy`` on a busy thread through ``langgraph-sdk``, on SQLite and
PostgreSQL: ``reject`` (the default) is 409; ``interrupt`` stops the running run at its
next step boundary (its API run ``interrupted``, its finished steps kept) and the new run
continues the thread; ``enqueue`` and ``rollback`` are refused (422) as not yet supported."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from harness import Running, as_dict, until
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient


def client(server: Running) -> SyncLangGraphClient:
    return get_sync_client(url=server.url, api_key=server.keys["alice"], timeout=60.0)


def _busy(c: SyncLangGraphClient) -> tuple[str, dict[str, Any]]:
    tid = c.threads.create()["thread_id"]
    first = c.runs.create(tid, "slow", input={"n": 0, "until": 400})
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


@pytest.mark.parametrize("strategy", ["enqueue", "rollback", "sideways"])
def test_unsupported_strategies_are_422(server: Running, strategy: str) -> None:
    c = client(server)
    tid = c.threads.create()["thread_id"]
    with pytest.raises(httpx.HTTPStatusError) as refused:
        c.runs.create(tid, "slow", input={"until": 1}, multitask_strategy=strategy)  # type: ignore[call-overload]
    assert refused.value.response.status_code == 422
