"""What a resumed run streams: the state it starts from, then its steps; a breakpoint
streams an interrupt with no question; new input on a paused thread."""

import operator
from typing import Annotated

from langgraph.graph import START, StateGraph
from langgraph.types import Command, interrupt
from typing_extensions import TypedDict


class S(TypedDict):
    log: Annotated[list, operator.add]


def a(state: S):
    return {"log": ["a:" + interrupt("qa")]}


def b(state: S):
    return {"log": ["b"]}


def main(checkpointer):
    g = StateGraph(S)
    g.add_node("a", a)
    g.add_node("b", b)
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    app = g.compile(checkpointer=checkpointer, interrupt_before=["b"])
    config = {"configurable": {"thread_id": "r"}}
    seen = [list(app.stream({"log": []}, config, stream_mode="values"))]
    seen.append(list(app.stream(Command(resume="x"), config, stream_mode="values")))
    seen.append(list(app.stream(None, config, stream_mode="values")))
    seen.append(list(app.stream({"log": ["again"]}, config, stream_mode="values")))
    seen.append(list(app.stream(Command(resume="y"), config, stream_mode=["values", "updates"])))
    seen.append(app.invoke(None, config))
    return seen
