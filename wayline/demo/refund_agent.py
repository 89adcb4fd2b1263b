"""A refund agent: assess a claim, propose a refund, wait for an approver, refund through an
effect, notify the customer through another.

The pattern for approvals: the proposal is made in a node of its own (``propose``), and
the node that asks (``approve``) does nothing but ask. A node runs again from its start
when it is resumed, so anything before ``interrupt()`` in it runs twice; here that is only
reading the proposal from state. The refund and the email are separate effects with keys
of their own: a failed email is retried without ever repeating the refund.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Annotated, Any, TypedDict

from wayline import END, START, StateGraph, interrupt
from wayline.graph.compiled import CompiledGraph
from wayline.graph.context import NodeContext
from wayline.store.base import Store

__all__ = ["RefundState", "build_refund_agent", "claim_input"]

APPROVERS = ("finance",)
EXPIRES_IN = 3 * 24 * 3600  # a proposal waits up to three days for a decision


class RefundState(TypedDict, total=False):
    claim_id: str
    customer: str
    amount: int
    reason: str
    proposal: dict[str, Any]
    decision: dict[str, Any]
    refund: dict[str, Any]
    outbox: Annotated[list[str], operator.add]


def claim_input(claim_id: str = "claim-9", amount: int = 4200) -> RefundState:
    return {
        "claim_id": claim_id,
        "customer": "cus_42",
        "amount": amount,
        "reason": "charged twice for order 1042",
        "outbox": [],
    }


Refunder = Callable[[str, int, str], dict[str, Any]]
"""(idempotency key, amount, customer) -> the provider's refund record."""


def build_refund_agent(
    store: Store | str | None,
    refund: Refunder,
    send_email: Callable[[str, str], str] | None = None,
) -> CompiledGraph:
    def assess(s: RefundState) -> dict[str, Any]:
        return {"reason": s["reason"].strip()}

    def propose(s: RefundState) -> dict[str, Any]:
        return {
            "proposal": {
                "claim": s["claim_id"],
                "refund": s["amount"],
                "customer": s["customer"],
                "why": s["reason"],
            }
        }

    def approve(s: RefundState) -> dict[str, Any]:
        decision = interrupt(s["proposal"], approvers=APPROVERS, expires_in=EXPIRES_IN)
        return {"decision": decision}

    def route(s: RefundState) -> str:
        return "pay" if s["decision"].get("approved") else "notify"

    def pay(s: RefundState, ctx: NodeContext) -> dict[str, Any]:
        amount = s["proposal"]["refund"]
        receipt = ctx.effect(
            "refund",
            lambda key: refund(key, amount, s["customer"]),
            request={"claim": s["claim_id"], "amount": amount},
            key=f"refund-{s['claim_id']}",  # a business key: one refund per claim, ever
            idempotent=True,
        )
        return {"refund": receipt}

    def notify(s: RefundState, ctx: NodeContext) -> dict[str, Any]:
        paid = "refund" in s
        text = f"Refund of {s['amount']} issued." if paid else "Your claim was declined."
        if send_email is None:
            return {"outbox": [text]}
        sent = ctx.effect("email", lambda key: send_email(key, text), request={"text": text})
        return {"outbox": [sent]}

    g = StateGraph(RefundState, name="refund_agent", version="1")
    g.add_node("assess", assess)
    g.add_node("propose", propose)
    g.add_node("approve", approve)
    g.add_node("pay", pay)
    g.add_node("notify", notify)
    g.add_edge(START, "assess")
    g.add_edge("assess", "propose")
    g.add_edge("propose", "approve")
    g.add_conditional_edges("approve", route, ["pay", "notify"])
    g.add_edge("pay", "notify")
    g.add_edge("notify", END)
    return g.compile(store)
