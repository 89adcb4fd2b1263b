"""What LangGraph reports of a task (the ``tasks`` stream): its result, where a node that
writes one channel several times (``Command(update=[("foo", a), ("foo", b)])``) has the
writes gathered as ``{"foo": {"$writes": [a, b]}}``, in write order (a single write is the
value itself); and its triggers: every channel the node subscribes to, sorted, whichever
fired (``branch:to:<node>`` and ``join:<a>+<b>:<node>`` per waiting edge, deferred or not),
``("__pregel_push",)`` for a ``Send``. A step's tasks stream as each finishes: its update,
then its result, before a slower peer's (the slow one here waits until the fast one's result
has been seen, 5 s at most)."""

import asyncio
import threading
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


def _finish_order(checkpointer, flavor: str) -> tuple:
    fast_seen = threading.Event()

    def slow(_: State) -> dict:
        fast_seen.wait(5)
        return {"foo": "slow"}

    g = StateGraph(State)
    g.add_node("slow", slow)
    g.add_node("fast", _writes("fast"))
    g.add_edge(START, "slow")
    g.add_edge(START, "fast")
    app = g.compile(checkpointer=checkpointer)
    config = {"configurable": {"thread_id": f"finish-{flavor}"}}
    modes = ["updates", "tasks"]
    chunks: list = []

    def see(mode: str, chunk: dict) -> None:
        if mode == "tasks" and "result" in chunk and chunk["name"] == "fast":
            fast_seen.set()
        chunks.append((mode, chunk["name"] if mode == "tasks" else chunk))

    if flavor == "sync":
        for mode, chunk in app.stream({"foo": ""}, config, stream_mode=modes):
            see(mode, chunk)
    else:

        async def consume() -> None:
            async for mode, chunk in app.astream({"foo": ""}, config, stream_mode=modes):
                see(mode, chunk)

        asyncio.run(consume())
    return sorted(chunks[:2], key=repr), chunks[2:]


def _as_tasks_finish(checkpointer) -> list:
    return [_finish_order(checkpointer, flavor) for flavor in ("sync", "async")]


def main(checkpointer):
    return [
        _repeated_writes(checkpointer),
        _triggers(checkpointer),
        _as_tasks_finish(checkpointer),
    ]
