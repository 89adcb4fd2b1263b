"""Node execution as LangGraph shows it: a graph compiled without a checkpointer saves no
checkpoint, so neither ``checkpoints`` nor ``debug`` streams one."""

import operator
from typing import Annotated

from langgraph.graph import START, StateGraph
from typing_extensions import TypedDict


class State(TypedDict):
    log: Annotated[list, operator.add]


def _no_checkpointer() -> list:
    g = StateGraph(State)
    g.add_node("a", lambda s: {"log": ["a"]})
    g.add_edge(START, "a")
    app = g.compile()
    seen = []
    for mode, chunk in app.stream({"log": []}, stream_mode=["debug", "checkpoints"]):
        seen.append((mode, chunk["type"], chunk["step"]) if mode == "debug" else (mode,))
    return seen


def main(checkpointer):
    return [_no_checkpointer()]
