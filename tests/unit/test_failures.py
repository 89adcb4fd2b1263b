"""Errors during a run: typed, recorded, never losing a committed step, and resumable."""

from __future__ import annotations

import operator
import threading
from collections import Counter
from typing import Annotated, Any, TypedDict

import pytest

from wayline import END, START, StateGraph
from wayline.errors import (
    CodecError,
    GraphRecursionError,
    InvalidUpdateError,
    ReducerError,
    ResumeError,
    StepLimitError,
)


def cfg(thread: str = "t", **extra: Any) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}, **extra}


def run_row(app: Any, thread: str = "t") -> Any:
    run = app.store.get_run("default", thread)
    assert run is not None
    return run


# -- step limit ----------------------------------------------------------------------


class Counting(TypedDict):
    log: Annotated[list[Any], operator.add]
    n: int


def looping_graph(until: int = 10) -> StateGraph:
    def tick(state: Counting) -> dict[str, Any]:
        return {"n": state["n"] + 1, "log": [state["n"]]}

    g = StateGraph(Counting)
    g.add_node("tick", tick)
    g.add_edge(START, "tick")
    g.add_conditional_edges("tick", lambda s: END if s["n"] >= until else "tick")
    return g


def test_step_limit_keeps_committed_steps_and_a_larger_limit_continues() -> None:
    app = looping_graph().compile()
    with pytest.raises(StepLimitError, match="recursion_limit"):
        app.invoke({"n": 0, "log": []}, cfg(recursion_limit=3))
    snap = app.get_state(cfg())
    assert snap.values == {"n": 3, "log": [0, 1, 2]}  # as LangGraph: three supersteps ran
    assert snap.next == ("tick",)
    assert run_row(app).step == 3

    out = app.invoke(None, cfg(recursion_limit=100))
    assert out == {"n": 10, "log": list(range(10))}
    assert run_row(app).status == "done"


def test_step_limit_counts_per_invocation() -> None:
    app = looping_graph().compile()
    with pytest.raises(GraphRecursionError):
        app.invoke({"n": 0, "log": []}, cfg(recursion_limit=3))
    with pytest.raises(GraphRecursionError):
        app.invoke(None, cfg(recursion_limit=3))
    assert app.get_state(cfg()).values["n"] == 6


def test_graph_recursion_error_is_the_step_limit_error() -> None:
    assert issubclass(GraphRecursionError, StepLimitError)
    assert issubclass(GraphRecursionError, RecursionError)  # as LangGraph's


def test_a_run_that_fits_its_limit_exactly_finishes() -> None:
    app = looping_graph(until=3).compile()
    assert app.invoke({"n": 0, "log": []}, cfg(recursion_limit=3))["n"] == 3


# -- reducer errors ------------------------------------------------------------------

REDUCER_BROKEN = {"on": False}


def fragile_add(old: list[Any], new: list[Any]) -> list[Any]:
    if REDUCER_BROKEN["on"] and "poison" in new:
        raise ValueError("cannot fold poison")
    return old + new


class Fragile(TypedDict):
    log: Annotated[list[Any], fragile_add]


@pytest.fixture
def broken_reducer():  # type: ignore[no-untyped-def]
    REDUCER_BROKEN["on"] = True
    yield REDUCER_BROKEN
    REDUCER_BROKEN["on"] = False


def test_reducer_error_names_the_channel_and_keeps_the_last_step(
    broken_reducer: dict[str, Any],
) -> None:
    calls: Counter[str] = Counter()

    def ok(state: Fragile) -> dict[str, Any]:
        calls["ok"] += 1
        return {"log": ["ok"]}

    def poison(state: Fragile) -> dict[str, Any]:
        calls["poison"] += 1
        return {"log": ["poison"]}

    g = StateGraph(Fragile)
    g.add_node("ok", ok)
    g.add_node("poison", poison)
    g.add_edge(START, "ok")
    g.add_edge("ok", "poison")
    app = g.compile()
    with pytest.raises(ReducerError) as info:
        app.invoke({"log": ["in"]}, cfg())
    assert info.value.channel == "log"
    assert "'log'" in str(info.value)
    assert isinstance(info.value.__cause__, ValueError)
    assert app.get_state(cfg()).values == {"log": ["in", "ok"]}
    assert run_row(app).step == 1
    assert run_row(app).status == "failed"

    broken_reducer["on"] = False
    assert app.invoke(None, cfg()) == {"log": ["in", "ok", "poison"]}
    assert calls == Counter(ok=1, poison=2)


def test_reducer_error_in_a_parallel_step_keeps_the_peers_writes(
    broken_reducer: dict[str, Any],
) -> None:
    calls: Counter[str] = Counter()

    def node(name: str):  # type: ignore[no-untyped-def]
        def fn(state: Fragile) -> dict[str, Any]:
            calls[name] += 1
            return {"log": [name]}

        return fn

    g = StateGraph(Fragile)
    g.add_node("a", node("a"))
    g.add_node("poison", node("poison"))
    g.add_edge(START, "a")
    g.add_edge(START, "poison")
    app = g.compile()
    with pytest.raises(ReducerError):
        app.invoke({"log": []}, cfg())
    assert app.get_state(cfg()).values == {"log": []}
    broken_reducer["on"] = False
    assert app.invoke(None, cfg()) == {"log": ["a", "poison"]}
    assert calls == Counter(a=1, poison=1)  # both had finished: their writes were kept


# -- invalid updates -----------------------------------------------------------------


class Plain(TypedDict):
    log: Annotated[list[Any], operator.add]


def test_undeclared_key_from_a_node_keeps_the_last_step_and_is_resumable() -> None:
    attempts: Counter[str] = Counter()

    def sloppy(state: Plain) -> dict[str, Any]:
        attempts["sloppy"] += 1
        if attempts["sloppy"] == 1:
            return {"log": ["sloppy"], "typo_key": 1}
        return {"log": ["sloppy"]}

    g = StateGraph(Plain)
    g.add_node("first", lambda s: {"log": ["first"]})
    g.add_node("sloppy", sloppy)
    g.add_edge(START, "first")
    g.add_edge("first", "sloppy")
    app = g.compile()
    with pytest.raises(InvalidUpdateError) as info:
        app.invoke({"log": []}, cfg())
    assert "typo_key" in str(info.value) and "'sloppy'" in str(info.value)
    assert app.get_state(cfg()).values == {"log": ["first"]}
    assert app.get_state(cfg()).next == ("sloppy",)
    assert app.invoke(None, cfg()) == {"log": ["first", "sloppy"]}


def test_undeclared_key_in_the_input_is_refused() -> None:
    g = StateGraph(Plain)
    g.add_node("a", lambda s: {"log": ["a"]})
    g.set_entry_point("a")
    app = g.compile()
    with pytest.raises(InvalidUpdateError, match="bogus"):
        app.invoke({"bogus": 1}, cfg())
    assert app.store.get_run("default", "t") is None  # no row: it goes in with its input
    assert app.get_state(cfg()).values == {}
    assert app.invoke({"log": ["x"]}, cfg()) == {"log": ["x", "a"]}  # the thread starts anew


def test_node_returning_a_non_mapping_is_an_invalid_update() -> None:
    g = StateGraph(Plain)
    g.add_node("a", lambda s: "not a dict")
    g.set_entry_point("a")
    with pytest.raises(InvalidUpdateError, match="str"):
        g.compile().invoke({"log": []})


# -- unserializable values ------------------------------------------------------------


class Holder(TypedDict):
    log: Annotated[list[Any], operator.add]
    payload: Any


class Opaque:
    pass


@pytest.mark.parametrize(
    ("parallel", "peer_last"),
    [(False, False), (True, False), (True, True)],
    ids=["alone", "with-peer", "peer-finishes-last"],
)
def test_unserializable_value_names_node_channel_and_type(parallel: bool, peer_last: bool) -> None:
    """A task whose writes cannot be stored fails alone: a peer that finishes after it
    still has its writes saved (they were lost when the failure came first)."""
    attempts: Counter[str] = Counter()
    produced = threading.Event()

    def produce(state: Holder) -> dict[str, Any]:
        attempts["produce"] += 1
        produced.set()
        return {"payload": Opaque() if attempts["produce"] == 1 else "plain"}

    def peer(state: Holder) -> dict[str, Any]:
        if peer_last:
            assert produced.wait(10)  # the failing task returns first (almost always)
        return {"log": ["peer"]}

    g = StateGraph(Holder)
    g.add_node("produce", produce)
    g.add_edge(START, "produce")
    if parallel:
        g.add_node("peer", peer)
        g.add_edge(START, "peer")
    app = g.compile()
    with pytest.raises(CodecError) as info:
        app.invoke({"log": ["in"]}, cfg())
    message = str(info.value)
    assert "'produce'" in message
    assert "'payload'" in message
    assert "Opaque" in message
    # as LangGraph, the state shows what the finished peer wrote (not yet committed)
    assert app.get_state(cfg()).values == {"log": ["in", "peer"] if parallel else ["in"]}
    assert run_row(app).step == 0
    out = app.invoke(None, cfg())
    assert out["payload"] == "plain"
    assert out["log"] == (["in", "peer"] if parallel else ["in"])


def test_unserializable_input_is_refused() -> None:
    g = StateGraph(Holder)
    g.add_node("a", lambda s: {})
    g.set_entry_point("a")
    with pytest.raises(CodecError, match="'payload'"):
        g.compile().invoke({"payload": Opaque()}, cfg())


# -- node exceptions -----------------------------------------------------------------


class Boom(RuntimeError):
    pass


@pytest.mark.parametrize("durability", ["sync", "async", "exit"])
def test_node_exception_is_recorded_and_resume_reruns_only_the_failed_node(
    durability: str,
) -> None:
    calls: Counter[str] = Counter()
    fail = {"b": True}

    def a(state: Plain) -> dict[str, Any]:
        calls["a"] += 1
        return {"log": ["a"]}

    def b(state: Plain) -> dict[str, Any]:
        calls["b"] += 1
        if fail["b"]:
            raise Boom("b exploded")
        return {"log": ["b"]}

    def after(state: Plain) -> dict[str, Any]:
        calls["after"] += 1
        return {"log": ["after"]}

    g = StateGraph(Plain)
    g.add_node("a", a)
    g.add_node("b", b)
    g.add_node("after", after)
    g.add_edge(START, "a")
    g.add_edge(START, "b")
    g.add_edge(["a", "b"], "after")
    app = g.compile()
    with pytest.raises(Boom, match="b exploded"):
        app.invoke({"log": []}, cfg(), durability=durability)
    run = run_row(app)
    assert run.status == "failed"
    assert run.error is not None and "Boom" in run.error and "b exploded" in run.error
    snap = app.get_state(cfg())
    assert snap.values == {"log": ["a"]}  # as LangGraph: the finished peer's writes show
    assert snap.next == ("b",)
    assert {t.name: t.result for t in snap.tasks} == {"a": {"log": ["a"]}, "b": None}

    fail["b"] = False
    out = app.invoke(None, cfg(), durability=durability)
    assert out == {"log": ["a", "b", "after"]}
    assert calls == Counter(a=1, b=2, after=1)
    assert run_row(app).status == "done"
    assert run_row(app).error is None


def test_node_exception_propagates_unchanged() -> None:
    error = KeyError("missing")

    def broken(state: Plain) -> dict[str, Any]:
        raise error

    g = StateGraph(Plain)
    g.add_node("broken", broken)
    g.set_entry_point("broken")
    with pytest.raises(KeyError) as info:
        g.compile().invoke({"log": []})
    assert info.value is error


def test_invoke_none_after_failure_without_fix_fails_again() -> None:
    def broken(state: Plain) -> dict[str, Any]:
        raise Boom("still broken")

    g = StateGraph(Plain)
    g.add_node("broken", broken)
    g.set_entry_point("broken")
    app = g.compile()
    with pytest.raises(Boom):
        app.invoke({"log": []}, cfg())
    with pytest.raises(Boom):
        app.invoke(None, cfg())
    assert run_row(app).step == 0


def test_resume_error_is_not_a_node_failure() -> None:
    g = StateGraph(Plain)
    g.add_node("a", lambda s: {"log": ["a"]})
    g.set_entry_point("a")
    app = g.compile()
    with pytest.raises(ResumeError):
        app.invoke(None, cfg())
    assert app.store.get_run("default", "t") is None  # refused before a row was created
