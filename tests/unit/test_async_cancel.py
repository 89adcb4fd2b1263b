"""Cancellation in the async driver, as LangGraph: a node that fails for good cancels its
running peers; a consumer that stops a stream cancels the nodes still running; a step that
outlasts ``step_timeout`` is cancelled. What finished before stays (invariant 5)."""

from __future__ import annotations

import asyncio
import contextlib
import operator
import time
from collections.abc import AsyncGenerator
from typing import Annotated, Any, TypedDict, cast

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


def test_closing_an_astream_cancels_the_running_nodes_and_keeps_finished_peers() -> None:
    """As LangGraph: a task's update streams when the task finishes; a consumer that stops
    there cancels the peer still running (stopped when ``aclose`` returns), the next step
    never starts, and the finished peer's write is kept as a pending write."""
    seen: list[str] = []

    async def main() -> Any:
        async def quick(state: State) -> dict[str, Any]:
            await asyncio.sleep(0.05)
            return {"value": 2}

        async def slow(state: State) -> dict[str, Any]:
            try:
                await asyncio.sleep(3)  # far longer than quick: a cancel ends it first
            except asyncio.CancelledError:
                seen.append("slow:cancelled")
                raise
            return {"value": 10}

        async def after(state: State) -> dict[str, Any]:
            seen.append("after:ran")
            return {}

        g = StateGraph(State).add_node("quick", quick).add_node("slow", slow)
        g.add_node("after", after).add_edge(START, "quick").add_edge(START, "slow")
        g.add_edge("quick", "after")
        app = g.compile()
        chunks = []
        stream = cast("AsyncGenerator[Any, None]", app.astream({"value": 1}, cfg()))
        async with contextlib.aclosing(stream):
            async for chunk in stream:
                chunks.append(chunk)
                break
        seen.append("closed")
        state = await app.aget_state(cfg())
        return chunks, state.values, state.next

    chunks, values, nxt = asyncio.run(main())
    assert chunks == [{"quick": {"value": 2}}]
    assert seen == ["slow:cancelled", "closed"]
    assert values == {"value": 3}
    assert nxt == ("slow",)


def test_a_step_past_step_timeout_cancels_its_running_nodes_and_raises_timeout() -> None:
    """LangGraph's ``step_timeout``: the finished task's update is streamed, the one still
    running at the deadline is cancelled, and the stream raises ``TimeoutError``."""
    seen: list[str] = []

    async def main() -> list[Any]:
        async def quick(state: State) -> dict[str, Any]:
            return {"value": 2}

        async def slow(state: State) -> dict[str, Any]:
            try:
                await asyncio.sleep(3)
            except asyncio.CancelledError:
                seen.append("slow:cancelled")
                raise
            return {"value": 10}

        g = StateGraph(State).add_node("quick", quick).add_node("slow", slow)
        g.add_edge(START, "quick").add_edge(START, "slow")
        app = g.compile()
        app.step_timeout = 0.3
        chunks: list[Any] = []
        with pytest.raises(TimeoutError):
            async for chunk in app.astream({"value": 1}, cfg()):
                chunks.append(chunk)
        return chunks

    assert asyncio.run(main()) == [{"quick": {"value": 2}}]
    assert seen == ["slow:cancelled"]
