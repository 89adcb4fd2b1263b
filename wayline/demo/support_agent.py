"""A small support agent: triage, look up the customer and the knowledge base in parallel,
draft and critique a reply until it is good enough, then finish. The demo's graph.

Deterministic on purpose (a stand-in for model calls), so that an interrupted run and an
uninterrupted one can be compared byte for byte.
"""

from __future__ import annotations

import hashlib
import operator
from collections.abc import Callable
from typing import Annotated, Any, Literal, TypedDict

from wayline import END, START, StateGraph
from wayline.graph.compiled import CompiledGraph
from wayline.store.base import Store

__all__ = ["SupportState", "build_graph", "demo_input"]

DRAFT_ROUNDS = 12


class SupportState(TypedDict, total=False):
    ticket: str
    category: str
    account: dict[str, Any]
    articles: Annotated[list[str], operator.add]
    messages: Annotated[list[dict[str, str]], operator.add]
    round: int
    resolved: bool


def demo_input() -> SupportState:
    return {
        "ticket": "I was charged twice for order 1042 after the app crashed during checkout.",
        "messages": [],
        "round": 0,
    }


Hook = Callable[[str, SupportState], None]


def _fake_model(prompt: str) -> str:
    """A deterministic stand-in for a model call: ~200 bytes derived from the prompt."""
    digest = hashlib.sha256(prompt.encode()).hexdigest()
    return f"[{digest[:12]}] " + " ".join(digest[i : i + 8] for i in range(0, 64, 8)) * 2


def build_graph(
    store: Store | str | None = None, hook: Hook | None = None, *, snapshot_every: int = 5
) -> CompiledGraph:
    """The support agent, compiled against ``store``; ``hook(node, state)`` runs first in
    every node (the demo uses it to count executions and to pick a kill point)."""

    def seen(node: str, state: SupportState) -> None:
        if hook is not None:
            hook(node, state)

    def triage(state: SupportState) -> dict[str, Any]:
        seen("triage", state)
        category = "billing" if "charged" in state["ticket"] else "general"
        return {"category": category, "messages": [{"role": "system", "text": category}]}

    def lookup_account(state: SupportState) -> dict[str, Any]:
        seen("lookup_account", state)
        return {"account": {"id": "cus_42", "orders": [1041, 1042], "plan": "pro"}}

    def search_kb(state: SupportState) -> dict[str, Any]:
        seen("search_kb", state)
        return {"articles": [f"kb/{state['category']}/duplicate-charges", "kb/refunds/policy"]}

    def draft(state: SupportState) -> dict[str, Any]:
        seen("draft", state)
        n = state.get("round", 0) + 1
        text = _fake_model(f"{state['ticket']}|{state['articles']}|{n}")
        return {"round": n, "messages": [{"role": "assistant", "text": text}]}

    def review(state: SupportState) -> Literal["draft", "finish"]:
        return "draft" if state["round"] < DRAFT_ROUNDS else "finish"

    def finish(state: SupportState) -> dict[str, Any]:
        seen("finish", state)
        return {"resolved": True, "messages": [{"role": "assistant", "text": "Refund issued."}]}

    g = StateGraph(SupportState, name="support_agent", version="1")
    g.add_node("triage", triage)
    g.add_node("lookup_account", lookup_account)
    g.add_node("search_kb", search_kb)
    g.add_node("draft", draft)
    g.add_node("finish", finish)
    g.add_edge(START, "triage")
    g.add_edge("triage", "lookup_account")
    g.add_edge("triage", "search_kb")
    g.add_edge(["lookup_account", "search_kb"], "draft")
    g.add_conditional_edges("draft", review)
    g.add_edge("finish", END)
    return g.compile(store, snapshot_every=snapshot_every)
