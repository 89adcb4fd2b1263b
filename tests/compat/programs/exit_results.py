"""With durability "exit", a past checkpoint in the history carries the results its
invocation saved when it stopped at an interrupt: the tasks of the step that finished
beside the one that asked (LangGraph saves their writes with the checkpoint), not what a
later invocation wrote; a step stopped before by a breakpoint carries none."""

import operator
from typing import Annotated, TypedDict

from langgraph.graph import START, StateGraph
from langgraph.types import Command, Send, interrupt


class State(TypedDict):
    log: Annotated[list, operator.add]


def _asking(checkpointer) -> list:
    def fan(state):
        return [Send("work", "a"), Send("ask", "b")]

    def ask(arg):
        return {"log": [f"ask:{interrupt('Q?')}"]}

    g = StateGraph(State)
    g.add_node("start", lambda s: {"log": ["start"]})
    g.add_node("work", lambda arg: {"log": [f"work:{arg}"]})
    g.add_node("ask", ask)
    g.add_node("peer", lambda s: {"log": ["peer"]})
    g.add_node("after", lambda s: {"log": ["after"]})
    g.add_edge(START, "start")
    g.add_conditional_edges("start", fan)
    g.add_edge("start", "peer")
    g.add_edge("peer", "after")
    app = g.compile(checkpointer=checkpointer)
    config = {"configurable": {"thread_id": "asking"}}
    app.invoke({"log": []}, config, durability="exit")
    app.invoke(Command(resume="yes"), config, durability="exit")
    return _listing(app, config)


def _breakpoint(checkpointer) -> list:
    g = StateGraph(State)
    g.add_node("one", lambda s: {"log": ["one"]})
    g.add_node("two", lambda s: {"log": ["two"]})
    g.add_node("three", lambda s: {"log": ["three"]})
    g.add_edge(START, "one")
    g.add_edge("one", "two")
    g.add_edge("one", "three")
    app = g.compile(checkpointer=checkpointer, interrupt_before=["two"])
    config = {"configurable": {"thread_id": "breakpoint"}}
    app.invoke({"log": []}, config, durability="exit")
    app.invoke(None, config, durability="exit")
    return _listing(app, config)


def _listing(app, config) -> list:
    return [
        (
            s.metadata["step"],
            s.next,
            s.values,
            [(t.name, t.result, bool(t.interrupts)) for t in s.tasks],
        )
        for s in app.get_state_history(config)
    ]


def main(checkpointer):
    return [("asking", _asking(checkpointer)), ("breakpoint", _breakpoint(checkpointer))]
