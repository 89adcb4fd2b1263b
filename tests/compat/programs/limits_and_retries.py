"""A loop whose only exit is the recursion limit (GraphRecursionError at run time),
RetryPolicy with LangGraph's argument names and default retry_on, batch, with_config,
get_graph().draw_mermaid()."""

import operator
from typing import Annotated

from langgraph.errors import GraphRecursionError
from langgraph.graph import START, StateGraph
from langgraph.types import RetryPolicy
from typing_extensions import TypedDict


class State(TypedDict):
    n: int
    log: Annotated[list, operator.add]


def main(checkpointer):
    seen = []
    loop = StateGraph(State)
    loop.add_node("ping", lambda s: {"n": s["n"] + 1})
    loop.add_node("pong", lambda s: {"log": ["pong"]})
    loop.add_edge(START, "ping")
    loop.add_edge("ping", "pong")
    loop.add_edge("pong", "ping")
    graph = loop.compile(checkpointer=checkpointer)
    config = {"configurable": {"thread_id": "loop"}, "recursion_limit": 7}
    try:
        graph.invoke({"n": 0, "log": []}, config)
    except GraphRecursionError:
        seen.append("recursion limit")
    seen.append(graph.get_state(config).values)
    mermaid = graph.get_graph().draw_mermaid()
    seen.append(mermaid.startswith("---\nconfig:") and "graph TD;" in mermaid)
    seen.append(sorted(line.strip() for line in mermaid.splitlines() if " --> " in line))

    attempts = {"flaky": 0, "buggy": 0}

    def flaky(state: State):
        attempts["flaky"] += 1
        if attempts["flaky"] < 3:
            raise ConnectionError("glitch")
        return {"log": ["flaky ok"]}

    def buggy(state: State):
        attempts["buggy"] += 1
        raise ValueError("a bug")

    fast = RetryPolicy(initial_interval=0.001, backoff_factor=1.0, max_interval=0.01, jitter=False)
    b = StateGraph(State)
    b.add_node("flaky", flaky, retry_policy=fast)
    b.add_node("buggy", buggy, retry_policy=fast)
    b.add_edge(START, "flaky")
    b.add_edge("flaky", "buggy")
    g = b.compile(checkpointer=checkpointer)
    try:
        g.invoke({"n": 0, "log": []}, {"configurable": {"thread_id": "r"}})
    except ValueError as exc:
        seen.append(f"ValueError: {exc}")
    seen.append(dict(attempts))

    simple = StateGraph(State)
    simple.add_node("inc", lambda s: {"n": s["n"] + 1})
    simple.add_edge(START, "inc")
    s = simple.compile(checkpointer=checkpointer)
    seen.append(
        s.batch(
            [{"n": 1, "log": []}, {"n": 5, "log": []}],
            [{"configurable": {"thread_id": "b1"}}, {"configurable": {"thread_id": "b2"}}],
        )
    )
    bound = s.with_config({"configurable": {"thread_id": "wc"}})
    seen.append(bound.invoke({"n": 10, "log": []}))
    seen.append(s.get_state({"configurable": {"thread_id": "wc"}}).values)
    return seen
