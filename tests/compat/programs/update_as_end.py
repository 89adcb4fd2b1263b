"""``update_state(config, None, as_node=END)`` ends the waiting step's tasks: the question
of an interrupted task is dropped and it never runs, a peer that finished in that step keeps
its writes and routes on, and the new checkpoint is an ``update``. Values given with
``as_node=END`` are refused, as LangGraph does not apply them."""

import operator
from typing import Annotated

from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt
from typing_extensions import TypedDict


class Steps(TypedDict):
    steps: Annotated[list, operator.add]


def build(checkpointer):
    def ask(state):
        return {"steps": [interrupt("may I?")]}

    return (
        StateGraph(Steps)
        .add_node("ask", ask)
        .add_node("peer", lambda s: {"steps": ["peer"]})
        .add_node("after_peer", lambda s: {"steps": ["after_peer"]})
        .add_edge(START, "ask")
        .add_edge(START, "peer")
        .add_edge("peer", "after_peer")
        .compile(checkpointer=checkpointer)
    )


def view(snapshot):
    return (
        snapshot.values,
        snapshot.next,
        [t.name for t in snapshot.tasks],
        [i.value for i in snapshot.interrupts],
        snapshot.metadata["source"],
        snapshot.metadata["step"],
    )


def main(checkpointer):
    graph = build(checkpointer)
    config = {"configurable": {"thread_id": "end"}}
    out = [graph.invoke({"steps": ["start"]}, config)["steps"]]
    out.append(view(graph.get_state(config)))
    try:
        graph.update_state(config, {"steps": ["given"]}, as_node=END)
    except Exception as exc:  # the error type is the observation
        out.append(type(exc).__name__)
    graph.update_state(config, None, as_node=END)
    out.append(view(graph.get_state(config)))
    out.append(graph.invoke(None, config)["steps"])
    out.append(view(graph.get_state(config)))
    return out
