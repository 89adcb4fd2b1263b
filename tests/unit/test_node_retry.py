"""add_node(..., retry_policy=...): a node that raises runs again in place, within its step,
with the same effect keys; without a policy, or past its budget, the error stands."""

from __future__ import annotations

import asyncio
from typing import Any, TypedDict

import pytest

import wayline
from wayline import END, START, RetryPolicy, StateGraph

FAST = RetryPolicy(max_attempts=3, initial_delay=0.0, max_delay=0.0, jitter=False)


class S(TypedDict, total=False):
    out: str


def flaky_graph(
    failures: int, policy: RetryPolicy | None, calls: list[str], sent: list[str]
) -> Any:
    def node(s: S, ctx: wayline.NodeContext) -> dict[str, Any]:
        def send(key: str) -> str:
            sent.append(key)
            return f"sent {len(sent)}"

        receipt = ctx.effect("send", send)
        calls.append(receipt)
        if len(calls) <= failures:
            raise ConnectionError(f"flaky {len(calls)}")
        return {"out": receipt}

    g = StateGraph(S)
    g.add_node("node", node, retry_policy=policy)
    g.add_edge(START, "node")
    g.add_edge("node", END)
    return g.compile()


def test_a_node_retries_in_place_and_its_effect_happens_once() -> None:
    calls: list[str] = []
    sent: list[str] = []
    app = flaky_graph(2, FAST, calls, sent)
    assert app.invoke({}, {"configurable": {"thread_id": "r"}}) == {"out": "sent 1"}
    assert calls == ["sent 1"] * 3 and len(sent) == 1  # three runs of the node, one effect


def test_past_the_budget_the_error_stands() -> None:
    app = flaky_graph(5, FAST, [], [])
    with pytest.raises(ConnectionError, match="flaky 3"):
        app.invoke({}, {"configurable": {"thread_id": "r"}})


def test_without_a_policy_a_node_is_not_retried() -> None:
    calls: list[str] = []
    with pytest.raises(ConnectionError, match="flaky 1"):
        flaky_graph(1, None, calls, []).invoke({}, {"configurable": {"thread_id": "r"}})
    assert len(calls) == 1


def test_async_nodes_retry_too() -> None:
    attempts = []

    async def node(s: S) -> dict[str, Any]:
        attempts.append(1)
        if len(attempts) < 3:
            raise TimeoutError("slow")
        return {"out": "done"}

    g = StateGraph(S)
    g.add_node(
        "node",
        node,
        retry_policy=RetryPolicy(initial_interval=0.0, jitter=False, retry_on=TimeoutError),
    )
    g.add_edge(START, "node")
    g.add_edge("node", END)
    out = asyncio.run(g.compile().ainvoke({}, {"configurable": {"thread_id": "a"}}))
    assert out == {"out": "done"} and len(attempts) == 3


def test_retry_on_chooses_what_is_worth_another_attempt() -> None:
    only_io = RetryPolicy(
        max_attempts=3, initial_delay=0.0, jitter=False, retry_on=lambda e: isinstance(e, OSError)
    )
    attempts = []

    def node(s: S) -> dict[str, Any]:
        attempts.append(1)
        raise ValueError("a bug, not a glitch")

    g = StateGraph(S)
    g.add_node("node", node, retry_policy=only_io)
    g.add_edge(START, "node")
    g.add_edge("node", END)
    with pytest.raises(ValueError):
        g.compile().invoke({}, {"configurable": {"thread_id": "v"}})
    assert len(attempts) == 1
