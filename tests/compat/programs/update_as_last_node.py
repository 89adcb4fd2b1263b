"""``update_state(config, values)`` with no ``as_node`` writes as the node that ran last,
so the update routes by that node's edges: an edit that takes the tool call out of an
agent's answer ends the run instead of going on to the tools. A waiting edge's target stays
next whichever node the update writes as."""

import operator
from typing import Annotated

from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict


class Chat(TypedDict):
    calls: list
    log: Annotated[list, operator.add]


def agent_graph(checkpointer):
    return (
        StateGraph(Chat)
        .add_node("agent", lambda s: {"calls": ["search"], "log": ["agent"]})
        .add_node("tools", lambda s: {"calls": [], "log": ["tools"]})
        .add_edge(START, "agent")
        .add_conditional_edges("agent", lambda s: "tools" if s["calls"] else END)
        .add_edge("tools", "agent")
        .compile(checkpointer=checkpointer, interrupt_after=["agent"])
    )


def join_graph(checkpointer):
    return (
        StateGraph(Chat)
        .add_node("one", lambda s: {"log": ["one"]})
        .add_node("slow", lambda s: {"log": ["slow"]})
        .add_node("two", lambda s: {"log": ["two"]})
        .add_node("both", lambda s: {"log": ["both"]})
        .add_edge(START, "one")
        .add_edge(START, "slow")
        .add_edge("slow", "two")
        .add_edge(["one", "two"], "both")
        .compile(checkpointer=checkpointer, interrupt_before=["both"])
    )


def view(snapshot):
    return snapshot.values, snapshot.next, snapshot.metadata["source"]


def main(checkpointer):
    out = []
    graph = agent_graph(checkpointer)
    config = {"configurable": {"thread_id": "agent"}}
    graph.invoke({"calls": [], "log": []}, config)
    out.append(view(graph.get_state(config)))
    graph.update_state(config, {"calls": []})
    out.append(view(graph.get_state(config)))
    out.append(graph.invoke(None, config))
    graph = join_graph(checkpointer)
    config = {"configurable": {"thread_id": "join"}}
    graph.invoke({"calls": [], "log": []}, config)
    graph.update_state(config, {"log": ["edit"]})
    out.append(view(graph.get_state(config)))
    out.append(graph.invoke(None, config))
    return out
