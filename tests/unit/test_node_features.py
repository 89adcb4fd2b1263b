"""Node execution features on wayline's own terms: a deferred node's wait is in the step's
delta (replay is exact and a fresh process resumes it), a timed-out attempt is a failure
its retry policy sees (compared with LangGraph in tests/compat/programs/node_features.py)."""

from __future__ import annotations

import asyncio
import operator
from pathlib import Path
from typing import Annotated, TypedDict

import pytest

import wayline
from wayline.errors import NodeTimeoutError
from wayline.graph import END, START, StateGraph
from wayline.types import RetryPolicy, TimeoutPolicy


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def _deferred(store: wayline.Store, stop: bool) -> wayline.graph.CompiledGraph:
    w = StateGraph(State)
    w.add_node("a", lambda s: {"log": ["a"]})
    w.add_node("b1", lambda s: {"log": ["b1"]})
    w.add_node("b2", lambda s: {"log": ["b2"]})
    w.add_node("join", lambda s: {"log": [f"join:{len(s['log'])}"]}, defer=True)
    w.add_edge(START, "a")
    w.add_edge(START, "b1")
    w.add_edge("b1", "b2")
    w.add_edge("a", "join")
    w.add_edge("b2", "join")
    w.add_edge("join", END)
    return w.compile(checkpointer=store, interrupt_before=["b2"] if stop else None)


def test_a_deferred_nodes_wait_replays_and_resumes_in_a_fresh_graph(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'defer.db'}"
    config = {"configurable": {"thread_id": "d"}}
    store = wayline.connect(url)  # stops at b2 while join is held back
    _deferred(store, stop=True).invoke({"log": []}, config)
    assert _deferred(store, stop=True).get_state(config).next == ("b2",)
    store.close()
    store = wayline.connect(url)  # a fresh store and graph continue it
    graph = _deferred(store, stop=False)
    out = graph.invoke(None, config)
    assert out["log"] == ["a", "b1", "b2", "join:3"]
    assert graph.verify(config).ok  # the held step's routing folds as it ran
    store.close()


def test_a_timeout_is_retried_then_fails_the_run_with_its_steps_kept() -> None:
    calls: list[int] = []

    async def hang(state: State) -> State:
        calls.append(1)
        await asyncio.sleep(5)
        return {"log": ["late"]}

    retry = RetryPolicy(max_attempts=2, initial_interval=0.0, jitter=False)  # default retry_on
    g = (
        StateGraph(State)
        .add_node("hang", hang, timeout=TimeoutPolicy(run_timeout=0.02), retry_policy=retry)
        .add_edge(START, "hang")
        .compile()
    )
    with pytest.raises(NodeTimeoutError) as info:
        asyncio.run(g.ainvoke({"log": []}))
    assert len(calls) == 2 and info.value.kind == "run" and info.value.node == "hang"


def test_a_sends_timeout_survives_the_next_tasks_wire_and_the_codec() -> None:
    """``Send(..., timeout=)``: the task it plans keeps the timeout through a snapshot's
    next tasks and the codec; a Send or task without one is stored as it always was."""
    from wayline.codec import Codec
    from wayline.graph.algo import PUSH, TaskSpec
    from wayline.graph.timeouts import TimeoutPolicy
    from wayline.graph.types import Send

    policy = TimeoutPolicy(idle_timeout=0.05)
    timed = TaskSpec("slow", (PUSH, 0), {"x": 1}, policy)
    plain = TaskSpec("slow", (PUSH, 1), {"x": 0})
    assert plain.to_wire() == ["slow", [PUSH, 1], {"x": 0}]
    assert TaskSpec.from_wire(timed.to_wire()) == timed
    assert TaskSpec.from_wire(plain.to_wire()) == plain
    codec = Codec()
    codec.register(Send, "wayline.Send")
    codec.register(TimeoutPolicy, "wayline.TimeoutPolicy")
    assert codec.loads(codec.dumps(Send("slow", 1, timeout=policy))).timeout == policy
    assert codec.dumps(Send("slow", 1)) == codec.dumps(Send("slow", 1, timeout=None))
    assert b"timeout" not in codec.dumps(Send("slow", 1))
    # a number is a run timeout, as LangGraph (made a TimeoutPolicy when the Send is made)
    assert Send("slow", 1, timeout=2).timeout == TimeoutPolicy(run_timeout=2.0)  # type: ignore[arg-type]


def test_a_breakpoint_before_an_error_handler_pauses_after_the_failure_is_recorded(
    tmp_path: Path,
) -> None:
    """``interrupt_before=["__error_handler__<node>"]``: the node fails for good, the step
    pauses with its failure recorded, and continuing the run (in a fresh process: a new
    store handle) runs the handler on the recorded failure, not the node again."""
    from wayline.errors import NodeError

    calls: list[str] = []

    def fails(state: State) -> dict[str, list[str]]:
        calls.append("node")
        raise RuntimeError("boom")

    def handler(state: State, error: NodeError) -> dict[str, list[str]]:
        calls.append(f"handler {error.node}: {error.error}")
        return {"log": ["handled"]}

    def build(store: wayline.Store) -> wayline.graph.CompiledGraph:
        g = StateGraph(State)
        g.add_node("fails", fails, error_handler=handler)
        g.add_edge(START, "fails")
        return g.compile(checkpointer=store, interrupt_before=["__error_handler__fails"])

    url = f"sqlite:///{tmp_path / 'handler.db'}"
    config = {"configurable": {"thread_id": "h"}}
    first = build(wayline.connect(url))
    assert first.invoke({"log": []}, config) == {"log": []}
    assert calls == ["node"]
    assert first.get_state(config).next == ("fails",)
    again = build(wayline.connect(url))
    assert again.invoke(None, config) == {"log": ["handled"]}
    assert calls == ["node", "handler fails: RuntimeError: boom"]
    with pytest.raises(wayline.errors.UnknownNodeError, match="__error_handler__other"):
        build(wayline.connect(url)).builder.compile(interrupt_before=["__error_handler__other"])
