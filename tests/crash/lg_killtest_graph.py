"""The kill test's subject as a LangGraph program: the same three nodes, the middle one
performing an effect through ``wayline.langgraph.effect`` (idempotent)."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph

from wayline.langgraph import effect

INPUT = {"n": 0, "log": []}


class S(TypedDict, total=False):
    n: int
    log: Annotated[list[str], operator.add]
    sent: bool


def first(s: S) -> dict[str, Any]:
    return {"n": s["n"] + 1, "log": ["first"]}


def notify(s: S) -> dict[str, Any]:
    effect("notify", lambda key: {"ok": True}, request={"n": s["n"]}, idempotent=True)
    return {"sent": True, "log": ["notify"]}


def last(s: S) -> dict[str, Any]:
    return {"n": s["n"] * 10, "log": ["last"]}


builder = StateGraph(S)
builder.add_node("first", first)
builder.add_node("notify", notify)
builder.add_node("last", last)
builder.add_edge(START, "first")
builder.add_edge("first", "notify")
builder.add_edge("notify", "last")
builder.add_edge("last", END)
graph = builder.compile(name="lg_killtest_subject")
