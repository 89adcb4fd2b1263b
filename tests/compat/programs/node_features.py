"""Node execution features: TimeoutPolicy (a timeout is a failure the retry policy sees,
and a timed-out run resumes from its checkpoint), a list of RetryPolicy (the first whose
retry_on matches applies), set_node_defaults(timeout=), defer=True, CachePolicy with
InMemoryCache, config["max_concurrency"],
the order of parallel updates in astream, routers taking runtime or config (async too)."""

import asyncio
import operator
from dataclasses import dataclass
from typing import Annotated

from langgraph.cache.memory import InMemoryCache
from langgraph.errors import NodeCancelledError, NodeTimeoutError
from langgraph.func import entrypoint, task
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import CachePolicy, RetryPolicy, Send, TimeoutPolicy
from typing_extensions import TypedDict


@dataclass
class Ctx:
    go: str


class State(TypedDict):
    x: int
    log: Annotated[list, operator.add]


def main(checkpointer):
    seen = []
    attempts = []

    async def slow_once(state: State):
        attempts.append(len(attempts))
        if len(attempts) == 1:
            await asyncio.sleep(5)  # the first attempt hangs: cancelled by its timeout
        return {"x": state["x"] + 1, "log": ["slow"]}

    retry = RetryPolicy(
        max_attempts=3, initial_interval=0.0, jitter=False, retry_on=NodeTimeoutError
    )
    b = StateGraph(State)
    b.add_node("slow", slow_once, timeout=TimeoutPolicy(idle_timeout=0.05), retry_policy=retry)
    b.add_edge(START, "slow")
    b.add_edge("slow", END)
    g = b.compile(checkpointer=checkpointer)
    seen.append(asyncio.run(g.ainvoke({"x": 0, "log": []}, {"configurable": {"thread_id": "t1"}})))
    seen.append(len(attempts))

    # no retry: the timeout fails the run, and the run resumes from its checkpoint
    attempts.clear()
    b = StateGraph(State)
    b.add_node("first", lambda s: {"log": ["first"]})
    b.add_node("slow", slow_once, timeout=0.05)
    b.add_edge(START, "first")
    b.add_edge("first", "slow")
    g = b.compile(checkpointer=checkpointer)
    config = {"configurable": {"thread_id": "t2"}}
    try:
        asyncio.run(g.ainvoke({"x": 10, "log": []}, config))
    except NodeTimeoutError as exc:
        seen.append((exc.node, exc.kind, exc.run_timeout, exc.idle_timeout, exc.timeout))
    seen.append(g.get_state(config).next)
    seen.append(asyncio.run(g.ainvoke(None, config)))

    # heartbeats keep an idle timeout from firing
    async def beating(state: State, runtime):
        for _ in range(4):
            await asyncio.sleep(0.03)
            runtime.heartbeat()
        return {"log": ["beat"]}

    b = StateGraph(State)
    b.add_node("beating", beating, timeout=TimeoutPolicy(idle_timeout=0.08, refresh_on="heartbeat"))
    b.add_edge(START, "beating")
    seen.append(asyncio.run(b.compile().ainvoke({"x": 0, "log": []})))

    # a list of retry policies: the first that matches the error applies
    counts = {"ValueError": 0, "KeyError": 0}

    def failing(state: State):
        kind = "ValueError" if state["x"] == 0 else "KeyError"
        counts[kind] += 1
        if counts[kind] < (2 if kind == "ValueError" else 3):
            raise ValueError("v") if kind == "ValueError" else KeyError("k")
        return {"log": [kind]}

    policies = (
        RetryPolicy(max_attempts=2, initial_interval=0.0, jitter=False, retry_on=ValueError),
        RetryPolicy(max_attempts=3, initial_interval=0.0, jitter=False, retry_on=KeyError),
    )
    g = (
        StateGraph(State)
        .add_node("n", failing, retry_policy=policies)
        .add_edge(START, "n")
        .compile()
    )
    seen.append(g.invoke({"x": 0, "log": []}))
    seen.append(g.invoke({"x": 1, "log": []}))
    seen.append(dict(counts))

    # set_node_defaults: a default timeout, overridden per node
    async def quick(state: State):
        await asyncio.sleep(0.05)
        return {"log": ["quick"]}

    b = StateGraph(State).set_node_defaults(timeout=TimeoutPolicy(run_timeout=0.01))
    b.add_node("quick", quick, timeout=TimeoutPolicy(run_timeout=5.0))
    b.add_node("late", quick)
    b.add_edge(START, "quick")
    b.add_edge("quick", "late")
    try:
        asyncio.run(b.compile().ainvoke({"x": 0, "log": []}))
    except NodeTimeoutError as exc:
        seen.append((exc.node, exc.kind))

    # a deferred node runs once, when the run would otherwise end
    w = StateGraph(State)
    w.add_node("fan", lambda s: {"log": ["fan"]})
    w.add_node("short", lambda s: {"log": ["short"]})
    w.add_node("long1", lambda s: {"log": ["long1"]})
    w.add_node("long2", lambda s: {"log": ["long2"]})
    w.add_node("join", lambda s: {"log": [f"join after {len(s['log'])}"]}, defer=True)
    w.add_edge(START, "fan")
    w.add_edge("fan", "short")
    w.add_edge("fan", "long1")
    w.add_edge("long1", "long2")
    w.add_edge("short", "join")
    w.add_edge("long2", "join")
    w.add_edge("join", END)
    g = w.compile(checkpointer=checkpointer)
    config = {"configurable": {"thread_id": "defer"}}
    seen.append(list(g.stream({"x": 0, "log": []}, config)))
    seen.append([sorted(s.next) for s in g.get_state_history(config)][:4])

    # a cached node reuses its output for the same input (the step still commits it)
    calls = []

    def expensive(state: State):
        calls.append(state["x"])
        return {"log": [f"computed {state['x']}"]}

    g = (
        StateGraph(State)
        .add_node("expensive", expensive, cache_policy=CachePolicy(ttl=60))
        .add_edge(START, "expensive")
        .compile(checkpointer=checkpointer, cache=InMemoryCache())
    )
    for thread in ("c1", "c2"):
        seen.append(list(g.stream({"x": 1, "log": []}, {"configurable": {"thread_id": thread}})))
    seen.append(g.get_state({"configurable": {"thread_id": "c2"}}).values)
    g.clear_cache()
    g.invoke({"x": 1, "log": []}, {"configurable": {"thread_id": "c3"}})
    seen.append(calls)

    # config["max_concurrency"] bounds how many of a step's tasks run at once
    running = [0, 0]

    async def work(state: State):
        running[0] += 1
        running[1] = max(running)
        await asyncio.sleep(0.005)
        running[0] -= 1
        return {"log": [state["x"]]}

    def fan_out(state: State):
        return [Send("work", {"x": i, "log": []}) for i in range(12)]

    g = StateGraph(State).add_node("work", work).add_conditional_edges(START, fan_out).compile()
    seen.append(asyncio.run(g.ainvoke({"x": 0, "log": []}, {"max_concurrency": 3})))
    seen.append(running[1])

    # astream yields parallel tasks' updates in the order they finished
    async def slow_a(state: State):
        await asyncio.sleep(0.05)
        return {"log": ["a"]}

    async def quick_b(state: State):
        return {"log": ["b"]}

    g = (
        StateGraph(State)
        .add_node("a", slow_a)
        .add_node("b", quick_b)
        .add_edge(START, "a")
        .add_edge(START, "b")
        .compile()
    )

    async def chunks():
        return [c async for c in g.astream({"x": 0, "log": []})]

    seen.append(asyncio.run(chunks()))

    # a router may take the runtime (its context) or the config; an async one is awaited
    def by_context(state: State, runtime: Runtime[Ctx]):
        return runtime.context.go

    async def by_config(state: State, config):
        return "b" if config["configurable"].get("pick_b") else "a"

    for router in (by_context, by_config):
        w = StateGraph(State, context_schema=Ctx)
        w.add_node("a", lambda s: {"log": ["a"]})
        w.add_node("b", lambda s: {"log": ["b"]})
        w.add_node("first", lambda s: {"log": ["first"]})
        w.add_edge(START, "first")
        w.add_conditional_edges("first", router, ["a", "b"])
        g = w.compile()
        if router is by_context:  # LangGraph runs an async router only in ainvoke
            seen.append(g.invoke({"x": 0, "log": []}, context=Ctx(go="b")))
        run_b = {"configurable": {"pick_b": True}}
        seen.append(asyncio.run(g.ainvoke({"x": 0, "log": []}, run_b, context=Ctx(go="a"))))

    # @task(timeout=) and @entrypoint(timeout=) bound each attempt the same way
    @task(timeout=TimeoutPolicy(idle_timeout=0.05))
    async def slow_task(x: int) -> int:
        await asyncio.sleep(5)
        return x

    @entrypoint()
    async def flow(x: int) -> int:
        return await slow_task(x)

    @entrypoint(timeout=0.05)
    async def slow_flow(x: int) -> int:
        await asyncio.sleep(5)
        return x

    for workflow in (flow, slow_flow):
        try:
            asyncio.run(workflow.ainvoke(1))
        except NodeTimeoutError as exc:
            seen.append((exc.node, exc.kind))

    # a node raising CancelledError itself fails the run (NodeCancelledError), as any error
    async def boom(state: State):
        raise asyncio.CancelledError("from the node body")

    g = (
        StateGraph(State)
        .add_node("ok", lambda s: {"log": ["ok"]})
        .add_node("boom", boom)
        .add_edge(START, "ok")
        .add_edge(START, "boom")
        .compile()
    )
    try:
        asyncio.run(g.ainvoke({"x": 0, "log": []}))
    except NodeCancelledError as exc:
        seen.append((exc.node, type(exc.__cause__).__name__))
    return seen
