"""stream(): what each mode yields, and when."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest

import wayline
from wayline import END, START, Command, StateGraph
from wayline.errors import WaylineError


class State(TypedDict):
    log: Annotated[list[Any], operator.add]
    last: str


def cfg(thread: str = "t") -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def build(*, with_silent_node: bool = False) -> StateGraph:
    def a(state: State) -> dict[str, Any]:
        return {"log": ["a"], "last": "a"}

    def b(state: State) -> None:
        return None  # a node may write nothing

    def c(state: State) -> Command[Any]:
        return Command(update={"log": ["c"]}, goto=END)

    g = StateGraph(State)
    g.add_sequence([a, b, c] if with_silent_node else [a, c])
    g.add_edge(START, "a")
    return g


def test_values_mode_yields_the_input_then_the_state_after_each_step() -> None:
    chunks = list(build().compile().stream({"log": ["in"]}, cfg(), stream_mode="values"))
    assert chunks == [
        {"log": ["in"]},
        {"log": ["in", "a"], "last": "a"},
        {"log": ["in", "a", "c"], "last": "a"},
    ]


def test_updates_is_the_default_mode_as_in_langgraph() -> None:
    app = build().compile()
    assert list(app.stream({"log": []}, cfg("x"))) == list(
        app.stream({"log": []}, cfg("y"), stream_mode="updates")
    )


def test_updates_mode_yields_what_each_node_returned() -> None:
    app = build(with_silent_node=True).compile()
    chunks = list(app.stream({"log": []}, cfg(), stream_mode="updates"))
    assert chunks == [
        {"a": {"log": ["a"], "last": "a"}},
        {"b": None},
        {"c": {"log": ["c"]}},
    ]


def test_updates_of_parallel_nodes_are_one_chunk_each() -> None:
    g = StateGraph(State)
    for name in ("y", "x"):
        g.add_node(name, (lambda n: lambda s: {"log": [n]})(name))
        g.add_edge(START, name)
        g.add_edge(name, END)
    chunks = list(g.compile().stream({"log": []}, cfg(), stream_mode="updates"))
    assert sorted(chunks, key=lambda c: next(iter(c))) == [
        {"x": {"log": ["x"]}},
        {"y": {"log": ["y"]}},
    ]


def test_several_modes_yield_mode_and_chunk_pairs_in_order() -> None:
    chunks = list(build().compile().stream({"log": []}, cfg(), stream_mode=["updates", "values"]))
    assert [mode for mode, _ in chunks] == [
        "values",
        "updates",
        "values",
        "updates",
        "values",
    ]
    assert chunks[1] == ("updates", {"a": {"log": ["a"], "last": "a"}})
    assert chunks[-1] == ("values", {"log": ["a", "c"], "last": "a"})


def test_no_checkpoint_events_without_a_checkpointer() -> None:
    """As LangGraph: a graph compiled without a checkpointer saves no checkpoint, so the
    ``checkpoints`` and ``debug`` modes stream none (only the tasks)."""
    chunks = list(build().compile().stream({"log": []}, stream_mode=["debug", "checkpoints"]))
    assert {mode for mode, _ in chunks} == {"debug"}
    assert {c["type"] for _, c in chunks} == {"task", "task_result"}


def test_stream_leaves_the_same_state_as_invoke() -> None:
    app = build().compile()
    for _ in app.stream({"log": []}, cfg("s"), stream_mode="updates"):
        pass
    assert app.get_state(cfg("s")).values == app.invoke({"log": []}, cfg("i"))


@pytest.mark.parametrize("mode", ["bogus", ["values", "everything"]])
def test_unsupported_stream_mode_is_refused(mode: Any) -> None:
    with pytest.raises(WaylineError, match="stream_mode"):
        list(build().compile().stream({"log": []}, cfg(), stream_mode=mode))


def test_checkpoint_events_name_the_checkpoints_get_state_history_gives() -> None:
    app = build().compile(checkpointer=wayline.connect("sqlite:///:memory:"))
    events = [e["payload"] for e in app.stream({"log": []}, cfg(), stream_mode="debug")]
    streamed = [e for e in events if "config" in e][::-1]
    history = list(app.get_state_history(cfg()))
    assert len(streamed) == len(history) == 4  # the input checkpoint first, as LangGraph's
    for event, snap in zip(streamed, history, strict=True):
        assert event["config"] == snap.config
        assert event["parent_config"] == snap.parent_config
        assert [t["id"] for t in event["tasks"]] == [t.id for t in snap.tasks]
        assert event["next"] == list(snap.next)


def test_an_input_that_writes_nothing_streams_no_values_chunk() -> None:
    chunks = list(build().compile().stream({}, cfg(), stream_mode=["values", "updates"]))
    assert chunks[0] == ("updates", {"a": {"log": ["a"], "last": "a"}})
    assert chunks[1] == ("values", {"log": ["a"], "last": "a"})
