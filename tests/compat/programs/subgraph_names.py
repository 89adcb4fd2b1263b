"""A subgraph's checkpoints named as LangGraph names them: under the root's ``thread_id``,
the subgraph's ``checkpoint_ns`` and a ``checkpoint_map`` of the checkpoints above it, which
are also its ``metadata["parents"]``, in ``get_state(subgraphs=True)`` (two levels deep),
in a child's own ``get_state`` and history, and in the ``checkpoints`` stream; replaying
from the deepest child's config asks its question again. Ids are compared by the order
they first appear in. With durability "exit" a listed past checkpoint's tasks carry no
results (LangGraph saves no writes for it)."""

import operator
from typing import Annotated, TypedDict

from langgraph.graph import START, StateGraph
from langgraph.types import Command, interrupt


class State(TypedDict):
    value: Annotated[list, operator.add]


def build(checkpointer):
    def ask(state):
        return {"value": [f"said:{interrupt('Q?')}"]}

    inner = (
        StateGraph(State)
        .add_node("step", lambda s: {"value": ["step"]})
        .add_node("ask", ask)
        .add_edge(START, "step")
        .add_edge("step", "ask")
        .compile()
    )
    middle = StateGraph(State).add_node("inner", inner).add_edge(START, "inner").compile()
    return (
        StateGraph(State)
        .add_node("outer", middle)
        .add_edge(START, "outer")
        .compile(checkpointer=checkpointer)
    )


class Ids:
    def __init__(self):
        self.seen = {}

    def __call__(self, value):
        if isinstance(value, str) and len(value) == 36 and value.count("-") == 4:
            return self.seen.setdefault(value, f"id{len(self.seen)}")
        if isinstance(value, str) and ":" in value:  # a namespace: node:task id|...
            return "|".join(part.split(":")[0] for part in value.split("|"))
        if isinstance(value, dict):
            return {self(k): self(v) for k, v in sorted(value.items())}
        return value


def view(ids, snapshot):
    return (
        ids(snapshot.config),
        ids(snapshot.parent_config),
        ids(snapshot.metadata.get("parents")),
        snapshot.values,
    )


def main(checkpointer):
    ids = Ids()
    graph = build(checkpointer)
    config = {"configurable": {"thread_id": "names"}}
    out = []
    for ns, event in graph.stream({"value": []}, config, stream_mode="checkpoints", subgraphs=True):
        if ns and event["metadata"]["source"] == "loop":
            out.append(("stream", len(ns), ids(event["config"]), ids(event["metadata"]["parents"])))
    root = graph.get_state(config, subgraphs=True)
    middle = root.tasks[0].state
    deepest = middle.tasks[0].state
    out.append(("root", view(ids, root)))
    out.append(("middle", view(ids, middle)))
    out.append(("deepest", view(ids, deepest)))
    task_config = graph.get_state(config).tasks[0].state
    out.append(("task state", ids(task_config)))
    out.append(("child read", view(ids, graph.get_state(task_config))))
    out.append(("child history", [view(ids, s) for s in graph.get_state_history(task_config)]))
    replayed = graph.invoke(None, deepest.config)
    out.append(("replayed", [i.value for i in replayed["__interrupt__"]]))
    exit_thread = {"configurable": {"thread_id": "exit"}}
    graph.invoke({"value": []}, exit_thread, durability="exit")
    graph.invoke(Command(resume="yes"), exit_thread, durability="exit")
    out.append(
        (
            "exit history",
            [
                (s.metadata["step"], [(t.name, t.result) for t in s.tasks])
                for s in graph.get_state_history(exit_thread)
            ],
        )
    )
    return out
