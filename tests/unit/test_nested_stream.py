"""``stream`` called inside a node runs the graph as the node's subgraph (nested_stream):
its caller gets the child's own chunks, the parent's ``stream(subgraphs=True)`` gets them
under the child's namespace, and a caller that stops early does not leave the child
running past its node."""

from __future__ import annotations

import asyncio
import contextlib
import operator
from typing import Annotated, Any

from typing_extensions import TypedDict

from wayline.graph import START, StateGraph


class Log(TypedDict):
    log: Annotated[list[str], operator.add]


def child_graph(calls: list[str]) -> Any:
    def a(state: Log) -> dict[str, Any]:
        calls.append("a")
        return {"log": ["a"]}

    def b(state: Log) -> dict[str, Any]:
        calls.append("b")
        return {"log": ["b"]}

    g = StateGraph(Log)
    g.add_node("a", a)
    g.add_node("b", b)
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    return g.compile()


def test_stream_in_a_node_is_its_subgraph() -> None:
    calls: list[str] = []
    child = child_graph(calls)
    seen: list[Any] = []

    def outer(state: Log, config: Any) -> dict[str, Any]:
        for chunk in child.stream({"log": []}, config, stream_mode="updates"):
            seen.append(chunk)
        return {"log": ["outer"]}

    g = StateGraph(Log)
    g.add_node("outer", outer)
    g.add_edge(START, "outer")
    app = g.compile()
    events = list(app.stream({"log": []}, stream_mode="updates", subgraphs=True))
    assert seen == [{"a": {"log": ["a"]}}, {"b": {"log": ["b"]}}]  # the child's own, root
    nested = [(ns[0].split(":")[0], chunk) for ns, chunk in events if ns]
    assert nested == [("outer", {"a": {"log": ["a"]}}), ("outer", {"b": {"log": ["b"]}})]
    assert events[-1] == ((), {"outer": {"log": ["outer"]}})
    assert len(list(app.stream({"log": []}, stream_mode="updates"))) == 1  # none nested


def test_a_caller_that_stops_early_waits_for_the_child() -> None:
    calls: list[str] = []
    child = child_graph(calls)

    def outer(state: Log) -> dict[str, Any]:
        for _ in child.stream({"log": []}, stream_mode="updates"):
            break
        return {"log": [f"child ran {len(calls)}"]}

    async def aouter(state: Log) -> dict[str, Any]:
        # an async generator is closed when asked (aclosing), not when the loop breaks
        async with contextlib.aclosing(child.astream({"log": []}, stream_mode="updates")) as it:
            async for _ in it:
                break
        return {"log": [f"child ran {len(calls)}"]}

    for node in (outer, aouter):
        calls.clear()
        g = StateGraph(Log)
        g.add_node("outer", node)
        g.add_edge(START, "outer")
        app = g.compile()
        sync = node is outer
        out = app.invoke({"log": []}) if sync else asyncio.run(app.ainvoke({"log": []}))
        assert out == {"log": ["child ran 2"]}


def test_a_nodes_second_subgraph_call_has_its_number_as_a_namespace_segment() -> None:
    """As LangGraph's ``node:task_id|1``: the second call of a subgraph in one node streams
    under ``("node:task_id", "1")``, the first under ``("node:task_id",)``."""
    first, second = child_graph([]), child_graph([])

    def node(state: Log) -> dict[str, Any]:
        first.invoke({"log": []})
        second.invoke({"log": []})
        return {"log": ["node"]}

    g = StateGraph(Log)
    g.add_node("node", node)
    g.add_edge(START, "node")
    app = g.compile()
    spaces = [ns for ns, _ in app.stream({"log": []}, subgraphs=True) if ns]
    assert len(spaces) == 4
    assert spaces[0] == spaces[1] and len(spaces[0]) == 1
    assert spaces[0][0].startswith("node:")
    assert spaces[2] == spaces[3] == (spaces[0][0], "1")
