"""ainvoke and astream with async (and sync) nodes: the same semantics as the sync driver."""

from __future__ import annotations

import asyncio
import operator
from collections import Counter
from typing import Annotated, Any, TypedDict

import pytest

from wayline import END, START, Command, NodeContext, Send, StateGraph, interrupt


class State(TypedDict):
    log: Annotated[list[Any], operator.add]


def cfg(thread: str = "t") -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def run(coro: Any) -> Any:
    return asyncio.run(coro)


async def collect(agen: Any) -> list[Any]:
    return [item async for item in agen]


def mixed_graph() -> StateGraph:
    async def fetch(state: State) -> dict[str, Any]:
        return {"log": ["fetch"]}

    def parse(state: State) -> dict[str, Any]:  # a sync node in an async run
        return {"log": ["parse"]}

    async def fan(arg: int, ctx: NodeContext) -> dict[str, Any]:
        return {"log": [f"fan{arg}@{ctx.node}"]}

    g = StateGraph(State)
    g.add_node("fetch", fetch)
    g.add_node("parse", parse)
    g.add_node("fan", fan)
    g.add_edge(START, "fetch")
    g.add_edge(START, "parse")
    g.add_conditional_edges("parse", lambda s: [Send("fan", i) for i in range(3)])
    g.add_edge("fan", END)
    return g


EXPECTED = {"log": ["fetch", "parse", "fan0@fan", "fan1@fan", "fan2@fan"]}


def test_ainvoke_runs_async_and_sync_nodes() -> None:
    app = mixed_graph().compile()
    assert run(app.ainvoke({"log": []}, cfg())) == EXPECTED
    assert app.get_state(cfg()).values == EXPECTED
    run_row = app.store.get_run("default", "t")
    assert run_row is not None and run_row.status == "done"


def test_sync_invoke_runs_async_nodes() -> None:
    assert mixed_graph().compile().invoke({"log": []}) == EXPECTED


def test_astream_matches_stream() -> None:
    app = mixed_graph().compile()
    sync_chunks = list(app.stream({"log": []}, cfg("sync"), stream_mode=["updates", "values"]))
    async_chunks = run(
        collect(app.astream({"log": []}, cfg("async"), stream_mode=["updates", "values"]))
    )
    assert async_chunks == sync_chunks
    assert async_chunks[-1] == ("values", EXPECTED)


def test_parallel_async_nodes_run_concurrently() -> None:
    async def main() -> dict[str, Any]:
        ready = asyncio.Event()

        async def waiter(state: State) -> dict[str, Any]:
            await asyncio.wait_for(ready.wait(), timeout=10)  # hangs if run after "setter"
            return {"log": ["waiter"]}

        async def setter(state: State) -> dict[str, Any]:
            ready.set()
            return {"log": ["setter"]}

        g = StateGraph(State)
        g.add_node("a_waiter", waiter)
        g.add_node("b_setter", setter)
        g.add_edge(START, "a_waiter")
        g.add_edge(START, "b_setter")
        return await g.compile().ainvoke({"log": []})

    assert run(main()) == {"log": ["waiter", "setter"]}


def test_async_interrupt_and_resume() -> None:
    calls: Counter[str] = Counter()

    async def ask(state: State) -> dict[str, Any]:
        calls["ask"] += 1
        answer = interrupt("approve?")
        return {"log": [answer]}

    async def peer(state: State) -> dict[str, Any]:
        calls["peer"] += 1
        return {"log": ["peer"]}

    g = StateGraph(State)
    g.add_node("ask", ask)
    g.add_node("peer", peer)
    g.add_edge(START, "ask")
    g.add_edge(START, "peer")
    app = g.compile()

    async def main() -> tuple[dict[str, Any], dict[str, Any]]:
        first = await app.ainvoke({"log": []}, cfg())
        second = await app.ainvoke(Command(resume="approved"), cfg())
        return first, second

    first, second = run(main())
    assert [i.value for i in first["__interrupt__"]] == ["approve?"]
    assert second == {"log": ["approved", "peer"]}
    assert calls == Counter(ask=2, peer=1)


def test_async_node_exception_is_recorded_and_resumable() -> None:
    fail = {"on": True}

    async def flaky(state: State) -> dict[str, Any]:
        if fail["on"]:
            raise ConnectionError("upstream down")
        return {"log": ["flaky"]}

    g = StateGraph(State)
    g.add_node("flaky", flaky)
    g.set_entry_point("flaky")
    app = g.compile()
    with pytest.raises(ConnectionError):
        run(app.ainvoke({"log": []}, cfg()))
    run_row = app.store.get_run("default", "t")
    assert run_row is not None and run_row.status == "failed"
    fail["on"] = False
    assert run(app.ainvoke(None, cfg())) == {"log": ["flaky"]}


def test_cancelling_ainvoke_cancels_the_running_async_node_before_it_returns() -> None:
    """As LangGraph: cancelling the task that awaits ``ainvoke`` delivers CancelledError
    to the async node at its await, and the node has stopped by the time the cancelled
    call returns; the next node never runs."""
    timeline: list[str] = []

    async def main() -> None:
        started = asyncio.Event()

        async def slow(state: dict[str, Any]) -> dict[str, Any]:
            started.set()
            try:
                await asyncio.Event().wait()  # never set: only a cancel ends it
            except asyncio.CancelledError:
                timeline.append("slow:cancelled")
                raise
            return {"first": "done"}

        async def second(state: dict[str, Any]) -> dict[str, Any]:
            timeline.append("second:ran")
            return {}

        g = StateGraph(dict).add_node("slow", slow).add_node("second", second)
        g.add_edge(START, "slow").add_edge("slow", "second")
        running = asyncio.create_task(g.compile().ainvoke({}))
        await started.wait()
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
        timeline.append("caller:done")

    asyncio.run(main())
    assert timeline == ["slow:cancelled", "caller:done"]
