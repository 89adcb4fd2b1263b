"""Stream mode ``custom`` for runs executed by workers, through the real ``langgraph-sdk``
client on SQLite: what a node hands ``get_stream_writer()`` is recorded by the worker in
the ``stream_events`` table (its run asked for the mode with its input) and streamed in run
order, each step's chunks ahead of that step's ``updates``, as LangGraph streams them in
process; a re-join replays them; a run that did not ask records none."""

from __future__ import annotations

from typing import Any

from harness import Running, as_dict
from langgraph_sdk import get_sync_client


def _parts(stream: Any) -> list[tuple[str, Any]]:
    return [(p.event, p.data) for p in stream if p.event != "metadata"]


def test_custom_chunks_stream_in_run_order_and_replay(sqlite_server: Running) -> None:
    c = get_sync_client(url=sqlite_server.url, api_key=sqlite_server.keys["alice"], timeout=30.0)
    tid = c.threads.create()["thread_id"]
    parts = _parts(c.runs.stream(tid, "chatty", input={"n": 0}, stream_mode=["updates", "custom"]))
    assert parts == [
        ("custom", {"progress": "a started"}),
        ("custom", {"progress": "a done", "n": 0}),
        ("updates", {"a": {"items": ["a"], "n": 1}}),
        ("custom", "b says hi"),
        ("updates", {"b": {"items": ["b"]}}),
    ]
    (run,) = c.runs.list(tid)
    joined = _parts(c.runs.join_stream(tid, run["run_id"], stream_mode=["updates", "custom"]))
    assert joined == parts  # re-joined after the end: replayed from the store
    assert _parts(c.runs.join_stream(tid, run["run_id"], stream_mode=["custom"])) == [
        p for p in parts if p[0] == "custom"
    ]

    # a run that did not ask for custom records nothing: its stream has no custom events
    # even when joined asking for them
    tid2 = c.threads.create()["thread_id"]
    out = as_dict(c.runs.wait(tid2, "chatty", input={"n": 0}))
    assert out == {"items": ["a", "b"], "n": 1}
    (run2,) = c.runs.list(tid2)
    replay = _parts(c.runs.join_stream(tid2, run2["run_id"], stream_mode=["updates", "custom"]))
    assert [e for e, _ in replay] == ["updates", "updates"]


def test_chunks_of_a_step_that_paused_stream_before_its_interrupt(
    sqlite_server: Running,
) -> None:
    c = get_sync_client(url=sqlite_server.url, api_key=sqlite_server.keys["alice"], timeout=30.0)
    tid = c.threads.create()["thread_id"]
    parts = _parts(c.runs.stream(tid, "chatty", input={"n": 1}, stream_mode=["updates", "custom"]))
    assert [e for e, _ in parts] == [
        "custom",
        "custom",
        "updates",
        "custom",
        "updates",
        "custom",
        "updates",
    ]
    assert parts[5] == ("custom", {"asking": 2})
    assert parts[6][1]["__interrupt__"][0]["value"] == "go on?"
    assert c.threads.get(tid)["status"] == "interrupted"
