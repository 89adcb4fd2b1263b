"""``invoke(..., stream_mode=...)`` and ``ainvoke``: with ``"values"`` (the default) the
result is the state; with another mode, or a list of modes, it is the list of chunks
``stream`` would yield for them (an interrupted run's ``__interrupt__`` chunk included),
for a ``StateGraph`` and an ``@entrypoint`` alike."""

import asyncio
import operator
from typing import Annotated

from langgraph.func import entrypoint, task
from langgraph.graph import START, StateGraph
from langgraph.types import interrupt
from typing_extensions import TypedDict


class Log(TypedDict):
    log: Annotated[list, operator.add]


def _graph(checkpointer):
    g = StateGraph(Log)
    g.add_node("a", lambda s: {"log": ["a"]})
    g.add_node("ask", lambda s: {"log": [interrupt("ok?")]})
    g.add_edge(START, "a")
    g.add_edge("a", "ask")
    return g.compile(checkpointer=checkpointer)


def _shown(got):
    """A result, without the random parts: a state's keys, a chunk list's chunks (a tasks
    chunk's keys, a (mode, chunk) pair as it is)."""
    if not isinstance(got, list):
        return sorted(got)
    return [c if isinstance(c, tuple) or "id" not in c else sorted(c) for c in got]


def main(checkpointer):
    app = _graph(checkpointer)
    out = []
    for i, mode in enumerate(["values", "updates", ["updates", "values"], "tasks"]):
        config = {"configurable": {"thread_id": f"sync-{i}"}}
        out.append(_shown(app.invoke({"log": ["in"]}, config, stream_mode=mode)))

    async def amain():
        config = {"configurable": {"thread_id": "async"}}
        return await app.ainvoke({"log": ["in"]}, config, stream_mode="updates")

    out.append([sorted(c) for c in asyncio.run(amain())])

    @task
    def double(x: int) -> int:
        return 2 * x

    @entrypoint(checkpointer=checkpointer)
    def flow(x: int) -> int:
        return double(x).result() + 1

    config = {"configurable": {"thread_id": "flow"}}
    out.append(flow.invoke(3, config))
    out.append(flow.invoke(3, {"configurable": {"thread_id": "flow-u"}}, stream_mode="updates"))
    return out
