"""A step's updates on a live stream go out as its tasks finish (before what a slower
peer's subgraph emits later), a resumed step streams first what its finished tasks wrote
before, and ``interrupt_after`` counts the tasks that had finished before the step was
interrupted, as in LangGraph."""

from __future__ import annotations

import asyncio
import operator
import threading
from collections.abc import Iterable
from typing import Annotated, Any

from typing_extensions import TypedDict

import wayline
from wayline.graph import START, StateGraph


class Log(TypedDict):
    log: Annotated[list[str], operator.add]


def graph(go: threading.Event | None, **compile_args: Any) -> Any:
    """``inner`` (a subgraph c1 -> c2, paused before c2 when ``go`` is None) runs beside
    ``fast``; both lead to ``join``. With ``go``, c1 waits (5 s at most) for it."""

    def c1(state: Log) -> dict[str, Any]:
        if go is not None:
            go.wait(5)
        return {"log": ["c1"]}

    child = StateGraph(Log)
    child.add_node("c1", c1)
    child.add_node("c2", lambda s: {"log": ["c2"]})
    child.add_edge(START, "c1")
    child.add_edge("c1", "c2")
    parent = StateGraph(Log)
    parent.add_node("inner", child.compile(interrupt_before=[] if go else ["c2"]))
    parent.add_node("fast", lambda s: {"log": ["fast"]})
    parent.add_node("join", lambda s: {"log": ["join"]})
    parent.add_edge(START, "inner")
    parent.add_edge(START, "fast")
    parent.add_edge(["inner", "fast"], "join")
    return parent.compile(checkpointer=wayline.connect("sqlite:///:memory:"), **compile_args)


def cfg(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def order(chunks: Iterable[tuple[tuple[str, ...], dict[str, Any]]]) -> list[tuple[int, str]]:
    return [(len(ns), name) for ns, chunk in chunks for name in chunk]


def test_a_task_update_goes_out_before_what_a_slower_peer_emits_later() -> None:
    go = threading.Event()
    seen = []
    for ns, chunk in graph(go).stream({"log": []}, cfg("t"), subgraphs=True):
        seen.append((ns, chunk))
        if "fast" in chunk:
            go.set()  # c1, in the slower peer, finishes only once fast's update is here
    assert order(seen) == [(0, "fast"), (1, "c1"), (1, "c2"), (0, "inner"), (0, "join")]


def test_the_async_driver_streams_updates_as_tasks_finish_too() -> None:
    go = threading.Event()

    async def consume() -> list[Any]:
        seen = []
        async for ns, chunk in graph(go).astream({"log": []}, cfg("t"), subgraphs=True):
            seen.append((ns, chunk))
            if "fast" in chunk:
                go.set()
        return seen

    assert order(asyncio.run(consume())) == [
        (0, "fast"),
        (1, "c1"),
        (1, "c2"),
        (0, "inner"),
        (0, "join"),
    ]


def test_a_resumed_step_streams_its_finished_tasks_updates_first_marked_cached() -> None:
    app = graph(None)
    assert list(app.stream({"log": []}, cfg("t"))) == [
        {"fast": {"log": ["fast"]}},
        {"__interrupt__": ()},
    ]
    assert list(app.stream(None, cfg("t"))) == [
        {"fast": {"log": ["fast"]}, "__metadata__": {"cached": True}},
        {"inner": {"log": ["c1", "c2"]}},
        {"join": {"log": ["join"]}},
    ]


def test_interrupt_after_counts_a_task_that_finished_before_the_step_was_interrupted() -> None:
    app = graph(None, interrupt_after=["fast"])
    list(app.stream({"log": []}, cfg("t")))  # the child's breakpoint pauses the step
    values = list(app.stream(None, cfg("t"), stream_mode="values"))
    assert values[-1] == {"log": ["fast", "c1", "c2"]}  # folded by node name
    assert app.get_state(cfg("t")).next == ("join",)


def test_astream_values_shows_finished_tasks_writes_when_the_step_pauses() -> None:
    async def consume() -> list[Any]:
        app = graph(None)
        return [c async for c in app.astream({"log": []}, cfg("t"), stream_mode="values")]

    assert asyncio.run(consume()) == [{"log": []}, {"log": ["fast"]}]
