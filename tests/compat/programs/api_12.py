"""LangGraph 1.2's newer graph API, as its own tests use it: async state reads, bulk
updates, JSON schemas, RunControl drains, error handlers and node defaults, the runtime's
execution info, an InMemorySaver class, context dicts coerced into the context schema,
and managed RemainingSteps."""

import asyncio
import dataclasses
import operator
from typing import Annotated, NotRequired

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import GraphDrained, NodeError
from langgraph.graph import END, START, StateGraph
from langgraph.managed import RemainingSteps
from langgraph.runtime import DEFAULT_RUNTIME, RunControl, Runtime
from langgraph.types import Command, RetryPolicy, StateUpdate
from typing_extensions import TypedDict


class State(TypedDict):
    route: str
    log: Annotated[list[str], operator.add]


@dataclasses.dataclass
class Context:
    user: str
    tone: str = "plain"


def drained(checkpointer):
    control = RunControl()

    def first(state: State):
        control.request_drain("sigterm")
        return {"log": ["first"]}

    graph = (
        StateGraph(State)
        .add_node("first", first)
        .add_node("second", lambda s: {"log": ["second"]})
        .add_edge(START, "first")
        .add_edge("first", "second")
        .compile(checkpointer=checkpointer)
    )
    config = {"configurable": {"thread_id": "drain"}}
    try:
        graph.invoke({"route": "", "log": []}, config, control=control)
        stopped = None
    except GraphDrained as exc:
        stopped = ("sigterm" in str(exc), exc.reason)
    return [stopped, graph.get_state(config).next, graph.invoke(None, config)]


def handled(checkpointer):
    def fail(state: State):
        raise RuntimeError(f"{state['route']} failed")

    def by_default(state: State, error: NodeError):
        return {"log": [f"default:{error.node}:{error.error}"]}

    def own(state: State, error: NodeError):
        return Command(update={"log": [f"own:{error.node}"]}, goto="after")

    graph = (
        StateGraph(State)
        .set_node_defaults(error_handler=by_default)
        .add_node("route_node", lambda s: Command(goto=s["route"]))
        .add_node("a", fail)
        .add_node("b", fail, error_handler=own, retry_policy=RetryPolicy(max_attempts=1))
        .add_node("after", lambda s: {"log": ["after"]})
        .add_edge(START, "route_node")
        .compile(checkpointer=checkpointer)
    )
    runs = [("h1", "a"), ("h2", "b")]
    return [
        graph.invoke({"route": r, "log": []}, {"configurable": {"thread_id": t}}) for t, r in runs
    ]


def inspected(checkpointer):
    seen = {}

    def node(state: State, runtime: Runtime[Context]):
        info = runtime.execution_info
        seen["info"] = (info.thread_id, bool(info.task_id), runtime.context.tone)
        return {"log": [runtime.context.user]}

    graph = (
        StateGraph(State, Context)
        .add_node("node", node)
        .add_edge(START, "node")
        .add_edge("node", END)
        .compile(checkpointer=checkpointer)
    )
    config = {"configurable": {"thread_id": "ins"}}
    out = graph.invoke({"route": "", "log": []}, config, context={"user": "ada"})
    graph.bulk_update_state(
        config, [[StateUpdate({"log": ["fixed"]}, "node")], [StateUpdate({"route": "r"}, None)]]
    )

    async def read():
        state = await graph.aget_state(config)
        history = [s async for s in graph.aget_state_history(config, limit=2)]
        return [state.values, [h.values for h in history]]

    try:
        graph.invoke({"route": "", "log": []}, config, context={"nobody": 1})
        refused = None
    except TypeError:
        refused = "TypeError"
    return [
        out,
        seen["info"],
        asyncio.run(read()),
        refused,
        graph.get_input_jsonschema(),
        graph.get_context_jsonschema(),
        isinstance(InMemorySaver(), InMemorySaver),
        DEFAULT_RUNTIME.context,
    ]


class Counted(TypedDict):
    n: int
    remaining_steps: NotRequired[RemainingSteps]


def counted(checkpointer):
    seen = []

    def step(state: Counted):
        seen.append(state["remaining_steps"])
        return {"n": state["n"] + 1}

    graph = (
        StateGraph(Counted)
        .add_node("step", step)
        .add_edge(START, "step")
        .add_conditional_edges("step", lambda s: END if s["remaining_steps"] < 3 else "step")
        .compile(checkpointer=checkpointer)
    )
    out = graph.invoke({"n": 0}, {"configurable": {"thread_id": "c"}, "recursion_limit": 6})
    return [out, seen]


def main(checkpointer):
    return [
        drained(checkpointer),
        handled(checkpointer),
        inspected(checkpointer),
        counted(checkpointer),
    ]
