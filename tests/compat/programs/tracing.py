"""LangChain callbacks in the config see a graph call as LangGraph shows it: a root chain
run per call, a child run per node call (tagged with its step), a runnable called in a
node nested under the node's run, a ``@task`` that runs nested under its entrypoint's run
(with its arguments by name as inputs), a node's error on its run and the root's, and a
chat model's run under its node while ``stream_mode="messages"`` streams its tokens."""

import asyncio

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableLambda
from langchain_core.tracers import BaseTracer
from langgraph.func import entrypoint, task
from langgraph.graph import START, MessagesState, StateGraph
from typing_extensions import TypedDict


class Recorder(BaseTracer):
    def __init__(self):
        super().__init__()
        self.runs = []

    def _persist_run(self, run):
        self.runs.append(run)


def tree(run, exact=True):
    return {
        "name": run.name,
        "tags": [t for t in run.tags or [] if t.startswith(("graph:step", "seq:step")) and exact],
        "inputs": run.inputs,
        "outputs": run.outputs if exact else None,
        "error": (run.error or "").split("(")[0] or None,
        "children": sorted(
            (tree(c, exact) for c in run.child_runs), key=lambda t: str(t["inputs"])
        ),
    }


class S(TypedDict):
    x: int


def main(checkpointer):
    double = RunnableLambda(lambda n: n * 2).with_config(run_name="double")

    def first(s: S):
        return {"x": double.invoke(s["x"])}

    def second(s: S):
        return {"x": s["x"] + 1}

    def bad(s: S):
        raise ValueError("boom")

    graph = (
        StateGraph(S)
        .add_node("first", first)
        .add_node("second", second)
        .add_edge(START, "first")
        .add_edge("first", "second")
        .compile()
    )
    failing = StateGraph(S).add_node("bad", bad).add_edge(START, "bad").compile()

    @task
    def add(a: int, b: int = 2) -> int:
        return a + b

    @task
    async def atask(n: int) -> int:
        return n * 10

    @entrypoint()
    def flow(n: int) -> int:
        return add(n, b=3).result() + add(1).result()

    @entrypoint()
    async def aflow(n: int) -> int:
        return sum(await asyncio.gather(atask(n), atask(n + 1)))

    seen = []
    rec = Recorder()
    seen.append(graph.invoke({"x": 1}, {"callbacks": [rec]}))
    seen.append(list(graph.stream({"x": 1}, {"callbacks": [rec]})))
    try:
        failing.invoke({"x": 1}, {"callbacks": [rec]})
    except ValueError as exc:
        seen.append(str(exc))
    seen.append([tree(r) for r in rec.runs])

    rec = Recorder()
    seen.append(flow.invoke(1, {"callbacks": [rec]}))
    seen.append(asyncio.run(aflow.ainvoke(1, {"callbacks": [rec]})))
    # an entrypoint's run: its output is in wayline's shape, its step one later (as its
    # checkpoints' steps): names and inputs
    seen.append([tree(r, exact=False) for r in rec.runs])
    seen.append([[tree(c) for c in r.child_runs[0].child_runs] for r in rec.runs])

    model = GenericFakeChatModel(messages=iter([AIMessage(content="hello there", id="m1")]))
    chat = (
        StateGraph(MessagesState)
        .add_node("talk", lambda s: {"messages": [model.invoke(s["messages"])]})
        .add_edge(START, "talk")
        .compile()
    )
    rec = Recorder()
    config = {"callbacks": [rec]}
    tokens = chat.stream({"messages": [("user", "hi")]}, config, stream_mode="messages")
    seen.append([(m.content, meta["langgraph_node"]) for m, meta in tokens])
    seen.append([tree(r, exact=False) for r in rec.runs])
    return seen
