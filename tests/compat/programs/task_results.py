"""What LangGraph reports of a task (the ``tasks`` stream): its result, where a node that
writes one channel several times (``Command(update=[("foo", a), ("foo", b)])``) has the
writes gathered as ``{"foo": {"$writes": [a, b]}}``, in write order (a single write is the
value itself); and its triggers: every channel the node subscribes to, sorted, whichever
fired (``branch:to:<node>`` and ``join:<a>+<b>:<node>`` per waiting edge, deferred or not),
``("__pregel_push",)`` for a ``Send``."""

from typing import Annotated

from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, Send
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


def _writes(value: str):
    return lambda _: {"foo": value}


def _triggers(checkpointer) -> list:
    seen = []
    for defer in (False, True):
        g = StateGraph(State)
        for name in ("a", "b", "c", "qa"):
            g.add_node(name, _writes(name), defer=defer and name == "qa")
        g.add_node("sent", lambda arg: {"foo": arg})
        g.add_edge(START, "a")
        g.add_edge(START, "b")
        g.add_edge("a", "c")
        g.add_edge(["a", "b"], "qa")
        g.add_edge("c", "qa")
        g.add_conditional_edges("qa", lambda s: [Send("sent", "x")] if len(s["foo"]) < 20 else END)
        app = g.compile(checkpointer=checkpointer)
        config = {"configurable": {"thread_id": f"triggers-{defer}"}}
        started = []  # the order of a step's tasks is not what this looks at
        for mode, chunk in app.stream({"foo": ""}, config, stream_mode=["tasks", "debug"]):
            if mode == "tasks" and "triggers" in chunk:
                started.append(("tasks", chunk["name"], chunk["triggers"]))
            elif mode == "debug" and chunk["type"] == "task":
                payload = chunk["payload"]
                started.append((chunk["step"], payload["name"], payload["triggers"]))
        seen.append(sorted(started, key=repr))
    return seen


def main(checkpointer):
    return [_repeated_writes(checkpointer), _triggers(checkpointer)]
