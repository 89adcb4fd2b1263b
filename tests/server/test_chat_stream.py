"""Chat-model tokens from runs on wayline's workers (stream modes ``messages-tuple`` and
``messages``), through the real ``langgraph-sdk`` client: a node calling LangChain's
``GenericFakeChatModel`` streams its tokens while the worker runs it; the chunks are
recorded with the run, so a join after the end, a ``Last-Event-ID`` reconnect and a server
restart replay them; a worker SIGKILLed mid-message leaves no half message in the state,
and what the replacement streams comes after a ``metadata`` event of the next attempt.

The shapes were compared with ``langgraph dev`` (langgraph-api 0.16.7, the same graph and
model): ``REFERENCE_META_KEYS`` are the metadata keys it sent with each chunk, the event
names are the ones it sent for each mode."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import graphs
from harness import Running, start, until, worker_process
from langgraph_sdk import get_sync_client

HI = {"messages": [{"role": "user", "content": "hi"}]}

REFERENCE_META_KEYS = {
    "created_by", "graph_id", "assistant_id", "run_attempt", "langgraph_version",
    "langgraph_api_version", "langgraph_plan", "langgraph_host", "langgraph_api_url",
    "run_id", "thread_id", "ls_integration", "langgraph_step", "langgraph_node",
    "langgraph_triggers", "langgraph_path", "langgraph_checkpoint_ns", "checkpoint_ns",
    "ls_provider", "ls_model_type", "lc_versions",
}  # fmt: skip
PLATFORM_KEYS = {"langgraph_version", "langgraph_api_version", "langgraph_plan", "langgraph_host"}
"""Keys about LangGraph's own deployment that wayline does not claim to have."""
REFERENCE_CHUNK_KEYS = {
    "content", "additional_kwargs", "response_metadata", "type", "name", "id", "tool_calls",
    "invalid_tool_calls", "usage_metadata", "tool_call_chunks", "chunk_position",
}  # fmt: skip


def _client(running: Running) -> Any:
    return get_sync_client(url=running.url, api_key=running.keys["alice"], timeout=30.0)


def _parts(stream: Any) -> list[tuple[str, Any]]:
    return [(p.event, p.data) for p in stream]


def _tokens(parts: list[tuple[str, Any]]) -> list[Any]:
    return [data for event, data in parts if event == "messages"]


def test_tokens_arrive_while_the_node_runs_and_replay(sqlite_server: Running) -> None:
    c = _client(sqlite_server)
    tid = c.threads.create()["thread_id"]
    graphs.GATE.clear()
    parts: list[tuple[str, Any]] = []
    for part in c.runs.stream(
        tid, "gated_chat", input=HI, stream_mode=["messages-tuple", "updates", "values"]
    ):
        parts.append((part.event, part.data))
        if part.event == "messages" and not graphs.GATE.is_set():
            # two tokens out, the node waits on the gate: the run's step is not committed
            assert c.threads.get(tid)["status"] == "busy"
            assert not [e for e, _ in parts if e == "updates"]
            graphs.GATE.set()
    events = [e for e, _ in parts]
    assert events[0] == "metadata"
    first_update = events.index("updates")
    assert all(i < first_update for i, e in enumerate(events) if e == "messages")

    tokens = _tokens(parts)
    assert len(tokens) > 2
    assert "".join(chunk["content"] for chunk, _ in tokens) == graphs.REPLY
    final = c.threads.get_state(tid)["values"]["messages"]
    assert [m["type"] for m in final] == ["human", "ai"]
    assert final[1]["content"] == graphs.REPLY
    chunk, meta = tokens[0]
    assert set(chunk) == REFERENCE_CHUNK_KEYS and chunk["type"] == "AIMessageChunk"
    assert {chunk["id"] for chunk, _ in tokens} == {final[1]["id"]}
    assert REFERENCE_META_KEYS - PLATFORM_KEYS - {"created_by", "langgraph_api_url"} <= set(meta)
    assert meta["langgraph_node"] == "model" and meta["langgraph_step"] == 1
    assert meta["thread_id"] == tid and meta["graph_id"] == "gated_chat"
    assert meta["run_attempt"] == 1 and meta["ls_provider"] == "genericfakechatmodel"
    (run,) = c.runs.list(tid)
    assert meta["run_id"] == run["run_id"]

    # joined after the end: the same chunks, from the store
    modes = ["messages-tuple", "updates", "values"]
    joined = _parts(c.runs.join_stream(tid, run["run_id"], stream_mode=modes))
    assert joined == parts
    # reconnecting after the third event gets exactly the events after it
    after = _parts(c.runs.join_stream(tid, run["run_id"], stream_mode=modes, last_event_id="3"))
    assert after[1:] == parts[4:]


def test_messages_mode_sends_partial_messages(sqlite_server: Running) -> None:
    c = _client(sqlite_server)
    tid = c.threads.create()["thread_id"]
    parts = _parts(c.runs.stream(tid, "chat", input=HI, stream_mode="messages"))
    events = [e for e, _ in parts]
    assert events[:2] == ["metadata", "messages/metadata"]  # as langgraph dev sends them
    assert set(events[2:]) == {"messages/partial"}
    (last,) = parts[-1][1]
    assert last["content"] == graphs.REPLY and last["type"] == "ai"
    ((msg_id, meta),) = parts[1][1].items()
    assert msg_id == last["id"] and meta["metadata"]["langgraph_node"] == "model"


def test_a_run_that_did_not_ask_records_no_tokens(sqlite_server: Running) -> None:
    c = _client(sqlite_server)
    tid = c.threads.create()["thread_id"]
    c.runs.wait(tid, "chat", input=HI)
    (run,) = c.runs.list(tid)
    joined = _parts(c.runs.join_stream(tid, run["run_id"], stream_mode=["messages-tuple"]))
    assert [e for e, _ in joined] == ["metadata"]
    store = sqlite_server.store
    assert store.load_stream_events("acme", tid, after_seq=0, after_step=-1, to_step=9) == []


def test_tokens_replay_after_a_server_restart(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'chat.db'}"
    first = start(url)
    c = _client(first)
    tid = c.threads.create()["thread_id"]
    parts = _parts(c.runs.stream(tid, "chat", input=HI, stream_mode=["messages-tuple"]))
    (run,) = c.runs.list(tid)
    first.stop()
    second = start(url)
    try:
        c = _client(second)
        joined = _parts(c.runs.join_stream(tid, run["run_id"], stream_mode=["messages-tuple"]))
        assert joined == parts and len(_tokens(parts)) > 2
    finally:
        second.stop()


def test_a_worker_killed_mid_message_leaves_one_message(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'kill.db'}"
    running = start(url, workers=0)
    first = worker_process(url, "slow_chat")
    second = None
    try:
        c = _client(running)
        tid = c.threads.create()["thread_id"]
        parts: list[tuple[str, Any]] = []
        for part in c.runs.stream(tid, "slow_chat", input=HI, stream_mode=["messages-tuple"]):
            parts.append((part.event, part.data))
            if len(_tokens(parts)) == 3 and second is None:
                first.send_signal(signal.SIGKILL)  # mid-message: its step never commits
                first.wait(10)
                second = worker_process(url, "slow_chat")
        events = [e for e, _ in parts]
        assert events.count("metadata") == 2
        restart = [i for i, e in enumerate(events) if e == "metadata"][1]
        assert parts[restart][1]["attempt"] == 2
        before, after = _tokens(parts[:restart]), _tokens(parts[restart:])
        assert len(before) >= 1  # the dead worker's tokens reached the client
        assert "".join(chunk["content"] for chunk, _ in before) != graphs.REPLY
        assert "".join(chunk["content"] for chunk, _ in after) == graphs.REPLY
        assert {meta["run_attempt"] for _, meta in after} == {2}
        final = until(lambda: c.threads.get(tid)["status"] == "idle" and c.threads.get_state(tid))
        messages = final["values"]["messages"]
        assert [(m["type"], m["content"]) for m in messages] == [
            ("human", "hi"),
            ("ai", graphs.REPLY),
        ]
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait(10)
        running.stop()


REFERENCE_EVENTS = [
    ("on_chain_start", "chat"),
    ("on_chain_start", "model"),
    ("on_chat_model_start", None),
    *[("on_chat_model_stream", None)] * 17,
    ("on_chat_model_end", None),
    ("on_chain_stream", "model"),
    ("on_chain_end", "model"),
    ("on_chain_end", "chat"),
]
"""``langgraph dev``'s ``events`` for the chat graph (a model name where None: LangGraph
names the model's class, wayline its ``ls_provider``, the class is not recorded)."""
REFERENCE_EVENT_KEYS = {"event", "data", "name", "tags", "run_id", "metadata", "parent_ids"}
REFERENCE_DEBUG = [
    ("checkpoint", -1),
    ("checkpoint", 0),
    ("task", 1),
    ("task_result", 1),
    ("checkpoint", 1),
]
REFERENCE_DEBUG_PAYLOAD_KEYS = {
    "checkpoint": {
        "config", "parent_config", "values", "metadata", "next", "tasks", "checkpoint",
        "parent_checkpoint",
    },
    "task": {"id", "name", "input", "triggers", "metadata"},
    "task_result": {"id", "name", "error", "result", "interrupts"},
}  # fmt: skip


def test_events_in_the_astream_events_shape(sqlite_server: Running) -> None:
    c = _client(sqlite_server)
    tid = c.threads.create()["thread_id"]
    parts = _parts(c.runs.stream(tid, "chat", input=HI, stream_mode="events"))
    events = [data for event, data in parts if event == "events"]
    seen = [(e["event"], e["name"] if e["event"].startswith("on_chain") else None) for e in events]
    streamed = sum(e == "on_chat_model_stream" for e, _ in seen)
    assert (
        seen
        == [  # the reference's sequence, with this reply's number of tokens
            *REFERENCE_EVENTS[:3],
            *[("on_chat_model_stream", None)] * streamed,
            *REFERENCE_EVENTS[-4:],
        ]
    )
    assert all(set(e) == REFERENCE_EVENT_KEYS for e in events)
    chunks = [e["data"]["chunk"]["content"] for e in events if e["event"] == "on_chat_model_stream"]
    assert "".join(chunks) == graphs.REPLY
    end = next(e for e in events if e["event"] == "on_chat_model_end")
    assert end["data"]["output"]["content"] == graphs.REPLY
    node_end = next(e for e in events if e["event"] == "on_chain_end" and e["name"] == "model")
    assert node_end["data"]["output"]["messages"][0]["content"] == graphs.REPLY
    assert events[-1]["data"]["output"]["messages"][-1]["content"] == graphs.REPLY
    assert events[1]["metadata"]["langgraph_node"] == "model"


def test_debug_checkpoints_and_tasks(sqlite_server: Running) -> None:
    c = _client(sqlite_server)
    tid = c.threads.create()["thread_id"]
    parts = _parts(c.runs.stream(tid, "chat", input=HI, stream_mode="debug"))
    debug = [data for event, data in parts if event == "debug"]
    assert [(d["type"], d["step"]) for d in debug] == REFERENCE_DEBUG
    for d in debug:
        assert set(d) == {"step", "timestamp", "type", "payload"}
        assert set(d["payload"]) == REFERENCE_DEBUG_PAYLOAD_KEYS[d["type"]]
    first, input_step, task, result, last = debug
    assert first["payload"]["next"] == ["__start__"]
    assert first["payload"]["values"] == {"messages": []}
    assert input_step["payload"]["next"] == ["model"]
    assert task["payload"]["name"] == result["payload"]["name"] == "model"
    assert task["payload"]["id"] == result["payload"]["id"]
    assert result["payload"]["result"]["messages"][0]["content"] == graphs.REPLY
    assert last["payload"]["values"]["messages"][-1]["content"] == graphs.REPLY
    state = c.threads.get_state(tid)
    assert last["payload"]["checkpoint"]["checkpoint_id"] == state["checkpoint"]["checkpoint_id"]


def test_a_resume_beside_an_empty_input_as_use_stream_sends_it(sqlite_server: Running) -> None:
    """``useStream``'s ``submit({}, {command: {resume}})`` (agent-chat-ui's approve button)
    sends an empty input beside the command: it resumes, as in LangGraph."""
    c = _client(sqlite_server)
    tid = c.threads.create()["thread_id"]
    c.runs.wait(tid, "approved_chat", input=HI)
    assert c.threads.get(tid)["status"] == "interrupted"
    out = c.runs.wait(tid, "approved_chat", input={}, command={"resume": "ok"})
    assert isinstance(out, dict)
    assert [m["content"] for m in out["messages"]][1:] == ["approved: ok", graphs.REPLY]


def test_a_resume_streams_its_own_tokens_only(sqlite_server: Running) -> None:
    """A node that streamed, then paused on an interrupt, runs again on resume: the
    resume's stream has the second run's tokens, not the first's as well."""
    c = _client(sqlite_server)
    tid = c.threads.create()["thread_id"]
    first = _parts(c.runs.stream(tid, "reply_then_ask", input=HI, stream_mode="messages-tuple"))
    assert "".join(chunk["content"] for chunk, _ in _tokens(first)) == graphs.REPLY
    again = _parts(
        c.runs.stream(
            tid, "reply_then_ask", command={"resume": "yes"}, stream_mode="messages-tuple"
        )
    )
    assert "".join(chunk["content"] for chunk, _ in _tokens(again)) == graphs.REPLY
    assert [e for e, _ in again].count("metadata") == 1
