"""The kill test's subject in the tests: three nodes, the middle one performing an
effect (idempotent, as a provider with idempotency keys would be)."""

from __future__ import annotations

import operator
import random
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


class Paid(TypedDict):
    n: int
    receipt: str
    run: str
    drawn: float


def pay(s: Paid, ctx: NodeContext) -> dict[str, Any]:
    """A receipt from a provider that deduplicates by key and echoes it, and the run's id: both
    differ from run to run, and equal in two runs of one identity."""
    receipt = ctx.effect(
        "charge", lambda key: {"id": f"ch_{key}"}, request={"n": s["n"]}, idempotent=True
    )
    return {"receipt": receipt["id"], "run": ctx.config["configurable"]["thread_id"]}


def done(s: Paid) -> dict[str, Any]:
    return {"n": s["n"] + 1}


def draw(s: Paid) -> dict[str, Any]:
    """Real drift: a random draw that is not recorded (``ctx.record``), so a node that runs
    again draws another value."""
    return {"drawn": random.random()}


def receipt_graph() -> Any:
    """Values derived from the run id and an effect key: the same in a reference run."""
    g = StateGraph(Paid, name="killtest_receipt", version="1")
    g.add_node("pay", pay)
    g.add_node("done", done)
    g.add_edge(START, "pay")
    g.add_edge("pay", "done")
    g.add_edge("done", END)
    return g


def drift_graph() -> Any:
    """The receipt graph with an unrecorded random draw after it."""
    g = StateGraph(Paid, name="killtest_drift", version="1")
    g.add_node("pay", pay)
    g.add_node("draw", draw)
    g.add_edge(START, "pay")
    g.add_edge("pay", "draw")
    g.add_edge("draw", END)
    return g


PAID_INPUT = {"n": 0, "receipt": "", "run": "", "drawn": 0.0}
