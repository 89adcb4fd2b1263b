"""How a step folds: once per write where one task ran, copies that share nothing live."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest

from wayline import END, START, StateGraph, connect
from wayline.graph.channels import AppendLog, LastValue
from wayline.graph.channels.message_log import MessageLog
from wayline.graph.channels.reducer import ReducerChannel


def test_copies_are_independent_and_keep_their_kind() -> None:
    log = AppendLog("log")
    log.update([[1], [2]])
    log.private = True  # as reconstruction leaves it, before handing it over
    copy = log.copy()
    assert type(copy) is AppendLog and copy.key == "log" and copy.get() == [1, 2]
    assert copy.private is False  # a live copy appends by building a new list
    copy.update([[3]])
    assert log.get() == [1, 2] and copy.get() == [1, 2, 3]

    total = ReducerChannel("total", operator.add, int)
    total.update([5])
    twin = total.copy()
    assert type(twin) is ReducerChannel and twin.factory is int and twin.get() == 5
    twin.update([1])
    assert (total.get(), twin.get()) == (5, 6)

    last = LastValue("last")
    last.update(["a"])
    other = last.copy()
    other.update(["b"])
    assert type(other) is LastValue and (last.get(), other.get()) == ("a", "b")

    messages = MessageLog("messages", operator.add)
    messages.rewritten = True
    kept = messages.copy()
    assert type(kept) is MessageLog and kept.rewritten is True


CALLS: list[tuple[int, int]] = []
"""(len(old), len(new)) of each call of the reducer below."""


def counted_add(old: list[int], new: list[int]) -> list[int]:
    CALLS.append((len(old), len(new)))
    return old + new


class State(TypedDict):
    items: Annotated[list[int], counted_add]
    n: int


@pytest.fixture(autouse=True)
def _calls() -> None:
    CALLS.clear()


def _graph(parallel: bool) -> StateGraph:
    def step(s: dict[str, Any]) -> dict[str, Any]:
        return {"items": [s["n"]], "n": s["n"] + 1}

    def side(s: dict[str, Any]) -> dict[str, Any]:
        return {"items": [100 + s["n"]]}

    g = StateGraph(State)
    g.add_node("step", step)
    g.add_edge(START, "step")
    if parallel:  # two tasks a step: each branch folds its own writes on a copy
        g.add_node("side", side)
        g.add_edge(START, "side")
        g.add_conditional_edges("side", lambda s: END)
    g.add_conditional_edges("step", lambda s: "step" if s["n"] < 3 else END)
    return g


def test_a_step_of_one_task_folds_each_write_once() -> None:
    """The branch reads the node's writes folded on a copy; the commit keeps that copy
    rather than folding the same writes again (a reducer runs once per write)."""
    store = connect("sqlite:///:memory:")
    app = _graph(parallel=False).compile(store)
    out = app.invoke({"items": [], "n": 0}, {"configurable": {"thread_id": "one"}})
    assert out == {"items": [0, 1, 2], "n": 3}
    # The input step folds [] into the empty list, then each of 3 steps folds one write.
    assert CALLS == [(0, 0), (0, 1), (1, 1), (2, 1)]
    state = app.get_state({"configurable": {"thread_id": "one"}})  # reconstructed
    assert state.values == out


def test_a_step_of_several_tasks_folds_them_together() -> None:
    store = connect("sqlite:///:memory:")
    app = _graph(parallel=True).compile(store)
    out = app.invoke({"items": [], "n": 0}, {"configurable": {"thread_id": "two"}})
    assert out == {"items": [100, 0, 1, 2], "n": 3}  # fold order: "side" before "step"
    # Step 1 ran two tasks: each branch folded its own write on a copy (in either order:
    # the tasks ran on two threads), then the commit folded both; the later steps ran one
    # task each and folded once.
    assert CALLS[:3] == [(0, 0), (0, 1), (0, 1)]
    assert CALLS[3:] == [(0, 1), (1, 1), (2, 1), (3, 1)]
    state = app.get_state({"configurable": {"thread_id": "two"}})
    assert state.values == out


def test_invoke_builds_no_step_events_and_stream_builds_each(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``invoke`` reads only the result, so a step builds no ``values`` state for it; a
    stream in ``values`` mode gets one a step, the input's included."""
    from wayline.graph.loop import RunLoop

    built: list[int] = []
    values = RunLoop.values

    def counted(self: RunLoop) -> dict[str, Any]:
        built.append(self.step)
        return values(self)

    monkeypatch.setattr(RunLoop, "values", counted)
    app = _graph(parallel=False).compile(connect("sqlite:///:memory:"))
    out = app.invoke({"items": [], "n": 0}, {"configurable": {"thread_id": "quiet"}})
    assert out == {"items": [0, 1, 2], "n": 3}
    assert built == [0]  # the input step's, which tells a start from a resume
    built.clear()
    cfg = {"configurable": {"thread_id": "loud"}}
    chunks = list(app.stream({"items": [], "n": 0}, cfg, stream_mode="values"))
    assert chunks[-1] == out and len(chunks) == 4 and built == [0, 1, 2, 3]
