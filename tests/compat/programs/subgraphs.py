"""Subgraphs: a compiled graph as a node (shared keys), a node that invokes a subgraph, an
interrupt inside a subgraph resumed from the parent, get_state(subgraphs=True),
stream(subgraphs=True), and Command(graph=Command.PARENT)."""

import operator
from typing import Annotated

from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt
from typing_extensions import TypedDict


class Parent(TypedDict):
    log: Annotated[list, operator.add]
    topic: str


class Child(TypedDict):
    log: Annotated[list, operator.add]
    topic: str
    notes: str


def research(state: Child):
    return {"notes": f"notes on {state['topic']}", "log": ["research"]}


def review(state: Child):
    verdict = interrupt({"notes": state["notes"]})
    return {"log": [f"review:{verdict}"]}


def escalate(state: Child):
    return Command(graph=Command.PARENT, goto="fallback", update={"log": ["escalated"]})


def child_graph():
    b = StateGraph(Child)
    b.add_node("research", research)
    b.add_node("review", review)
    b.add_edge(START, "research")
    b.add_edge("research", "review")
    b.add_edge("review", END)
    return b.compile()


def main(checkpointer):
    child = child_graph()

    def prepare(state: Parent):
        return {"log": ["prepare"]}

    def publish(state: Parent):
        return {"log": ["publish"]}

    def fallback(state: Parent):
        return {"log": ["fallback"]}

    b = StateGraph(Parent)
    b.add_node("prepare", prepare)
    b.add_node("child", child)
    b.add_node("publish", publish)
    b.add_edge(START, "prepare")
    b.add_edge("prepare", "child")
    b.add_edge("child", "publish")
    graph = b.compile(checkpointer=checkpointer)
    seen = []
    config = {"configurable": {"thread_id": "s1"}}
    for ns, chunk in graph.stream({"log": [], "topic": "owls"}, config, subgraphs=True):
        seen.append((len(ns), [part.split(":")[0] for part in ns], chunk))
    state = graph.get_state(config, subgraphs=True)
    seen.append((state.next, [i.value for i in state.interrupts]))
    seen.append([(t.name, t.state.values, t.state.next) for t in state.tasks])
    for mode, chunk in graph.stream(Command(resume="fine"), config, stream_mode=["updates"]):
        seen.append((mode, chunk))
    seen.append(graph.get_state(config).values)

    def call_child(state: Parent):
        out = child.invoke({"log": [], "topic": state["topic"]})
        return {"log": out["log"]}

    b2 = StateGraph(Parent)
    b2.add_node("call_child", call_child)
    b2.add_edge(START, "call_child")
    g2 = b2.compile(checkpointer=checkpointer)
    config = {"configurable": {"thread_id": "s2"}}
    seen.append(g2.invoke({"log": [], "topic": "bees"}, config))
    seen.append(g2.invoke(Command(resume="ok"), config))

    c3 = StateGraph(Child)
    c3.add_node("escalate", escalate)
    c3.add_edge(START, "escalate")
    b3 = StateGraph(Parent)
    b3.add_node("child", c3.compile())
    b3.add_node("fallback", fallback)
    b3.add_node("publish", publish)
    b3.add_edge(START, "child")
    b3.add_edge("child", "publish")
    g3 = b3.compile(checkpointer=checkpointer)
    seen.append(g3.invoke({"log": [], "topic": "x"}, {"configurable": {"thread_id": "s3"}}))
    return seen
