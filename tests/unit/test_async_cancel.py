"""Cancellation in the async driver, as LangGraph: a node that fails for good cancels its
running peers; a consumer that stops a stream cancels the nodes still running; a step that
outlasts ``step_timeout`` is cancelled. What finished before stays (invariant 5)."""

from __future__ import annotations

import asyncio
import contextlib
import operator
import time
from typing import Annotated, Any, TypedDict

import pytest

from wayline import START, StateGraph


class State(TypedDict):
    value: Annotated[int, operator.add]


def cfg(thread: str = "t") -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def test_a_failing_node_cancels_its_running_peers_and_its_error_is_raised_at_once() -> None:
    seen: list[str] = []

    async def main() -> float:
        async def slow(state: State) -> dict[str, Any]:
            try:
                await asyncio.Event().wait()  # only a cancel ends it
            except asyncio.CancelledError:
                seen.append("slow:cancelled")
                raise
            return {"value": 1}

        async def bad(state: State) -> dict[str, Any]:
            raise ValueError("I am bad")

        g = StateGraph(State).add_node("slow", slow).add_node("bad", bad)
        g.add_edge(START, "slow").add_edge(START, "bad")
        began = time.monotonic()
        with pytest.raises(ValueError, match="I am bad"):
            await asyncio.wait_for(g.compile().ainvoke({"value": 0}), 5)
        return time.monotonic() - began

    took = asyncio.run(main())
    assert seen == ["slow:cancelled"]
    assert took < 5
