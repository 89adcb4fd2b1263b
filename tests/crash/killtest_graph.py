"""The kill test's subject in the tests: three nodes, the middle one performing an
effect (idempotent, as a provider with idempotency keys would be)."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from wayline import END, START, StateGraph
from wayline.graph.context import NodeContext

INPUT = {"n": 0, "log": []}


class S(TypedDict):
    n: int
    log: Annotated[list[str], operator.add]
    sent: bool


def first(s: S) -> dict[str, Any]:
    return {"n": s["n"] + 1, "log": ["first"]}


def notify(s: S, ctx: NodeContext) -> dict[str, Any]:
    ctx.effect("notify", lambda key: {"ok": True}, request={"n": s["n"]}, idempotent=True)
    return {"sent": True, "log": ["notify"]}


def last(s: S) -> dict[str, Any]:
    return {"n": s["n"] * 10, "log": ["last"]}


def graph() -> Any:
    g = StateGraph(S, name="killtest_subject", version="1")
    g.add_node("first", first)
    g.add_node("notify", notify)
    g.add_node("last", last)
    g.add_edge(START, "first")
    g.add_edge("first", "notify")
    g.add_edge("notify", "last")
    g.add_edge("last", END)
    return g
