"""A failed task shows the error it raised (``PregelTask.error``, the exception's
``repr``) in ``get_state`` while the run waits at the failed step, and in
``get_state_history`` after a retry of the step succeeded; a task that did not fail
shows none. Sync ``invoke`` and async ``ainvoke`` alike."""

import asyncio
import operator
from typing import Annotated

from langgraph.graph import START, StateGraph
from typing_extensions import TypedDict


class Steps(TypedDict):
    steps: Annotated[list, operator.add]


def build(checkpointer, calls):
    def flaky(state):
        calls.append("flaky")
        if len(calls) == 1:
            raise RuntimeError("first try fails")
        return {"steps": ["flaky"]}

    return (
        StateGraph(Steps)
        .add_node("flaky", flaky)
        .add_node("after", lambda s: {"steps": ["after"]})
        .add_edge(START, "flaky")
        .add_edge("flaky", "after")
        .compile(checkpointer=checkpointer)
    )


def tasks(snapshot):
    return [(t.name, t.error) for t in snapshot.tasks]


def main(checkpointer):
    out = []
    for thread in ("sync", "async"):
        graph = build(checkpointer, [])
        config = {"configurable": {"thread_id": thread}}
        try:
            if thread == "sync":
                graph.invoke({"steps": ["start"]}, config)
            else:
                asyncio.run(graph.ainvoke({"steps": ["start"]}, config))
        except RuntimeError as exc:
            out.append(repr(exc))
        out.append(tasks(graph.get_state(config)))
        out.append(graph.invoke(None, config))
        out.append([(s.metadata["step"], tasks(s)) for s in graph.get_state_history(config)])
    return out
