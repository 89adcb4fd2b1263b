"""LangGraph graphs served beside wayline's (``lg_graphs``), run by LangGraph's own engine
on the server's workers, through the real ``langgraph-sdk``: the config and context of an
assistant and of a run reach the graph; every stream mode a wayline run streams
(``custom``, ``messages``, ``messages-tuple``, ``events``, ``debug``) streams too, from
what the worker recorded and the thread's checkpoints, a subgraph's with
``stream_subgraphs`` as LangGraph streams them with ``subgraphs=True``; a node's long-term
store is the tenant's, the one ``client.store`` reads."""

from __future__ import annotations

import uuid
from typing import Any

import lg_graphs
from harness import Running, as_dict
from langgraph_sdk import get_sync_client

from wayline.memory import DurableStore


def _client(running: Running) -> Any:
    return get_sync_client(url=running.url, api_key=running.keys["alice"], timeout=30.0)


def test_an_assistants_config_and_context_reach_the_langgraph_graph(server: Running) -> None:
    c = _client(server)
    a = c.assistants.create("lg_configured", config={"tags": ["t"]}, context={"model": "small"})
    tid = c.threads.create()["thread_id"]
    out = as_dict(c.runs.wait(tid, a["assistant_id"], input={"items": []}))
    assert out["items"] == ["model=small", "context={'model': 'small'}", "tags=['t']"]
    tid2 = c.threads.create()["thread_id"]  # the run's own config and context win
    given = {"configurable": {"model": "mine"}}
    out = as_dict(c.runs.wait(tid2, a["assistant_id"], input={}, config=given, context={"k": 1}))
    assert out["items"] == ["model=mine", "context={'k': 1}", "tags=['t']"]


def test_a_langgraph_nodes_store_is_the_tenants_store_the_api_reads(server: Running) -> None:
    c = _client(server)
    user = uuid.uuid4().hex[:8]
    ns = ["memories", user]
    c.store.put_item(ns, key="seed", value={"text": "sun sun sun"})
    tid = c.threads.create()["thread_id"]
    given = {"configurable": {"user_id": user}}
    out = as_dict(c.runs.wait(tid, "lg_memory", input={"items": []}, config=given))
    assert out["items"] == ["seen=['seed']", "best=from-run"]  # ranked by the served index
    item = c.store.get_item(ns, key="from-run")
    assert item["value"] == {"text": "rain on the plain"}
    found = c.store.search_items(ns, query="sun", limit=2)["items"]
    assert [i["key"] for i in found] == ["seed", "from-run"]
    row = DurableStore(server.store, tenant="acme").record(tuple(ns), "from-run")
    assert row is not None and (row.run_id, row.node) == (tid, "remember")
    other = get_sync_client(url=server.url, api_key=server.keys["eve"], timeout=30.0)
    assert other.store.search_items(ns)["items"] == []  # another tenant sees none of it


def test_a_langgraph_run_streams_every_mode(server: Running) -> None:
    c = _client(server)
    tid = c.threads.create()["thread_id"]
    modes = ["updates", "custom", "messages-tuple", "debug", "events"]
    hi = {"messages": [{"role": "user", "content": "hi"}]}
    stream = c.runs.stream(tid, "lg_chatty", input=hi, stream_mode=modes)
    parts = [(p.event, p.data) for p in stream]
    kinds = [e for e, _ in parts]
    custom = [d for e, d in parts if e == "custom"]
    assert custom == [{"progress": "prepared"}, {"progress": "calling the model"}]
    tokens = [d for e, d in parts if e == "messages"]
    assert "".join(chunk["content"] for chunk, _ in tokens) == lg_graphs.REPLY
    assert {meta["langgraph_node"] for _, meta in tokens} == {"model"}
    assert all("wayline_token" not in meta and meta["thread_id"] == tid for _, meta in tokens)
    # each step's emitted chunks come ahead of that step's update, as in process
    updates = [i for i, (e, d) in enumerate(parts) if e == "updates"]
    assert kinds.index("custom") < updates[0] < kinds.index("messages") < updates[1]
    debug = [d["type"] for e, d in parts if e == "debug"]
    assert debug.count("task") == 2 and debug.count("task_result") == 2
    assert "checkpoint" in debug
    events = {d["event"] for e, d in parts if e == "events"}
    assert {"on_chain_start", "on_chat_model_stream", "on_chain_end"} <= events
    run = c.runs.list(tid)[0]  # a join after the end replays what was recorded
    joined = [p.event for p in c.runs.join_stream(tid, run["run_id"], stream_mode=modes)]
    assert joined.count("custom") == 2 and joined.count("messages") == len(tokens)


def _in_process(subgraphs: bool) -> list[tuple[str, Any]]:
    """(event name, chunk) of LangGraph's own stream of ``lg_nested``, named as its server
    names them (``mode|namespace``), without the task ids a namespace holds."""
    hi = {"messages": [{"role": "user", "content": "hi"}]}
    out = []
    for part in lg_graphs.lg_nested().stream(
        hi, stream_mode=["custom", "messages"], subgraphs=subgraphs
    ):
        ns, mode, data = part if subgraphs else ((), *part)
        name = "|".join([mode, *(n.split(":")[0] for n in ns)])
        out.append((name, data if mode == "custom" else data[0].content))
    return out


def test_a_langgraph_subgraphs_chunks_and_tokens_stream_as_langgraph_streams_them(
    server: Running,
) -> None:
    c = _client(server)
    hi = {"messages": [{"role": "user", "content": "hi"}]}
    for subgraphs in (True, False):
        tid = c.threads.create()["thread_id"]
        stream = c.runs.stream(
            tid,
            "lg_nested",
            input=hi,
            stream_mode=["custom", "messages-tuple"],
            stream_subgraphs=subgraphs,
        )
        parts = [(p.event, p.data) for p in stream if p.event.startswith(("custom", "messages"))]
        named = [
            ("|".join(n.split(":")[0] for n in e.split("|")), d if e[0] == "c" else d[0]["content"])
            for e, d in parts
        ]
        assert named == _in_process(subgraphs)
        if subgraphs:  # the namespace names the subgraph's task, as LangGraph's does
            assert any(e.startswith("custom|child:") and len(e) > 13 for e, _ in parts)
            assert "".join(d for e, d in named if e == "messages|child") == lg_graphs.REPLY
