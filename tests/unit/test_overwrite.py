"""``Overwrite``, as LangGraph's: a write that bypasses the reducer and sets the channel;
one per channel per step; durable and replayed exactly, snapshots included."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest

import wayline
from wayline import START, StateGraph
from wayline.errors import InvalidUpdateError
from wayline.types import Overwrite


class S(TypedDict):
    messages: Annotated[list[str], operator.add]


def cfg(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


@pytest.mark.parametrize("form", ["typed", "json", "json-typed"])
def test_an_overwrite_replaces_the_value_and_the_step_ignores_later_writes(form: str) -> None:
    def overwrite(value: list[str]) -> Any:
        if form == "typed":
            return Overwrite(value)
        if form == "json":
            return {"__overwrite__": value}
        return {"type": "__overwrite__", "value": value}

    g = StateGraph(S)
    g.add_node("a", lambda s: {"messages": ["a"]})
    g.add_node("b", lambda s: {"messages": overwrite(["b"])})
    g.add_node("c", lambda s: {"messages": ["c"]})
    g.add_node("d", lambda s: {"messages": ["d"]})
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("a", "c")
    g.add_edge("b", "d")
    g.add_edge("c", "d")
    app = g.compile(wayline.connect("sqlite:///:memory:"))
    assert app.invoke({"messages": ["START"]}, cfg("t")) == {"messages": ["b", "d"]}
    assert app.verify(cfg("t")).ok  # the stored writes replay to the state that ran


def test_two_overwrites_of_one_channel_in_a_step_are_refused() -> None:
    g = StateGraph(S)
    g.add_node("a", lambda s: {"messages": ["a"]})
    g.add_node("b", lambda s: {"messages": Overwrite(["b"])})
    g.add_node("c", lambda s: {"messages": Overwrite(["c"])})
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("a", "c")
    app = g.compile(wayline.connect("sqlite:///:memory:"))
    with pytest.raises(InvalidUpdateError, match="Can receive only one Overwrite value"):
        app.invoke({"messages": ["START"]}, cfg("t"))
    assert app.get_state(cfg("t")).values == {"messages": ["START", "a"]}  # not committed


def test_an_overwritten_log_is_snapshotted_anew_and_read_back_exactly() -> None:
    """An append log's snapshots keep immutable segments of what it appended; an overwrite
    replaces items they hold, so the next snapshot indexes the log anew."""
    turns = {"n": 0}

    def bot(s: S) -> dict[str, Any]:
        turns["n"] += 1
        if turns["n"] == 7:
            return {"messages": Overwrite([f"reset {turns['n']}"])}
        return {"messages": [f"reply {turns['n']}"]}

    g = StateGraph(S)
    g.add_node("bot", bot)
    g.add_edge(START, "bot")
    store = wayline.connect("sqlite:///:memory:")
    app = g.compile(store, snapshot_every=2)
    for i in range(12):
        app.invoke({"messages": [f"turn {i}"]}, cfg("chat"))
    expected = ["reset 7"] + [x for i in range(7, 12) for x in (f"turn {i}", f"reply {i + 1}")]
    assert app.get_state(cfg("chat")).values["messages"] == expected
    fresh = g.compile(store, snapshot_every=2)  # a fresh graph reads from the store alone
    assert fresh.get_state(cfg("chat")).values["messages"] == expected
    assert app.verify(cfg("chat")).ok
