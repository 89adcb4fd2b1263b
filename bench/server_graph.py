"""The graph ``bench/server.py`` serves with ``wayline serve``: one trivial node looping on
itself for ``steps`` node steps, appending a ~100-byte item each step (the same graph the
script gives ``langgraph dev``)."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from wayline import END, START, StateGraph


class State(TypedDict, total=False):
    log: Annotated[list[str], operator.add]
    n: int
    steps: int


def tick(s: State) -> dict[str, Any]:
    return {"log": ["x" * 100], "n": s.get("n", 0) + 1}


g = StateGraph(State, name="bench")
g.add_node("tick", tick)
g.add_edge(START, "tick")
g.add_conditional_edges("tick", lambda s: "tick" if s["n"] < s["steps"] else END)
graph = g
