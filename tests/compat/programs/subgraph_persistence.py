"""Subgraphs as LangGraph 1.2's own tests drive them: a child compiled with
``checkpointer=True`` keeps its state across the parent's steps and runs; a child's own
``compile(interrupt_before=...)`` pauses the parent, whose resume continues the child; a
single-value state (``Annotated[list, add]``); a router reading its own schema, and an
async one; an entrypoint without a checkpointer starts afresh each time."""

import asyncio
import operator
from typing import Annotated

from langgraph.func import entrypoint
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict


class Inner(TypedDict):
    my_key: Annotated[str, operator.add]
    my_other_key: str


class Outer(TypedDict):
    my_key: Annotated[str, operator.add]


def inner_graph():
    inner = StateGraph(Inner)
    inner.add_node("inner_1", lambda s: {"my_key": " got here", "my_other_key": s["my_key"]})
    inner.add_node("inner_2", lambda s: {"my_key": " and there"})
    inner.add_edge(START, "inner_1")
    inner.add_edge("inner_1", "inner_2")
    return inner


def persistent(checkpointer):
    class State(TypedDict):
        my_key: str

    graph = StateGraph(State)
    graph.add_node("inner", inner_graph().compile(checkpointer=True))
    graph.add_edge(START, "inner")
    graph.add_conditional_edges(
        "inner", lambda s: "inner" if s["my_key"].count("there") < 2 else END
    )
    app = graph.compile(checkpointer=checkpointer)
    config = {"configurable": {"thread_id": "p"}}
    first = list(app.stream({"my_key": ""}, config, subgraphs=True))
    return [first, app.invoke({"my_key": ""}, config)]


def paused(checkpointer):
    graph = StateGraph(Outer)
    graph.add_node("inner", inner_graph().compile(interrupt_before=["inner_2"]))
    graph.add_node("outer", lambda s: {"my_key": " and back"})
    graph.add_edge(START, "inner")
    graph.add_edge("inner", "outer")
    app = graph.compile(checkpointer=checkpointer)
    config = {"configurable": {"thread_id": "b"}}
    first = app.invoke({"my_key": ""}, config)
    waiting = app.get_state(config).next
    return [first, waiting, app.invoke(None, config), app.get_state(config).next]


class Private(TypedDict):
    baz: str


def routed(checkpointer):
    def node_1(state: Outer):
        return {"my_key": "x", "baz": "meow"}

    def router(state: Private):
        return ["to_list"] if state == {"baz": "meow"} else [END]

    async def arouter(state: Outer):
        await asyncio.sleep(0)
        return END

    graph = StateGraph(Outer)
    graph.add_node("node_1", node_1)
    graph.add_node("to_list", lambda s: {"my_key": "y"})
    graph.add_edge(START, "node_1")
    graph.add_conditional_edges("node_1", router)
    graph.add_conditional_edges("to_list", arouter)
    single = StateGraph(Annotated[list, operator.add])
    single.add_node("n", lambda items: [len(items)])
    single.add_edge(START, "n")
    app = single.compile(checkpointer=checkpointer)
    config = {"configurable": {"thread_id": "s"}}
    return [
        asyncio.run(graph.compile().ainvoke({"my_key": ""})),
        app.invoke(["a", "b"], config),
        list(app.stream(["c"], {"configurable": {"thread_id": "s2"}}, stream_mode="values")),
    ]


def fresh(checkpointer):
    @entrypoint()
    def flow(value, *, previous):
        return {"value": value, "previous": previous}

    config = {"configurable": {"thread_id": "e"}}
    return [flow.invoke(1, config), flow.invoke(2, config)]


def main(checkpointer):
    return [
        persistent(checkpointer),
        paused(checkpointer),
        routed(checkpointer),
        fresh(checkpointer),
    ]
