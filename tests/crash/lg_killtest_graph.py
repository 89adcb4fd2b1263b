"""The kill test's subject as a LangGraph program: the same three nodes, the middle one
performing an effect through ``wayline.langgraph.effect`` (idempotent)."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph

from wayline.langgraph import effect

INPUT = {"n": 0, "log": []}


class Subject(TypedDict, total=False):
    n: int
    log: Annotated[list[str], operator.add]
    sent: bool


def first(state: Subject) -> dict[str, Any]:
    return {"n": state["n"] + 1, "log": ["first"]}


def notify(state: Subject) -> dict[str, Any]:
    effect("notify", lambda key: {"ok": True}, request={"n": state["n"]}, idempotent=True)
    return {"sent": True, "log": ["notify"]}


def last(state: Subject) -> dict[str, Any]:
    return {"n": state["n"] * 10, "log": ["last"]}


def build() -> StateGraph[Subject]:
    builder = StateGraph(Subject)
    builder.add_node("first", first)
    builder.add_node("notify", notify)
    builder.add_node("last", last)
    builder.add_edge(START, "first")
    builder.add_edge("first", "notify")
    builder.add_edge("notify", "last")
    builder.add_edge("last", END)
    return builder


graph = build().compile(name="lg_killtest_subject")
