"""New input given at an input checkpoint (``source == "input"``, the state before a turn's
input) replaces that turn's input, as LangGraph's: the turn that followed is not in the
result. ``None`` at the same checkpoint runs the old input again."""

import operator
from typing import Annotated

from langgraph.graph import START, StateGraph
from typing_extensions import TypedDict


class Turns(TypedDict):
    said: Annotated[list, operator.add]


def main(checkpointer):
    graph = (
        StateGraph(Turns)
        .add_node("echo", lambda s: {"said": [f"echo:{s['said'][-1]}"]})
        .add_edge(START, "echo")
        .compile(checkpointer=checkpointer)
    )
    config = {"configurable": {"thread_id": "turns"}}
    graph.invoke({"said": ["one"]}, config)
    graph.invoke({"said": ["two"]}, config)
    before_two = next(
        s
        for s in graph.get_state_history(config)
        if s.metadata["source"] == "input" and s.values.get("said") == ["one", "echo:one"]
    )
    replaced = graph.invoke({"said": ["three"]}, before_two.config)
    again = graph.invoke(None, before_two.config)
    return [before_two.next, replaced["said"], again["said"]]
