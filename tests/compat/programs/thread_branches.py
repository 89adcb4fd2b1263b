"""A thread after going back: a replay and an edit of past checkpoints add branches to the
thread's history (a replay's first checkpoint is a ``fork`` copy of the one it went back
to, an edit's is the ``update``, each hanging from that checkpoint), the thread goes on
from the checkpoint written last, and the original branch stays as it was; a past
checkpoint still shows the interrupt its task raised there, answered or passed by. Also: a
checkpoint named by its id shows itself, not the pending writes of its unfinished step,
while the thread's head shows them; the checkpointer lists a failed task's error write."""

import operator
from typing import Annotated

from langgraph.graph import START, StateGraph
from langgraph.types import Command, RetryPolicy, interrupt
from typing_extensions import TypedDict


class State(TypedDict):
    value: Annotated[list, operator.add]


def build(checkpointer):
    def ask(state):
        return {"value": [f"human:{interrupt('What is your input?')}"]}

    return (
        StateGraph(State)
        .add_node("a", lambda s: {"value": ["a"]})
        .add_node("ask", ask)
        .add_node("b", lambda s: {"value": ["b"]})
        .add_edge(START, "a")
        .add_edge("a", "ask")
        .add_edge("ask", "b")
        .compile(checkpointer=checkpointer)
    )


def summary(graph, config):
    ids = {}
    out = []
    for s in graph.get_state_history(config):
        cid = s.config["configurable"]["checkpoint_id"]
        ids.setdefault(cid, len(ids))
    for s in graph.get_state_history(config):
        parent = s.parent_config["configurable"]["checkpoint_id"] if s.parent_config else None
        out.append(
            (
                ids[s.config["configurable"]["checkpoint_id"]],
                ids.get(parent),
                s.metadata["source"],
                s.next,
                s.values,
                [i.value for i in s.interrupts],
                [(t.name, [i.value for i in t.interrupts]) for t in s.tasks],
            )
        )
    return out


def failing(checkpointer):
    def two(state):
        raise ConnectionError("not good")

    graph = (
        StateGraph(State)
        .add_node("one", lambda s: {"value": ["one"]})
        .add_node("two", two, retry_policy=RetryPolicy(max_attempts=1))
        .add_edge(START, "one")
        .add_edge(START, "two")
        .compile(checkpointer=checkpointer)
    )
    config = {"configurable": {"thread_id": "failing"}}
    try:
        graph.invoke({"value": ["in"]}, config)
    except ConnectionError as exc:
        out = [type(exc).__name__]
    head = graph.get_state(config)
    named = graph.get_state(head.config)
    out.append((head.values, head.next, named.values, named.next))
    writes = checkpointer.get_tuple(config).pending_writes
    out.append(sorted((channel, value) for _, channel, value in writes))
    return out


def main(checkpointer):
    graph = build(checkpointer)
    config = {"configurable": {"thread_id": "1"}}
    graph.invoke({"value": []}, config)
    graph.invoke(Command(resume="old"), config)
    out = [summary(graph, config)]
    before_ask = next(s for s in graph.get_state_history(config) if s.next == ("ask",))
    replayed = graph.invoke(None, before_ask.config)
    out.append([i.value for i in replayed["__interrupt__"]])
    out.append(summary(graph, config))
    out.append(graph.invoke(Command(resume="new"), config)["value"])
    out.append(graph.get_state(config).values)
    before_b = next(s for s in graph.get_state_history(config) if s.next == ("b",))
    edited = graph.update_state(before_b.config, {"value": ["x"]})
    out.append(graph.get_state(edited).metadata["source"])
    out.append(graph.invoke(None, edited)["value"])
    out.append(summary(graph, config))
    out.append(graph.get_state(config).values)
    out.extend(failing(checkpointer))
    return out
