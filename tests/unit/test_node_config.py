"""What a node is handed, as LangGraph hands it: its config is a ``dict`` (langchain-core's
async runnables take nothing else), and a dict of Runnables is a node (langchain's
``RunnableParallel``, as LangGraph coerces it)."""

from __future__ import annotations

import asyncio
import copy
import operator
import typing
from typing import Annotated, Any, TypedDict
from unittest.mock import Mock

import pytest
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langchain_core.tools import tool

import wayline
from wayline import START, Command, Send, StateGraph, interrupt
from wayline.errors import GraphError
from wayline.graph.context import NodeContext


class S(TypedDict, total=False):
    log: Annotated[list[str], operator.add]
    doubled: int
    n: int


@tool
def shout(text: str) -> str:
    """Say it loudly."""
    return text.upper()


def test_an_async_node_passes_its_config_to_a_langchain_tool() -> None:
    async def node(s: S, config: Any) -> S:
        assert isinstance(config, dict)  # langchain's run_in_executor takes only a dict
        return {"log": [await shout.ainvoke({"text": "hi"}, typing.cast("RunnableConfig", config))]}

    store = wayline.connect("sqlite:///:memory:")
    app = StateGraph(S).add_node("node", node).add_edge(START, "node").compile(store)
    out = asyncio.run(app.ainvoke({"log": []}, {"configurable": {"thread_id": "t"}}))
    assert out["log"] == ["HI"]


def test_the_context_is_the_config_dict_with_read_only_attributes() -> None:
    seen: list[NodeContext] = []

    def node(s: S, ctx: NodeContext) -> S:
        seen.append(ctx)
        return {"log": [ctx.node]}

    app = StateGraph(S).add_node("node", node).add_edge(START, "node").compile()
    app.invoke({"log": []}, {"configurable": {"thread_id": "t"}})
    (ctx,) = seen
    assert ctx["configurable"]["thread_id"] == "t" and ctx.run_id == "t"
    with pytest.raises(AttributeError, match="read-only"):
        ctx.node = "other"
    assert copy.copy(ctx).task_id == ctx.task_id
    assert copy.deepcopy(ctx) == dict(ctx)  # the config; not the ledger's store


def test_a_dict_of_runnables_is_a_node() -> None:
    double = RunnableLambda(lambda s: s["n"] * 2)
    app = (
        StateGraph(S)
        .add_node("both", {"doubled": double, "log": lambda s: [f"n={s['n']}"]})
        .add_edge(START, "both")
        .compile()
    )
    assert app.invoke({"n": 4, "log": []}) == {"n": 4, "doubled": 8, "log": ["n=4"]}


def test_a_dict_node_with_a_value_that_cannot_run_is_refused() -> None:
    with pytest.raises(GraphError, match="its value for 'n' is a int"):
        StateGraph(S).add_node("bad", {"n": 3})


def test_a_node_taking_only_args_gets_the_state_alone() -> None:
    seen: list[tuple[Any, ...]] = []

    def wrapper(*args: Any) -> S:  # a decorator's wrapper without functools.wraps
        seen.append(args)
        return {"log": ["ran"]}

    counted = Mock(side_effect=lambda state: {"log": ["mock"]})
    app = (
        StateGraph(S)
        .add_node("wrapped", wrapper)
        .add_node("mocked", counted)
        .add_edge(START, "wrapped")
        .add_edge("wrapped", "mocked")
        .compile()
    )
    assert app.invoke({"log": []})["log"] == ["ran", "mock"]
    assert seen == [({"log": []},)]
    counted.assert_called_once_with({"log": ["ran"]})


ROOT_LIST: Any = Annotated[list, operator.add]


def test_a_single_value_state_takes_a_commands_list_update_as_one_value() -> None:
    def fan(state: list[str]) -> Command[Any]:
        return Command(update=["fan"], goto=[Send("echo", "x"), Send("echo", "y")])

    def echo(arg: str) -> list[str]:
        return [f"echo:{arg}"]

    g = StateGraph(ROOT_LIST)
    g.add_node("fan", fan)
    g.add_node("echo", echo)
    g.add_edge(START, "fan")
    out: Any = g.compile().invoke(["in"])
    assert out == ["in", "fan", "echo:x", "echo:y"]


def test_an_interrupted_single_value_state_returns_its_questions() -> None:
    def ask(state: list[str]) -> list[str]:
        return [interrupt("why?")]

    g = StateGraph(ROOT_LIST)
    g.add_node("ask", ask)
    g.add_edge(START, "ask")
    app = g.compile()
    cfg = {"configurable": {"thread_id": "t"}}
    out = app.invoke(["in"], cfg)
    assert list(out) == ["__interrupt__"]  # as LangGraph: a list has no room for them
    assert [i.value for i in out["__interrupt__"]] == ["why?"]
    done: Any = app.invoke(Command(resume="because"), cfg)
    assert done == ["in", "because"]
