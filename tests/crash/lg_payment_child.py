"""A LangGraph payment flow (prepare -> charge -> finalize) checkpointed by WaylineSaver,
run or resumed in this process; the crash test's child. ``--strategy effect`` charges
through ``wayline.langgraph.effect`` (derived key, ``idempotent=True``); ``plain`` posts
the charge without a key. ``--kill-after-commit`` arms the payments service to SIGKILL
this process right after it commits the charge."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph

from wayline.demo.payment_flow import KillSwitch, post_charge
from wayline.langgraph import WaylineSaver, effect


class Pay(TypedDict, total=False):
    order_id: str
    customer: str
    amount: int
    payment: dict[str, Any]
    receipt: str


def build(saver: WaylineSaver, service: str, strategy: str, hook: KillSwitch | None) -> Any:
    def send(state: Pay, key: str | None) -> dict[str, Any]:
        if hook is not None:
            hook("before_charge")
        return post_charge(service, state["amount"], state["customer"], key)

    def prepare(state: Pay) -> dict[str, Any]:
        return {"amount": 4200}

    def charge(state: Pay) -> dict[str, Any]:
        if strategy == "plain":
            result = send(state, None)
        else:
            request = {"amount": state["amount"], "customer": state["customer"]}
            result = effect("charge", lambda key: send(state, key), request=request,
                            idempotent=True)  # fmt: skip
        return {"payment": {k: result[k] for k in ("id", "amount", "deduplicated")}}

    def finalize(state: Pay) -> dict[str, Any]:
        return {"receipt": f"{state['order_id']} paid by {state['payment']['id']}"}

    g = StateGraph(Pay)
    g.add_node("prepare", prepare)
    g.add_node("charge", charge)
    g.add_node("finalize", finalize)
    g.add_edge(START, "prepare")
    g.add_edge("prepare", "charge")
    g.add_edge("charge", "finalize")
    g.add_edge("finalize", END)
    return g.compile(checkpointer=saver)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--db", required=True)
    p.add_argument("--service", required=True)
    p.add_argument("--strategy", choices=["effect", "plain"], required=True)
    p.add_argument("--marker")
    p.add_argument("--resume", action="store_true")
    p.add_argument("--out")
    args = p.parse_args()
    hook = None
    if args.marker:
        hook = KillSwitch("provider_committed", args.marker, args.service)
    saver = WaylineSaver.from_url(f"sqlite:///{args.db}")
    app = build(saver, args.service, args.strategy, hook)
    cfg = {"configurable": {"thread_id": "order-7"}}
    inp = None if args.resume else {"order_id": "order-7", "customer": "cus_7"}
    result = app.invoke(inp, cfg, durability="sync")
    effects = saver.store.list_effects("default", "order-7")
    report = {
        "pid": os.getpid(),
        "result": result,
        "effects": [{"key": e.key, "status": e.status, "attempt": e.attempt} for e in effects],
    }
    saver.close()
    if args.out:
        with open(args.out, "w") as f:
            json.dump(report, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
