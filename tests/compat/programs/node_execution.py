"""Node execution as LangGraph shows it: a graph compiled without a checkpointer saves no
checkpoint, so neither ``checkpoints`` nor ``debug`` streams one; ``Send(node, arg,
timeout=...)`` bounds that task instead of the node's own timeout, also when the run
stopped at a breakpoint before the task and resumed; a node's error handler streams its
update as the node ``__error_handler__<node>``, and ``interrupt_after`` may name it."""

import asyncio
import operator
from typing import Annotated

from langgraph.errors import NodeError, NodeTimeoutError
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, Send, TimeoutPolicy
from typing_extensions import TypedDict


class State(TypedDict):
    log: Annotated[list, operator.add]


def _no_checkpointer() -> list:
    g = StateGraph(State)
    g.add_node("a", lambda s: {"log": ["a"]})
    g.add_edge(START, "a")
    app = g.compile()
    seen = []
    for mode, chunk in app.stream({"log": []}, stream_mode=["debug", "checkpoints"]):
        seen.append((mode, chunk["type"], chunk["step"]) if mode == "debug" else (mode,))
    return seen


def _send_timeout(checkpointer) -> list:
    async def slow(arg: dict) -> dict:
        await asyncio.sleep(0.3 if arg["x"] else 0)
        return {"log": [arg["x"]]}

    def route(state: State) -> list:
        return [
            Send("slow", {"x": 1}, timeout=TimeoutPolicy(idle_timeout=0.05)),
            Send("slow", {"x": 0}, timeout=0.5),
        ]

    g = StateGraph(State)
    g.add_node("slow", slow, timeout=TimeoutPolicy(idle_timeout=2.0))
    g.add_conditional_edges(START, route)
    g.add_edge("slow", END)
    seen = [repr(Send("slow", 1)), repr(Send("slow", 1, timeout=2))]
    for before in (None, ["slow"]):
        app = g.compile(checkpointer=checkpointer, interrupt_before=before)
        config = {"configurable": {"thread_id": f"send-timeout-{before}"}}
        run = {"log": []}
        if before:  # stopped before the sent tasks: they keep their timeouts
            asyncio.run(app.ainvoke(run, config))
            seen.append(app.get_state(config).next)
            run = None
        try:
            asyncio.run(app.ainvoke(run, config))
        except NodeTimeoutError as exc:
            seen.append((exc.node, exc.kind, exc.idle_timeout, exc.run_timeout))
    return seen


def _error_handler(checkpointer) -> list:
    def fails(state: State) -> dict:
        raise RuntimeError("boom")

    def handler(state: State, error: NodeError) -> Command:
        return Command(update={"log": [f"handled {error.node}"]}, goto="after")

    g = StateGraph(State)
    g.add_node("fails", fails, error_handler=handler)
    g.add_node("after", lambda s: {"log": ["after"]})
    g.add_edge(START, "fails")
    app = g.compile(checkpointer=checkpointer, interrupt_after=["__error_handler__fails"])
    config = {"configurable": {"thread_id": "handler"}}
    seen = [list(app.stream({"log": []}, config)), app.get_state(config).next]
    seen.append(list(app.stream(None, config)))
    return seen


def main(checkpointer):
    return [_no_checkpointer(), _send_timeout(checkpointer), _error_handler(checkpointer)]
