"""The refund agent end to end in one process: propose, wait for an approver, refund once
through an effect, notify.

    python examples/refund_agent.py runs.db
"""

import sys
from typing import Any

import wayline
from wayline.demo.refund_agent import build_refund_agent, claim_input

refunds: dict[str, dict[str, Any]] = {}


def refund(key: str, amount: int, customer: str) -> dict[str, Any]:
    """Stand-in for a payments API that deduplicates by idempotency key."""
    return refunds.setdefault(key, {"id": f"re_{len(refunds) + 1}", "amount": amount})


if __name__ == "__main__":
    store = wayline.connect(f"sqlite:///{sys.argv[1] if len(sys.argv) > 1 else 'refunds.db'}")
    app = build_refund_agent(store, refund)
    cfg = {"configurable": {"thread_id": "claim-9"}}
    (question,) = app.invoke(claim_input(), cfg)["__interrupt__"]
    print("waiting for finance:", question.value, "digest", question.digest[:12])

    client = wayline.Wayline(store)
    try:
        client.resume("claim-9", {"approved": True}, actor=wayline.Actor(id="ivan"))
    except wayline.errors.ApprovalRefused as exc:
        print("refused:", exc)
    finance = wayline.Actor(id="fatima", roles=("finance",))
    client.resume("claim-9", {"approved": True}, actor=finance, digest=question.digest)
    final = app.invoke(None, cfg)
    print("refund:", final["refund"], "outbox:", final["outbox"])
    for entry in client.audit("claim-9"):
        print("audit:", entry.actor, entry.action, entry.outcome, entry.detail or "")
