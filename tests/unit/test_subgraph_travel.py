"""Time travel to a subgraph's checkpoint: the config ``get_state(subgraphs=True)`` gives a
child state names it as LangGraph does, and the root graph run (or updated) with it goes back
there, forking the root and each child run on the way down."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, TypedDict

import pytest

import wayline
from wayline import START, Command, StateGraph, interrupt
from wayline.errors import TimeTravelError


class S(TypedDict):
    value: Annotated[list[str], operator.add]


def build(calls: list[str], *, persistent: bool = True) -> Any:
    def step_a(s: S) -> S:
        calls.append("step_a")
        return {"value": ["a"]}

    def ask_1(s: S) -> S:
        calls.append("ask_1")
        return {"value": [f"1:{interrupt('Q1')}"]}

    def ask_2(s: S) -> S:
        calls.append("ask_2")
        return {"value": [f"2:{interrupt('Q2')}"]}

    child = (
        StateGraph(S)
        .add_node("step_a", step_a)
        .add_node("ask_1", ask_1)
        .add_node("ask_2", ask_2)
        .add_edge(START, "step_a")
        .add_edge("step_a", "ask_1")
        .add_edge("ask_1", "ask_2")
        .compile(checkpointer=True if persistent else None)
    )
    store = wayline.connect("sqlite:///:memory:")
    return StateGraph(S).add_node("executor", child).add_edge(START, "executor").compile(store)


CFG = {"configurable": {"thread_id": "t"}}


@pytest.mark.parametrize("persistent", [True, False])
def test_a_subgraph_checkpoint_config_goes_back_there(persistent: bool) -> None:
    calls: list[str] = []
    app = build(calls, persistent=persistent)
    assert app.invoke({"value": []}, CFG)["__interrupt__"][0].value == "Q1"
    parent = app.get_state(CFG, subgraphs=True)
    sub = parent.tasks[0].state.config["configurable"]
    ns = sub["checkpoint_ns"]
    assert ns == "executor" if persistent else ns.startswith("executor:")
    assert sub["checkpoint_map"] == {
        "": parent.config["configurable"]["checkpoint_id"],
        ns: sub["checkpoint_id"],
    }
    app.invoke(Command(resume="x1"), CFG)
    assert app.invoke(Command(resume="x2"), CFG)["value"] == ["a", "1:x1", "2:x2"]
    original = app.get_state(CFG).config

    calls.clear()
    again = app.invoke(None, {"configurable": sub})
    assert again["__interrupt__"][0].value == "Q1"  # asked again: a fork holds no answers
    assert calls == ["ask_1"]  # step_a ran before that checkpoint: not again
    fork = {"configurable": {"thread_id": "t@0"}}
    app.invoke(Command(resume="y1"), fork)
    assert app.invoke(Command(resume="y2"), fork)["value"] == ["a", "1:y1", "2:y2"]
    assert app.get_state(original).values["value"] == ["a", "1:x1", "2:x2"]  # untouched
    assert app.get_state(CFG).values["value"] == ["a", "1:y1", "2:y2"]  # the thread's latest


def test_update_state_with_a_subgraph_config_edits_the_child_fork() -> None:
    calls: list[str] = []
    app = build(calls)
    app.invoke({"value": []}, CFG)
    sub = app.get_state(CFG, subgraphs=True).tasks[0].state.config
    app.invoke(Command(resume="x1"), CFG)

    calls.clear()
    fork = app.update_state(sub, {"value": ["edited"]})
    assert fork["configurable"]["thread_id"] == "t@0"
    child = app.get_state(fork, subgraphs=True).tasks[0].state
    assert child.values == {"value": ["a", "edited"]}  # the child's fork took the edit
    assert app.get_state(fork).values == {"value": []}  # not the parent
    assert app.invoke(None, fork)["__interrupt__"][0].value == "Q1"
    assert "step_a" not in calls
    app.invoke(Command(resume="y1"), fork)
    assert app.invoke(Command(resume="y2"), fork)["value"] == ["a", "edited", "1:y1", "2:y2"]


def test_three_levels_name_every_checkpoint_on_the_way_down() -> None:
    calls: list[str] = []

    def ask(s: S) -> S:
        calls.append("ask")
        return {"value": [f"inner:{interrupt('Q')}"]}

    def prep(s: S) -> S:
        calls.append("prep")
        return {"value": ["prep"]}

    inner = StateGraph(S).add_node("ask", ask).add_edge(START, "ask").compile()
    middle = (
        StateGraph(S)
        .add_node("prep", prep)
        .add_node("inner", inner)
        .add_edge(START, "prep")
        .add_edge("prep", "inner")
        .compile()
    )
    store = wayline.connect("sqlite:///:memory:")
    app = StateGraph(S).add_node("outer", middle).add_edge(START, "outer").compile(store)
    app.invoke({"value": []}, CFG)
    mid = app.get_state(CFG, subgraphs=True).tasks[0].state
    leaf = mid.tasks[0].state.config["configurable"]
    outer_ns, inner_ns = leaf["checkpoint_ns"].split("|")
    assert outer_ns.startswith("outer:") and inner_ns.startswith("inner:")
    assert set(leaf["checkpoint_map"]) == {"", outer_ns, leaf["checkpoint_ns"]}
    first = app.invoke(Command(resume="first"), CFG)["value"]
    assert first == ["prep", "prep", "inner:first"]  # each level adds its child's state

    calls.clear()
    assert app.invoke(None, {"configurable": leaf})["__interrupt__"][0].value == "Q"
    assert calls == ["ask"]
    done = app.invoke(Command(resume="second"), {"configurable": {"thread_id": "t@0"}})
    assert done["value"] == ["prep", "prep", "inner:second"]


def test_a_map_without_the_namespace_is_refused() -> None:
    app = build([])
    app.invoke({"value": []}, CFG)
    sub = dict(app.get_state(CFG, subgraphs=True).tasks[0].state.config["configurable"])
    sub["checkpoint_map"] = {"": sub["checkpoint_map"][""]}
    with pytest.raises(TimeTravelError, match="no checkpoint for namespace 'executor'"):
        app.invoke(None, {"configurable": sub})
    assert app.store.get_run("default", "t@0") is None  # nothing was forked


@pytest.mark.parametrize("persistent", [True, False])
def test_purging_the_root_fork_purges_the_child_forks(persistent: bool) -> None:
    app = build([], persistent=persistent)
    app.invoke({"value": []}, CFG)
    sub = app.get_state(CFG, subgraphs=True).tasks[0].state.config
    app.invoke(None, sub)
    fork = {"configurable": {"thread_id": "t@0"}}
    child = app.get_state(fork, subgraphs=True).tasks[0].state.config["configurable"]
    assert app.store.get_run("default", child["thread_id"]) is not None
    assert wayline.Wayline(app.store).purge("t@0") > 0
    assert app.store.get_run("default", child["thread_id"]) is None


def test_a_subgraph_node_sees_its_root_thread_and_its_namespace() -> None:
    seen: list[dict[str, Any]] = []

    def inner(s: S, config: Any) -> S:
        seen.append(dict(config["configurable"]))
        return {"value": ["inner"]}

    def outer(s: S, config: Any) -> S:
        seen.append(dict(config["configurable"]))
        return {"value": ["outer"]}

    child = StateGraph(S).add_node("inner", inner).add_edge(START, "inner").compile()
    store = wayline.connect("sqlite:///:memory:")
    app = (
        StateGraph(S)
        .add_node("outer", outer)
        .add_node("sub", child)
        .add_edge(START, "outer")
        .add_edge("outer", "sub")
        .compile(store)
    )
    app.invoke({"value": []}, CFG)
    root, nested = seen
    assert root["thread_id"] == nested["thread_id"] == "t"  # as LangGraph: one thread
    assert root["checkpoint_ns"] == f"outer:{root['checkpoint_ns'].split(':')[1]}"
    sub_ns, own = nested["checkpoint_ns"].split("|")
    assert sub_ns.startswith("sub:") and own.startswith("inner:")


def test_a_subgraph_node_passing_its_config_on_runs_a_subgraph_of_its_own() -> None:
    leaf = StateGraph(S).add_node("leaf", lambda s: {"value": ["leaf"]})
    leaf_app = leaf.add_edge(START, "leaf").compile()

    def calls_leaf(s: S, config: Any) -> S:
        return {"value": leaf_app.invoke({"value": []}, config)["value"]}

    child = StateGraph(S).add_node("calls", calls_leaf).add_edge(START, "calls").compile()
    store = wayline.connect("sqlite:///:memory:")
    app = StateGraph(S).add_node("sub", child).add_edge(START, "sub").compile(store)
    assert app.invoke({"value": []}, CFG)["value"] == ["leaf"]
    runs = [r.run_id for r in store.list_runs("default")]
    assert [r for r in runs if "::" not in r] == ["t"]  # the leaf is no run of its own
    assert len([r for r in runs if r.count("::") == 2]) == 1  # but the child's subgraph


class C(TypedDict, total=False):
    value: Annotated[list[str], operator.add]
    private: str


def test_the_root_reads_a_subgraph_checkpoint_config_as_the_subgraphs_state() -> None:
    def prep(s: C) -> C:
        return {"private": "p", "value": ["a"]}

    def ask(s: C) -> C:
        return {"value": [interrupt("Q")]}

    child = (
        StateGraph(C)
        .add_node("prep", prep)
        .add_node("ask", ask)
        .add_edge(START, "prep")
        .add_edge("prep", "ask")
        .compile()
    )
    store = wayline.connect("sqlite:///:memory:")
    app = StateGraph(S).add_node("ex", child).add_edge(START, "ex").compile(store)
    app.invoke({"value": []}, CFG)
    sub = app.get_state(CFG, subgraphs=True).tasks[0].state
    # the child's own keys (a root read would refuse its private key as undeclared)
    again = app.get_state(sub.config)
    assert (again.values, again.next) == ({"value": ["a"], "private": "p"}, ("ask",))
    assert [h.values for h in app.get_state_history(sub.config)] == [
        {"value": ["a"], "private": "p"},
        {"value": []},
        {"value": []},  # the child's input checkpoint, before its input
    ]
    assert app.get_state(CFG).values == {"value": []}  # the root's own, as before


@pytest.mark.parametrize("persistent", [True, False])
def test_the_roots_thread_with_a_subgraphs_namespace_reads_the_subgraph(
    persistent: bool,
) -> None:
    app = build([], persistent=persistent)
    app.invoke({"value": []}, CFG)
    named = app.get_state(CFG).tasks[0].state
    ns = named["configurable"]["checkpoint_ns"]
    assert named["configurable"]["thread_id"] == "t" and ns != ""
    child = app.get_state(named)
    assert child.values == {"value": ["a"]} and child.next == ("ask_1",)
    assert child.config["configurable"]["checkpoint_ns"] == ns
    assert [s.next for s in app.get_state_history(named)] == [
        ("ask_1",),
        ("step_a",),
        ("__start__",),  # its input checkpoint, as LangGraph's
    ]
    # aget_state_history reads the same checkpoints (it read the root's before)
    listed = asyncio.run(_alist(app, named))
    assert listed == [s.config for s in app.get_state_history(named)]
    # a namespace no run has: the root's own state, as before
    other = {"configurable": {"thread_id": "t", "checkpoint_ns": "nowhere:0"}}
    assert app.get_state(other).values == app.get_state(CFG).values


async def _alist(app: Any, config: Any) -> list[Any]:
    return [s.config async for s in app.aget_state_history(config)]


def test_update_state_with_a_subgraphs_namespace_edits_the_child_in_place() -> None:
    app = build([], persistent=False)
    app.invoke({"value": []}, CFG)
    named = app.get_state(CFG).tasks[0].state
    before = app.get_state(named).config["configurable"]["thread_id"]
    app.update_state(named, {"value": ["edited"]})
    edited = app.get_state(named)
    assert edited.values == {"value": ["a", "edited"]} and edited.next == ("ask_1",)
    assert edited.metadata["source"] == "update"
    assert edited.config["configurable"]["thread_id"] == before  # the child's run, no fork
    assert app.get_state(CFG).tasks[0].state == named
