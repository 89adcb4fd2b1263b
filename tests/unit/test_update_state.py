"""update_state, as in LangGraph: a person edits a run's state; the run goes on from there."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest

from wayline import END, START, Command, Send, StateGraph, interrupt
from wayline.errors import InvalidUpdateError, UnknownNodeError
from wayline.graph import travel
from wayline.types import StateUpdate


class S(TypedDict, total=False):
    log: Annotated[list[str], operator.add]
    draft: str
    verdict: str


def build() -> Any:
    g = StateGraph(S)
    g.add_node("write", lambda s: {"draft": "first draft", "log": ["write"]})
    g.add_node("review", lambda s: {"verdict": interrupt(s["draft"]), "log": ["review"]})
    g.add_node("publish", lambda s: {"log": [f"published {s['draft']!r}"]})
    g.add_edge(START, "write")
    g.add_edge("write", "review")
    g.add_edge("review", "publish")
    g.add_edge("publish", END)
    return g.compile()


CFG = {"configurable": {"thread_id": "doc"}}


def test_a_paused_run_is_edited_and_asks_again_about_the_edit() -> None:
    app = build()
    (asked,) = app.invoke({"log": []}, CFG)["__interrupt__"]
    assert asked.value == "first draft"
    new = app.update_state(CFG, {"draft": "edited draft", "log": ["edited by hand"]})
    assert travel.requested_step(new, "default", "doc") == 2  # input 0, write 1: step 2
    state = app.get_state(CFG)
    assert state.values["draft"] == "edited draft"
    assert state.values["log"] == ["write", "edited by hand"]  # folded through the reducer
    assert state.next == ("review",)  # the run goes on where it was
    (again,) = app.invoke(None, CFG)["__interrupt__"]  # the question is asked anew
    assert again.value == "edited draft" and again.id != asked.id


def test_as_node_routes_as_that_node_would() -> None:
    app = build()
    app.invoke({"log": []}, CFG)
    app.update_state(CFG, {"verdict": "ok", "log": ["approved by hand"]}, as_node="review")
    assert app.get_state(CFG).next == ("publish",)
    final = app.invoke(None, CFG)
    assert final["log"][-1] == "published 'first draft'" and final["verdict"] == "ok"


def test_bad_updates_are_refused_and_change_nothing() -> None:
    app = build()
    app.invoke({"log": []}, CFG)
    before = app.get_state(CFG)
    with pytest.raises(UnknownNodeError):
        app.update_state(CFG, {"draft": "x"}, as_node="nope")
    with pytest.raises(InvalidUpdateError):
        app.update_state(CFG, {"undeclared": 1})
    after = app.get_state(CFG)
    assert (after.values, after.next, after.interrupts) == (
        before.values,
        before.next,
        before.interrupts,
    )
    assert after.read_info.status == "interrupted"


def test_a_thread_may_start_with_an_update() -> None:
    """As LangGraph: update_state on a thread that never ran starts it (an empty input
    step, then the update as its node); the run goes on from there."""
    app = build()
    fresh = {"configurable": {"thread_id": "never-ran"}}
    app.update_state(fresh, {"draft": "by hand", "log": ["seeded"]}, as_node="review")
    state = app.get_state(fresh)
    assert state.values["draft"] == "by hand" and state.next == ("publish",)
    assert app.invoke(None, fresh)["log"][-1] == "published 'by hand'"


def _history(app: Any, config: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(s.values, s.next, s.metadata["step"]) for s in app.get_state_history(config)]


def test_a_run_written_as_input_start_and_nodes_has_the_history_of_the_run() -> None:
    """LangGraph spells a run's input as two updates, ``__input__`` then ``__start__``;
    wayline commits them as its one input step, so replaying a run's writes through
    ``bulk_update_state`` gives the history that running it gave."""

    class T(TypedDict):
        foo: str

    g = StateGraph(T)
    g.add_node("agent", lambda s: {"foo": "agent"})
    g.add_node("tool", lambda s: {"foo": "tool"})
    g.add_edge(START, "agent")
    g.add_edge("agent", "tool")
    app = g.compile()
    ran = {"configurable": {"thread_id": "ran"}}
    app.invoke({"foo": "input"}, ran)
    app.invoke({"foo": "input"}, ran)
    turn = [
        [StateUpdate({"foo": "input"}, "__input__")],
        [StateUpdate({"foo": "input"}, "__start__")],
        [StateUpdate({"foo": "agent"}, "agent")],
        [StateUpdate({"foo": "tool"}, "tool")],
    ]
    written = {"configurable": {"thread_id": "written"}}
    app.bulk_update_state(written, turn + turn)
    assert app.get_state(written).values == {"foo": "tool"}
    assert _history(app, written) == _history(app, ran)
    assert len(_history(app, ran)) == 8  # two turns of input checkpoint, input, agent, tool
    alone = {"configurable": {"thread_id": "start-alone"}}  # __start__ alone: the input
    app.bulk_update_state(alone, [[StateUpdate({"foo": "input"}, "__start__")]])
    assert app.get_state(alone).next == ("agent",)
    assert app.invoke(None, alone) == {"foo": "tool"}


def test_an_update_as_a_node_may_be_its_command() -> None:
    """``StateUpdate(Command(update=..., goto=[Send(...)]), "map")``: written as that node
    returned it, so the sends run next, as after the node itself."""

    class M(TypedDict, total=False):
        foo: str
        tasks: Annotated[list[int], operator.add]

    def fan_out(s: M) -> Command[Any]:
        return Command(goto=[Send("task", {"index": i}) for i in range(3)], update={"foo": "map"})

    g = StateGraph(M)
    g.add_node("map", fan_out)
    g.add_node("task", lambda s: {"tasks": [s["index"]]})
    g.add_edge(START, "map")
    app = g.compile()
    ran = {"configurable": {"thread_id": "ran"}}
    assert app.invoke({"foo": "input"}, ran) == {"foo": "map", "tasks": [0, 1, 2]}
    sends: Command[Any] = Command(
        goto=[Send("task", {"index": i}) for i in range(3)], update={"foo": "map"}
    )
    written = {"configurable": {"thread_id": "written"}}
    app.bulk_update_state(
        written,
        [
            [StateUpdate({"foo": "input"}, "__input__")],
            [StateUpdate({"foo": "input"}, "__start__")],
            [StateUpdate(sends, "map")],
        ],
    )
    state = app.get_state(written)
    assert [t.name for t in state.tasks] == ["task", "task", "task"]
    assert app.invoke(None, written) == {"foo": "map", "tasks": [0, 1, 2]}
    assert _history(app, written) == _history(app, ran)
