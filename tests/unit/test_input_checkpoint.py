"""LangGraph's input checkpoint read from wayline's input step (wayline.graph.input_checkpoint):
listed before each input, addressed by its own checkpoint id, and exit mode's listing of
one checkpoint an invocation; the stored steps are the same as before."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest

import wayline
from wayline import END, START, StateGraph
from wayline.errors import TimeTravelError
from wayline.graph import travel


class S(TypedDict):
    log: Annotated[list[str], operator.add]


def build(**compile_kwargs: Any) -> Any:
    g = StateGraph(S)
    g.add_node("a", lambda s: {"log": ["a"]})
    g.add_node("b", lambda s: {"log": ["b"]})
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("b", END)
    return g.compile(wayline.connect("sqlite:///:memory:"), **compile_kwargs)


def cfg(thread: str = "t", **extra: Any) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread, **extra}}


def shape(app: Any, config: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [
        (s.metadata["step"], s.metadata["source"], s.next, s.values["log"])
        for s in app.get_state_history(config)
    ]


def test_each_input_has_an_input_checkpoint_before_it_and_the_stored_steps_are_unchanged() -> None:
    app = build()
    app.invoke({"log": ["in"]}, cfg())
    app.invoke({"log": ["in2"]}, cfg())
    assert shape(app, cfg()) == [
        (5, "loop", (), ["in", "a", "b", "in2", "a", "b"]),
        (4, "loop", ("b",), ["in", "a", "b", "in2", "a"]),
        (3, "loop", ("a",), ["in", "a", "b", "in2"]),
        (2, "input", ("__start__",), ["in", "a", "b"]),  # numbered as the step before it
        (2, "loop", (), ["in", "a", "b"]),
        (1, "loop", ("b",), ["in", "a"]),
        (0, "loop", ("a",), ["in"]),
        (-1, "input", ("__start__",), []),
    ]
    history = list(app.get_state_history(cfg()))
    ids = [s.config["configurable"]["checkpoint_id"] for s in history]
    assert ids == sorted(ids, reverse=True)  # an input checkpoint's id sorts before its step's
    assert [s.parent_config for s in history[:-1]] == [s.config for s in history[1:]]
    assert history[-1].parent_config is None
    # a past checkpoint's tasks carry what they wrote, as LangGraph's
    assert [(t.name, t.result) for t in history[-1].tasks] == [("__start__", {"log": ["in"]})]
    assert [(t.name, t.result) for t in history[-2].tasks] == [("a", {"log": ["a"]})]
    run = app.store.get_run("default", "t")
    assert run.step == 5 and len(app.store.load_deltas("default", "t", -1, 5)) == 6
    assert app.verify(cfg()).ok


def test_before_and_limit_step_through_input_checkpoints() -> None:
    app = build()
    app.invoke({"log": ["in"]}, cfg())
    history = list(app.get_state_history(cfg()))
    first_step, before_input = history[-2], history[-1]
    assert list(app.get_state_history(cfg(), before=first_step.config)) == [before_input]
    assert list(app.get_state_history(cfg(), before=before_input.config)) == []
    inputs = list(app.get_state_history(cfg(), filter={"source": "input"}))
    assert inputs == [before_input]
    assert len(list(app.get_state_history(cfg(), limit=4))) == 4


def test_the_input_checkpoints_config_is_an_address() -> None:
    app = build()
    app.invoke({"log": ["in"]}, cfg())
    app.invoke({"log": ["in2"]}, cfg())
    inputs = list(app.get_state_history(cfg(), filter={"source": "input"}))
    later, first = inputs
    original = app.get_state(cfg()).config
    assert app.get_state(first.config) == first
    assert app.get_state(later.config).values == {"log": ["in", "a", "b"]}
    # run from it: the input runs again (a fork from the input step)
    assert app.invoke(None, first.config) == {"log": ["in", "a", "b"]}
    assert app.invoke(None, later.config) == {"log": ["in", "a", "b", "in2", "a", "b"]}
    # edit it: the state before the input is what the edit writes on
    edited = app.update_state(first.config, {"log": ["u"]})
    assert edited["configurable"]["thread_id"] == "t@-1"  # no step holds the empty state
    assert app.get_state(edited).values == {"log": ["u"]}
    assert app.get_state(edited).next == ("a",)
    assert app.invoke(None, edited) == {"log": ["u", "a", "b"]}
    edited = app.update_state(later.config, {"log": ["u"]})
    assert app.get_state(edited).values == {"log": ["in", "a", "b", "u"]}
    assert app.get_state(original).values["log"][-1] == "b"  # the run itself is as it was
    # as LangGraph's latest checkpoint, the thread goes on from the edit made last
    assert app.get_state(cfg()).values == {"log": ["in", "a", "b", "u"]}
    tup = app.store.get_tuple(first.config)
    assert tup is not None and tup.metadata == {"source": "input", "step": -1, "parents": {}}


def test_an_input_checkpoint_id_of_another_run_is_refused() -> None:
    app = build()
    app.invoke({"log": ["in"]}, cfg("t"))
    app.invoke({"log": ["in"]}, cfg("u"))
    other = travel.input_checkpoint_id("default", "u", 0)
    with pytest.raises(TimeTravelError, match="not a checkpoint of run 't'"):
        app.get_state(cfg("t", checkpoint_id=other))


@pytest.mark.parametrize("durability", ["sync", "async", "exit"])
def test_exit_durability_lists_one_checkpoint_an_invocation(durability: str) -> None:
    app = build(interrupt_after="*")
    counts = []
    app.invoke({"log": ["in"]}, cfg(), durability=durability)
    counts.append(len(list(app.get_state_history(cfg()))))
    app.invoke(None, cfg(), durability=durability)  # paused after "a": on to "b"
    counts.append(len(list(app.get_state_history(cfg()))))
    assert counts == ([1, 2] if durability == "exit" else [3, 4])
    history = list(app.get_state_history(cfg()))
    assert [s.parent_config for s in history[:-1]] == [s.config for s in history[1:]]
    assert history[-1].parent_config is None
    assert app.get_state(cfg()).next == ()
    # every step is committed and addressable, listed or not
    states = [app.get_state(cfg(step=n)).values["log"] for n in range(3)]
    assert states == [["in"], ["in", "a"], ["in", "a", "b"]]
    assert app.verify(cfg()).ok


def test_exit_durability_streams_every_checkpoint_with_no_parent_written() -> None:
    app = build()
    for given in (["in"], ["in2"]):
        chunks = list(
            app.stream({"log": given}, cfg(), stream_mode="checkpoints", durability="exit")
        )
        assert [c["metadata"]["source"] for c in chunks] == ["input", "loop", "loop", "loop"]
        assert [c["parent_config"] for c in chunks] == [None] * 4  # as LangGraph's
    assert len(list(app.get_state_history(cfg()))) == 2
