"""The graphs ``wayline serve --demo`` serves: the support agent, and the refund agent
whose refund waits for an approver with the ``finance`` role (the demo key has it)."""

from __future__ import annotations

import hashlib
from typing import Any

from wayline.demo.refund_agent import build_refund_agent
from wayline.demo.support_agent import build_graph
from wayline.graph.compiled import CompiledGraph

__all__ = ["DEMO_GRAPHS", "refund", "support"]


def _refund(key: str, amount: int, customer: str) -> dict[str, Any]:
    """A stand-in payments provider: a receipt derived from the idempotency key."""
    return {"id": "re_" + hashlib.sha256(key.encode()).hexdigest()[:12], "amount": amount}


def support() -> CompiledGraph:
    return build_graph(None)


def refund() -> CompiledGraph:
    return build_refund_agent(None, _refund)


DEMO_GRAPHS = {
    "support": "wayline.demo.serve_demo:support",
    "refund": "wayline.demo.serve_demo:refund",
}
