"""Two parallel nodes interrupt; one is answered by id (Command(resume={id: value})): its
writes show in the result and the state while the other still waits; a peer that
finished beside an interrupt keeps its writes."""

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
    return {"log": ["b:" + interrupt("qb")]}


def c(state: S):
    return {"log": ["c"]}


def main(checkpointer):
    g = StateGraph(S)
    g.add_node("a", a)
    g.add_node("b", b)
    g.add_node("c", c)
    g.add_edge(START, "a")
    g.add_edge(START, "b")
    app = g.compile(checkpointer=checkpointer)
    seen = []
    config = {"configurable": {"thread_id": "p1"}}
    first = app.invoke({"log": []}, config)
    seen.append(sorted(i.value for i in first["__interrupt__"]))
    state = app.get_state(config)
    seen.append((state.next, sorted(i.value for i in state.interrupts)))
    ids = {i.value: i.id for i in state.interrupts}
    seen.append(app.invoke(Command(resume={ids["qa"]: "1"}), config))
    seen.append((app.get_state(config).values, app.get_state(config).next))
    seen.append(list(app.stream(Command(resume={ids["qb"]: "2"}), config, stream_mode="values")))

    g2 = StateGraph(S)
    g2.add_node("b", b)
    g2.add_node("c", c)
    g2.add_edge(START, "b")
    g2.add_edge(START, "c")
    app2 = g2.compile(checkpointer=checkpointer)
    config = {"configurable": {"thread_id": "p2"}}
    chunks = list(app2.stream({"log": []}, config, stream_mode=["values", "updates"]))
    seen.append([chunk for mode, chunk in chunks if mode == "values"])
    # the finished peer's update and the interrupt come in an order that depends on timing
    seen.append(sorted((chunk for mode, chunk in chunks if mode == "updates"), key=list))
    seen.append((app2.get_state(config).values, app2.get_state(config).next))
    seen.append(app2.invoke(Command(resume="ok"), config))
    return seen
