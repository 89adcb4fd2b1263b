"""The payments crash test's flow as a LangGraph program (``wayline crashtest --engine
langgraph``): the same prepare -> charge -> finalize, strategies and kill points as
``wayline.demo.payment_flow``, written with ``langgraph`` imports, effects through
``wayline.langgraph.effect``, run by LangGraph's own engine the way a worker runs it
(``LangGraphKillTarget.invoke``: leased, every write fenced)."""

from __future__ import annotations

import uuid
from typing import Any

from langgraph.graph import END, START, StateGraph

from wayline.demo.payment_flow import STRATEGIES, Hook, PaymentState, find_charge, post_charge
from wayline.effects import NOT_FOUND
from wayline.langgraph.effects import effect
from wayline.langgraph.probed import LangGraphKillTarget
from wayline.store.base import Store

__all__ = ["build_lg_flow"]


def build_lg_flow(
    store: Store, service_url: str, strategy: str, hook: Hook | None = None
) -> LangGraphKillTarget:
    """The payment flow as a LangGraph graph on ``store``, charging at ``service_url``."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; one of {', '.join(STRATEGIES)}")

    def at(point: str) -> None:
        if hook is not None:
            hook(point)

    def send(state: PaymentState, key: str | None) -> dict[str, Any]:
        at("before_charge")
        return post_charge(service_url, state["amount"], state["customer"], key)

    def prepare(state: PaymentState) -> dict[str, Any]:
        return {"amount": sum(state["items"])}

    def charge(state: PaymentState) -> dict[str, Any]:
        request = {"amount": state["amount"], "customer": state["customer"]}
        if strategy == "naive":
            result = send(state, None)
        elif strategy == "uuid4":
            result = send(state, str(uuid.uuid4()))
        elif strategy == "reconcile":
            result = effect(
                "charge",
                lambda key: send(state, key),
                request=request,
                reconcile=lambda key: find_charge(service_url, key) or NOT_FOUND,
            )
        else:
            result = effect(
                "charge",
                lambda key: send(state, key),
                request=request,
                key=f"charge-{state['order_id']}" if strategy == "business" else None,
                idempotent=True,
            )
        at("after_record")
        return {"payment": {k: result[k] for k in ("id", "amount", "deduplicated")}}

    def finalize(state: PaymentState) -> dict[str, Any]:
        at("after_commit")
        return {"receipt": f"{state['order_id']} paid by {state['payment']['id']}"}

    g = StateGraph(PaymentState)
    g.add_node("prepare", prepare)
    g.add_node("charge", charge)
    g.add_node("finalize", finalize)
    g.add_edge(START, "prepare")
    g.add_edge("prepare", "charge")
    g.add_edge("charge", "finalize")
    g.add_edge("finalize", END)
    graph = g.compile(name=f"lg_payment_flow_{strategy}")
    return LangGraphKillTarget(graph, store=store)
