"""A checkpointer's ``list`` of a thread whose graph runs subgraphs: a config naming no
``checkpoint_ns`` lists every namespace (the root's checkpoints, then each subgraph's, each
newest first, under the root's thread), ``checkpoint_ns=""`` the root's only, under
durability sync, async and exit (a subgraph the run finished is not listed in exit mode; one
that stopped at an interrupt is, with its one checkpoint); the subgraph's durability is its
parent's."""

import operator
from typing import Annotated, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt


class Inner(TypedDict):
    my_key: Annotated[str, operator.add]
    other: str


class Outer(TypedDict):
    my_key: str


def _graph(checkpointer, *, ask: bool):
    def inner_1(state: Inner):
        return {"my_key": " got here", "other": state["my_key"]}

    def inner_2(state: Inner):
        said = interrupt("more?") if ask else ""
        return {"my_key": f" and there{said}"}

    inner = StateGraph(Inner)
    inner.add_node("inner_1", inner_1)
    inner.add_node("inner_2", inner_2)
    inner.add_edge(START, "inner_1")
    inner.add_edge("inner_1", "inner_2")
    inner.add_edge("inner_2", END)
    outer = StateGraph(Outer)
    outer.add_node("inner", inner.compile(checkpointer=checkpointer))
    outer.add_edge(START, "inner")
    outer.add_conditional_edges(
        "inner", lambda s: "inner" if s["my_key"].count("there") < 2 else END
    )
    return outer.compile(checkpointer=checkpointer)


def listing(checkpointer, config):
    out = []
    for c in checkpointer.list(config):
        ns = c.config["configurable"]["checkpoint_ns"]
        out.append((ns.split(":")[0], c.metadata["step"], c.metadata["source"]))
    return out


def main(checkpointer):
    seen = []
    for durability in ("sync", "async", "exit"):
        app = _graph(checkpointer, ask=False)
        thread = f"plain-{durability}"
        config = {"configurable": {"thread_id": thread}}
        seen.append(app.invoke({"my_key": ""}, config, durability=durability))
        seen.append((durability, listing(checkpointer, config)))
        root = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
        seen.append((durability, len(listing(checkpointer, root))))
    for durability in ("sync", "exit"):
        app = _graph(checkpointer, ask=True)
        config = {"configurable": {"thread_id": f"ask-{durability}"}}
        seen.append(app.invoke({"my_key": ""}, config, durability=durability))
        seen.append((durability, "asked", listing(checkpointer, config)))
        seen.append(app.invoke(Command(resume="!"), config, durability=durability))
        seen.append((durability, "answered", listing(checkpointer, config)))
    return seen
