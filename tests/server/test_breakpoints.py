"""``interrupt_before`` / ``interrupt_after`` given when a run is created, through the real
``langgraph-sdk`` clients on SQLite and PostgreSQL: they travel with the queued input to the
worker, the run ends ``success`` while its thread waits ``interrupted`` at the breakpoint,
and a later run with no input continues it (shapes as LangGraph's local server,
langgraph-api 0.16.7)."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from harness import Running, as_dict
from langgraph_sdk import get_client, get_sync_client


def test_interrupt_before_pauses_and_a_run_without_input_continues(server: Running) -> None:
    c = get_sync_client(url=server.url, api_key=server.keys["alice"], timeout=30.0)
    tid = c.threads.create()["thread_id"]
    out = as_dict(c.runs.wait(tid, "simple", input={"n": 0}, interrupt_before=["b"]))
    assert out == {"items": ["a"], "n": 1}  # b has not run; no __interrupt__ (none asked)
    assert c.threads.get(tid)["status"] == "interrupted"
    [run] = c.runs.list(tid)
    assert run["status"] == "success" and as_dict(as_dict(run)["kwargs"])["interrupt_before"] == [
        "b"
    ]
    state = c.threads.get_state(tid)
    assert state["next"] == ["b"] and state["interrupts"] == []
    assert [t["name"] for t in state["tasks"]] == ["b"]

    parts = list(c.runs.stream(tid, "simple", input=None, stream_mode=["values", "updates"]))
    assert [p.event for p in parts] == ["metadata", "values", "updates", "values"]
    assert parts[1].data == {"items": ["a"], "n": 1}  # it opens with the state it continues
    assert parts[2].data == {"b": {"items": ["b"]}}
    assert parts[3].data == {"items": ["a", "b"], "n": 1}
    assert c.threads.get(tid)["status"] == "idle"
    assert [r["status"] for r in c.runs.list(tid)] == ["success", "success"]


def test_interrupt_after_star_in_a_stream_and_a_background_run(server: Running) -> None:
    async def scenario() -> None:
        c = get_client(url=server.url, api_key=server.keys["alice"], timeout=30.0)
        tid = (await c.threads.create())["thread_id"]
        parts = [
            p
            async for p in c.runs.stream(
                tid,
                "simple",
                input={"n": 0},
                interrupt_after="*",
                stream_mode=["values", "updates"],
            )
        ]
        assert [p.event for p in parts] == ["metadata", "values", "updates", "values", "updates"]
        assert parts[4].data == {"__interrupt__": []}  # a breakpoint asks nothing
        assert (await c.threads.get(tid))["status"] == "interrupted"
        assert (await c.threads.get_state(tid))["next"] == ["b"]

        # a second tenant's key cannot continue it
        other = get_client(url=server.url, api_key=server.keys["eve"], timeout=30.0)
        with pytest.raises(httpx.HTTPStatusError) as refused:
            await other.runs.create(tid, "simple", input=None)
        assert refused.value.response.status_code == 404

        run = await c.runs.create(tid, "simple", input=None, interrupt_after=["a"])
        out = await c.runs.join(tid, run["run_id"])  # a does not run again: no pause
        assert out == {"items": ["a", "b"], "n": 1}
        assert (await c.threads.get(tid))["status"] == "idle"

    asyncio.run(scenario())


def test_breakpoints_given_by_name_list_of_every_node(server: Running) -> None:
    c = get_sync_client(url=server.url, api_key=server.keys["alice"], timeout=30.0)
    tid = c.threads.create()["thread_id"]
    first = as_dict(c.runs.wait(tid, "simple", input={"n": 0}, interrupt_before="*"))
    assert first == {"items": [], "n": 0}  # paused before a, the first node
    assert c.threads.get_state(tid)["next"] == ["a"]
    second = as_dict(c.runs.wait(tid, "simple", input=None, interrupt_before="*"))
    assert second == {"items": ["a"], "n": 1}  # a ran, paused again before b
    third = as_dict(c.runs.wait(tid, "simple", input=None))
    assert third == {"items": ["a", "b"], "n": 1}
