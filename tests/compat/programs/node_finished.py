"""The ``node_finished`` callback (``config["configurable"]["__pregel_node_finished"]``,
LangGraph's ``CONFIG_KEY_NODE_FINISHED``): called with each node's name as its task
finishes, at every subgraph level (a subgraph node after its own nodes), under invoke and
stream, sync and async; a resume reports only what ran after the interrupt; an error
handler is reported under its node's name (``__error_handler__<node>``), the failed node
not at all; an entrypoint's ``@task`` calls before the entrypoint, and not again when
their results are replayed on resume."""

import asyncio
import operator
from typing import Annotated, TypedDict

from langgraph.errors import NodeError
from langgraph.func import entrypoint, task
from langgraph.graph import START, StateGraph
from langgraph.types import Command, interrupt

KEY = "__pregel_node_finished"


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def step(name):
    def run(state: State):
        return {"log": [name]}

    return run


def _nested(checkpointer):
    grand = StateGraph(State)
    grand.add_node("g_one", step("g_one"))
    grand.add_node("g_two", step("g_two"))
    grand.add_edge(START, "g_one")
    grand.add_edge("g_one", "g_two")
    child = StateGraph(State)
    child.add_node("c_one", step("c_one"))
    child.add_node("c_sub", grand.compile(interrupt_before=["g_two"]))
    child.add_edge(START, "c_one")
    child.add_edge("c_one", "c_sub")
    parent = StateGraph(State)
    parent.add_node("p_one", step("p_one"))
    parent.add_node("p_a", step("p_a"))
    parent.add_node("p_sub", child.compile())
    parent.add_edge(START, "p_one")
    parent.add_edge("p_one", "p_sub")
    parent.add_edge("p_one", "p_a")
    return parent.compile(checkpointer=checkpointer)


def _graph(checkpointer) -> list:
    app = _nested(checkpointer)
    seen = []
    for thread, how in (("invoke", "invoke"), ("stream", "stream"), ("async", "ainvoke")):
        nodes: list[str] = []
        config = {"configurable": {"thread_id": thread, KEY: nodes.append}}
        for run in ({"log": []}, None):
            if how == "invoke":
                app.invoke(run, config)
            elif how == "stream":
                list(app.stream(run, config, stream_mode="updates", subgraphs=True))
            else:
                asyncio.run(app.ainvoke(run, config))
            # p_a runs beside p_sub: where it falls among p_sub's nodes is a race
            seen.append((thread, sorted(nodes), [n for n in nodes if n != "p_a"]))
            nodes.clear()
    return seen


def _handler(checkpointer) -> list:
    def fails(state: State) -> dict:
        raise RuntimeError("boom")

    def handler(state: State, error: NodeError) -> dict:
        return {"log": ["handled"]}

    g = StateGraph(State)
    g.add_node("fails", fails, error_handler=handler)
    g.add_edge(START, "fails")
    app = g.compile(checkpointer=checkpointer)
    nodes: list[str] = []
    out = app.invoke({"log": []}, {"configurable": {"thread_id": "handler", KEY: nodes.append}})
    return [out, nodes]


def _functional(checkpointer) -> list:
    @task
    def double(x: int) -> int:
        return x * 2

    @entrypoint(checkpointer=checkpointer)
    def flow(x: int) -> int:
        a = double(x).result()
        b = double(a).result()
        return b + interrupt("more?")

    nodes: list[str] = []
    config = {"configurable": {"thread_id": "functional", KEY: nodes.append}}
    seen = [flow.invoke(1, config), list(nodes)]
    seen += [flow.invoke(Command(resume=5), config), list(nodes)]
    return seen


def main(checkpointer):
    return [_graph(checkpointer), _handler(checkpointer), _functional(checkpointer)]
