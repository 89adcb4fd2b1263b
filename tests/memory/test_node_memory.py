"""Every way a node reaches the store, and the key property: a node's writes commit with
its step (none from a failed attempt, none twice, none from a lease that was lost), on
SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import operator
import uuid
from typing import Annotated, Any, TypedDict

import pytest

from wayline import RetryPolicy
from wayline.config import get_store
from wayline.errors import LeaseLost
from wayline.func import entrypoint, task
from wayline.graph import END, START, StateGraph
from wayline.memory import DurableStore, InMemoryStore
from wayline.runtime import Runtime


class S(TypedDict):
    user: str
    log: Annotated[list[str], operator.add]


def cfg() -> dict[str, Any]:
    return {"configurable": {"thread_id": f"t-{uuid.uuid4().hex[:8]}"}}


def test_every_way_in_reaches_one_store(backend: Any) -> None:
    seen: list[Any] = []

    def by_param(s: S, store: Any) -> dict[str, Any]:
        store.put(("u", s["user"]), "param", {"v": 1})
        seen.append(store.get(("u", s["user"]), "param").value)  # its own write, at once
        return {"log": ["param"]}

    def by_get_store(s: S) -> dict[str, Any]:
        get_store().put(("u", s["user"]), "get_store", {"v": 2})
        return {"log": ["get_store"]}

    def by_runtime(s: S, runtime: Runtime[Any]) -> dict[str, Any]:
        runtime.store.put(("u", s["user"]), "runtime", {"v": 3})
        found = runtime.store.search(("u", s["user"]))
        return {"log": [",".join(sorted(i.key for i in found))]}

    b = StateGraph(S)
    b.add_node("a", by_param)
    b.add_node("b", by_get_store)
    b.add_node("c", by_runtime)
    b.add_edge(START, "a")
    b.add_edge("a", "b")
    b.add_edge("b", "c")
    b.add_edge("c", END)
    graph = b.compile(checkpointer=backend, store=DurableStore(backend))
    config = cfg()
    out = graph.invoke({"user": "u1", "log": []}, config)
    assert out["log"] == ["param", "get_store", "get_store,param,runtime"]
    assert seen == [{"v": 1}]
    outside = DurableStore(backend)
    rows = {r.key: r for r in outside.search_records(("u", "u1"))}
    thread = config["configurable"]["thread_id"]
    assert {k: (r.run_id, r.step, r.node) for k, r in rows.items()} == {
        "param": (thread, 1, "a"),
        "get_store": (thread, 2, "b"),
        "runtime": (thread, 3, "c"),
    }


def test_the_functional_api_reaches_it(backend: Any) -> None:
    @task
    def note(text: str) -> str:
        get_store().put(("notes",), text, {"text": text})
        return text

    @entrypoint(checkpointer=backend, store=DurableStore(backend))
    def program(texts: list[str], *, store: Any) -> list[str]:
        done = [note(t).result() for t in texts]
        return [*done, str(len(store.search(("notes",))))]

    assert program.invoke(["x", "y"], cfg()) == ["x", "y", "2"]
    assert {i.key for i in DurableStore(backend).search(("notes",))} == {"x", "y"}


def test_a_failed_attempt_writes_nothing_and_a_retry_writes_once(backend: Any) -> None:
    attempts: list[int] = []

    def flaky(s: S, store: Any) -> dict[str, Any]:
        attempts.append(1)
        store.put(("r",), f"attempt-{len(attempts)}", {"n": len(attempts)})
        store.put(("r",), "counter", {"n": len(attempts)})
        if len(attempts) == 1:
            raise ConnectionError("flaky")
        return {"log": ["ok"]}

    b = StateGraph(S)
    b.add_node(
        "flaky", flaky, retry_policy=RetryPolicy(max_attempts=2, initial_interval=0.0, jitter=False)
    )
    b.add_edge(START, "flaky")
    b.add_edge("flaky", END)
    graph = b.compile(checkpointer=backend, store=DurableStore(backend))
    graph.invoke({"user": "u", "log": []}, cfg())
    store = DurableStore(backend)
    assert {i.key for i in store.search(("r",))} == {"attempt-2", "counter"}
    assert store.history(("r",), "counter") == []  # written once: no version replaced


def test_a_failing_node_leaves_no_memory(backend: Any) -> None:
    def bad(s: S, store: Any) -> dict[str, Any]:
        store.put(("f",), "k", {"v": 1})
        raise ValueError("boom")

    b = StateGraph(S)
    b.add_node("bad", bad)
    b.add_edge(START, "bad")
    b.add_edge("bad", END)
    graph = b.compile(checkpointer=backend, store=DurableStore(backend))
    with pytest.raises(ValueError):
        graph.invoke({"user": "u", "log": []}, cfg())
    assert DurableStore(backend).get(("f",), "k") is None


def test_a_finished_peer_keeps_its_memory_and_is_not_run_again(backend: Any) -> None:
    runs: list[str] = []
    fail = [True]

    def good(s: S, store: Any) -> dict[str, Any]:
        runs.append("good")
        store.put(("peer",), "good", {"v": len(runs)})
        return {"log": ["good"]}

    def bad(s: S) -> dict[str, Any]:
        runs.append("bad")
        if fail[0]:
            raise ValueError("first time")
        return {"log": ["bad"]}

    b = StateGraph(S)
    b.add_node("good", good)
    b.add_node("bad", bad)
    b.add_edge(START, "good")
    b.add_edge(START, "bad")
    b.add_edge("good", END)
    b.add_edge("bad", END)
    graph = b.compile(checkpointer=backend, store=DurableStore(backend))
    config = cfg()
    with pytest.raises(ValueError):
        graph.invoke({"user": "u", "log": []}, config)
    store = DurableStore(backend)
    assert store.get(("peer",), "good") is not None  # committed with the peer's record
    fail[0] = False
    graph.invoke(None, config)
    assert runs.count("good") == 1
    assert store.history(("peer",), "good") == []


@pytest.mark.parametrize("durability", ["sync", "async", "exit"])
def test_later_steps_read_earlier_writes_in_every_durability(backend: Any, durability: str) -> None:
    def write(s: S, store: Any) -> dict[str, Any]:
        store.put(("d", s["user"]), "k", {"v": "written"})
        return {"log": ["w"]}

    def read(s: S, store: Any) -> dict[str, Any]:
        item = store.get(("d", s["user"]), "k")
        hits = store.search(("d", s["user"]))
        return {"log": [item.value["v"] if item else "missing", str(len(hits))]}

    b = StateGraph(S)
    b.add_node("write", write)
    b.add_node("read", read)
    b.add_edge(START, "write")
    b.add_edge("write", "read")
    b.add_edge("read", END)
    graph = b.compile(checkpointer=backend, store=DurableStore(backend))
    user = uuid.uuid4().hex[:6]
    out = graph.invoke({"user": user, "log": []}, cfg(), durability=durability)
    assert out["log"] == ["w", "written", "1"]
    assert DurableStore(backend).get(("d", user), "k") is not None


def test_a_lost_lease_writes_no_memory(backend: Any) -> None:
    """A zombie: the node writes, then another worker takes the run over; the step's
    commit is refused whole, its memory write with it."""

    def zombie(s: S, config: Any, store: Any) -> dict[str, Any]:
        store.put(("z",), "k", {"v": 1})
        thread = config["configurable"]["thread_id"]
        backend.claim("default", thread, owner="the-new-holder", lease_seconds=60, steal=True)
        return {"log": ["z"]}

    b = StateGraph(S)
    b.add_node("zombie", zombie)
    b.add_edge(START, "zombie")
    b.add_edge("zombie", END)
    graph = b.compile(checkpointer=backend, store=DurableStore(backend))
    with pytest.raises(LeaseLost):
        graph.invoke({"user": "u", "log": []}, cfg())
    assert DurableStore(backend).get(("z",), "k") is None


def test_async_nodes_and_an_in_memory_store(backend: Any) -> None:
    memory = InMemoryStore()

    async def remember(s: S, store: Any) -> dict[str, Any]:
        await store.aput(("a",), "k", {"v": s["user"]})
        item = await store.aget(("a",), "k")
        return {"log": [item.value["v"]]}

    b = StateGraph(S)
    b.add_node("remember", remember)
    b.add_edge(START, "remember")
    b.add_edge("remember", END)
    graph = b.compile(checkpointer=backend, store=memory)
    out = asyncio.run(graph.ainvoke({"user": "u9", "log": []}, cfg()))
    assert out["log"] == ["u9"]
    assert memory.get(("a",), "k").value == {"v": "u9"}  # type: ignore[union-attr]
    durable = DurableStore(backend)
    graph2 = b.compile(checkpointer=backend, store=durable)
    out2 = asyncio.run(graph2.ainvoke({"user": "u8", "log": []}, cfg()))
    assert out2["log"] == ["u8"]
    assert durable.get(("a",), "k").value == {"v": "u8"}  # type: ignore[union-attr]


def test_compile_refuses_what_is_not_a_store() -> None:
    from wayline.errors import GraphError

    b = StateGraph(S)
    b.add_node("n", lambda s: {})
    b.add_edge(START, "n")
    with pytest.raises(GraphError, match="not a long-term memory store"):
        b.compile(store={"not": "a store"})


def test_a_subgraph_uses_its_parents_store(backend: Any) -> None:
    def inner(s: S, store: Any) -> dict[str, Any]:
        store.put(("sub", s["user"]), "k", {"from": "child"})
        return {"log": ["inner"]}

    child = StateGraph(S)
    child.add_node("inner", inner)
    child.add_edge(START, "inner")
    child.add_edge("inner", END)
    parent = StateGraph(S)
    parent.add_node("child", child.compile())
    parent.add_edge(START, "child")
    parent.add_edge("child", END)
    graph = parent.compile(checkpointer=backend, store=DurableStore(backend))
    user = uuid.uuid4().hex[:6]
    assert graph.invoke({"user": user, "log": []}, cfg())["log"] == ["inner"]
    row = DurableStore(backend).record(("sub", user), "k")
    assert row is not None and row.node == "inner" and row.value == {"from": "child"}
