"""What LangGraph reports as a task's result (the ``tasks`` stream): a node that writes one
channel several times (``Command(update=[("foo", a), ("foo", b)])``) has the writes gathered
as ``{"foo": {"$writes": [a, b]}}``, in write order; a single write is the value itself."""

from typing import Annotated

from langgraph.graph import END, START, StateGraph
from langgraph.types import Command
from typing_extensions import TypedDict


def _join(a: str, b: str) -> str:
    return ", ".join(x for x in (a, b) if x)


class State(TypedDict):
    foo: Annotated[str, _join]


def _repeated_writes(checkpointer) -> list:
    def one(_: State) -> Command:
        return Command(update=[("foo", "one.0"), ("foo", "one.1"), ("foo", "one.2")])

    g = StateGraph(State)
    g.add_node("one", one)
    g.add_node("two", lambda _: {"foo": "two"})
    g.add_edge(START, "one")
    g.add_edge("one", "two")
    g.add_edge("two", END)
    app = g.compile(checkpointer=checkpointer)
    config = {"configurable": {"thread_id": "repeated"}}
    seen = []
    for mode, chunk in app.stream({"foo": "in"}, config, stream_mode=["updates", "tasks"]):
        seen.append((mode, {k: v for k, v in chunk.items() if k != "id"}))
    return seen


def main(checkpointer):
    return [_repeated_writes(checkpointer)]
