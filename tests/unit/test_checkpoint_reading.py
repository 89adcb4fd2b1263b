"""LangGraph's checkpointer read API on wayline's stores: ``list``, ``get_tuple``, ``get``,
their async forms and ``delete_thread``, read through the graph compiled on the store."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, TypedDict

import pytest

import wayline
from wayline import END, START, StateGraph, interrupt
from wayline.checkpoint.memory import InMemorySaver
from wayline.errors import ConfigError
from wayline.store.checkpoint_reading import CheckpointTuple


class S(TypedDict):
    steps: Annotated[list[str], operator.add]


def build(saver: Any, *, ask: bool = False) -> Any:
    g = StateGraph(S)
    g.add_node("a", lambda s: {"steps": ["a"]})
    if ask:
        g.add_node("b", lambda s: {"steps": [interrupt("ok?")]})
    else:
        g.add_node("b", lambda s: {"steps": ["b"]})
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("b", END)
    return g.compile(checkpointer=saver)


CFG = {"configurable": {"thread_id": "t1"}}


def test_list_gives_every_checkpoint_newest_first_as_langgraph_tuples() -> None:
    saver = InMemorySaver()
    build(saver).invoke({"steps": ["x"]}, CFG)
    found = list(saver.list(CFG))
    assert all(isinstance(t, CheckpointTuple) for t in found)
    assert [t.metadata["step"] for t in found] == [2, 1, 0, -1]
    assert [t.metadata["source"] for t in found] == ["loop", "loop", "loop", "input"]
    assert [t.checkpoint["channel_values"] for t in found] == [
        {"steps": ["x", "a", "b"]},
        {"steps": ["x", "a"]},
        {"steps": ["x"]},
        {"steps": []},  # as LangGraph's: the input checkpoint, before the input
    ]
    newest, middle, first, before_input = found
    assert newest.config["configurable"]["thread_id"] == "t1"
    assert newest.config["configurable"]["checkpoint_ns"] == ""
    assert newest.checkpoint["id"] == newest.config["configurable"]["checkpoint_id"]
    assert newest.parent_config == middle.config
    assert first.parent_config == before_input.config
    assert before_input.parent_config is None
    assert [w[1:] for w in before_input.pending_writes or []] == [("steps", ["x"])]
    assert [t.metadata["step"] for t in saver.list(CFG, limit=2)] == [2, 1]
    assert [t.metadata["step"] for t in saver.list(CFG, before=middle.config)] == [0, -1]
    assert [t.metadata["step"] for t in saver.list(CFG, filter={"source": "input"})] == [-1]
    assert saver.get_tuple(before_input.config) == before_input


def nested(saver: Any) -> Any:
    return StateGraph(S).add_node("sub", build(saver)).add_edge(START, "sub").compile(saver)


@pytest.mark.parametrize("durability", ["sync", "async"])
def test_a_thread_without_a_namespace_lists_its_subgraphs_checkpoints_too(
    durability: str,
) -> None:
    saver = InMemorySaver()
    nested(saver).invoke({"steps": ["x"]}, CFG, durability=durability)
    found = [
        (t.config["configurable"]["thread_id"], t.config["configurable"]["checkpoint_ns"])
        for t in saver.list(CFG)
    ]
    root, sub = found[:3], found[3:]  # the root's (input, 2 steps), then the subgraph's
    assert root == [("t1", "")] * 3
    assert len(sub) == 4 and {t for t, _ in sub} == {"t1"}
    assert len({ns for _, ns in sub}) == 1 and sub[0][1].startswith("sub:")
    only_root = {"configurable": {"thread_id": "t1", "checkpoint_ns": ""}}
    assert len(list(saver.list(only_root))) == 3
    assert len(list(saver.list(CFG, limit=5))) == 5


def test_with_durability_exit_a_finished_subgraph_lists_nothing() -> None:
    saver = InMemorySaver()
    nested(saver).invoke({"steps": ["x"]}, CFG, durability="exit")
    assert [t.config["configurable"]["checkpoint_ns"] for t in saver.list(CFG)] == [""]


def test_with_durability_exit_an_interrupted_subgraph_lists_where_it_stopped() -> None:
    saver = InMemorySaver()
    app = StateGraph(S).add_node("sub", build(saver, ask=True)).add_edge(START, "sub")
    app.compile(saver).invoke({"steps": ["x"]}, CFG, durability="exit")
    found = [
        (t.config["configurable"]["checkpoint_ns"].split(":")[0], t.metadata["step"])
        for t in saver.list(CFG)
    ]
    assert found == [("", 0), ("sub", 1)]


def test_get_tuple_reads_the_latest_or_the_named_checkpoint() -> None:
    saver = InMemorySaver()
    app = build(saver)
    app.invoke({"steps": ["x"]}, CFG)
    latest = saver.get_tuple(CFG)
    assert latest is not None and latest.metadata["step"] == 2
    state = app.get_state(CFG).config["configurable"]
    assert latest.config == {
        "configurable": {k: state[k] for k in ("thread_id", "checkpoint_ns", "checkpoint_id")}
    }
    assert latest.parent_config is not None
    older = saver.get_tuple(latest.parent_config)
    assert older is not None and older.checkpoint["channel_values"] == {"steps": ["x", "a"]}
    assert saver.get(CFG) == latest.checkpoint
    assert saver.get_tuple({"configurable": {"thread_id": "nobody"}}) is None


def test_pending_interrupts_are_the_latest_checkpoints_pending_writes() -> None:
    saver = InMemorySaver()
    build(saver, ask=True).invoke({"steps": []}, CFG)
    latest = saver.get_tuple(CFG)
    assert latest is not None
    ((_task, channel, value),) = latest.pending_writes or []
    assert channel == "__interrupt__"
    assert [i.value for i in value] == ["ok?"]


def test_delete_thread_purges_the_run_and_a_store_url_reads_too() -> None:
    store: Any = wayline.connect("sqlite:///:memory:")  # a SQLStore: the reads are its
    build(store).invoke({"steps": ["x"]}, CFG)
    build(store).invoke({"steps": ["y"]}, {"configurable": {"thread_id": "t2"}})
    assert len(list(store.list(None))) == 8  # each thread: its input checkpoint, 3 steps
    store.delete_thread("t1")
    assert store.get_tuple(CFG) is None
    assert list(store.list(CFG)) == []
    assert store.get_tuple({"configurable": {"thread_id": "t2"}}) is not None


def test_the_async_forms_read_the_same() -> None:
    saver = InMemorySaver()
    build(saver).invoke({"steps": ["x"]}, CFG)

    async def read() -> tuple[list[CheckpointTuple], CheckpointTuple | None, Any]:
        found = [t async for t in saver.alist(CFG)]
        one = await saver.aget_tuple(CFG)
        got = await saver.aget(CFG)
        await saver.adelete_thread("t1")
        return found, one, got

    found, one, got = asyncio.run(read())
    assert [t.metadata["step"] for t in found] == [2, 1, 0, -1]
    assert one is not None and one.metadata["step"] == 2 and got == one.checkpoint
    assert saver.get_tuple(CFG) is None


def test_a_read_needs_a_thread_and_the_graph_that_ran_it() -> None:
    saver = InMemorySaver()
    with pytest.raises(ConfigError, match="thread_id"):
        saver.get_tuple({"configurable": {}})
    other = InMemorySaver()
    build(other).invoke({"steps": ["x"]}, CFG)
    with pytest.raises(ConfigError, match="not compiled"):
        other._readers().clear()  # as in a process that never compiled it
        other.get_tuple(CFG)


def test_postgresql_store_reads_and_deletes_the_same(pg_url: str) -> None:
    store: Any = wayline.connect(pg_url)
    try:
        build(store).invoke({"steps": ["x"]}, CFG)
        assert [t.metadata["step"] for t in store.list(CFG)] == [2, 1, 0, -1]
        latest = store.get_tuple(CFG)
        assert latest is not None
        assert latest.checkpoint["channel_values"] == {"steps": ["x", "a", "b"]}
        store.delete_thread("t1")
        assert store.get_tuple(CFG) is None
    finally:
        store.close()
