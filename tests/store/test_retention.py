"""Retention on every backend: export returns everything held for a run; purge leaves no
byte of it anywhere; a retention policy purges only what it should; tenants stay apart."""

from __future__ import annotations

import json
from typing import Any

from stored_rows import stored_rows

from wayline.client import Wayline
from wayline.control import Actor
from wayline.demo.refund_agent import build_refund_agent, claim_input
from wayline.store.base import Store

MARKER = "MARKER-7f3a9c-only-in-claim-9"


def refund(key: str, amount: int, customer: str) -> dict[str, Any]:
    return {"id": f"re-{key}", "amount": amount, "note": MARKER}


def finished_claim(store: Store, tenant: str = "acme", claim: str = "claim-9") -> Wayline:
    app = build_refund_agent(store, refund)
    big = {**claim_input(claim), "reason": MARKER + " " + "x" * 70_000}  # a blob, too
    cfg = {"configurable": {"thread_id": claim, "tenant": tenant}}
    (question,) = app.invoke(big, cfg)["__interrupt__"]
    client = Wayline(store, tenant=tenant)
    finance = Actor(id="fatima", roles=("finance",), tenant=tenant)
    client.resume(claim, {"approved": True}, actor=finance, digest=question.digest)
    app.invoke(None, cfg)
    return client


def test_export_returns_everything_held_for_the_run(store: Store) -> None:
    client = finished_claim(store)
    data = client.export("claim-9")
    text = json.dumps(data)  # JSON all the way down
    assert MARKER in text
    assert data["runs"][0]["status"] == "done"
    assert len(data["deltas"]) == client.get("claim-9").step + 1
    assert data["deltas"][0]["payload"][0]["node"] == "__start__"
    (effect,) = data["effects"]
    assert effect["result"]["note"] == MARKER and effect["status"] == "SUCCEEDED"
    assert [a["outcome"] for a in data["audit"]] == ["pending", "accepted"]
    assert data["blobs"] and MARKER in json.dumps(data["blobs"])
    assert {m["tbl"] for m in data["meter"]} >= {"interrupts", "effects", "blobs"}


def test_purge_leaves_no_byte_of_the_run_in_any_table(store: Store) -> None:
    client = finished_claim(store)
    finished_claim(store, tenant="other")  # another tenant's copy of the same claim
    assert any(MARKER.encode() in row for _, row in stored_rows(store))
    assert client.purge("claim-9") > 0
    assert client.purge("claim-9") == 0
    left = [
        (table, row)
        for table, row in stored_rows(store)
        if b"acme" in row and (b"claim-9" in row or MARKER.encode() in row)
    ]
    # Only the two purge receipts remain (who erased it, when, rows deleted), no payload.
    assert [t for t, _ in left] == ["audit", "audit"]
    assert not any(MARKER.encode() in row for _, row in left)
    assert [a.action for a in client.audit("claim-9")] == ["purge", "purge"]
    # The other tenant's run, blobs included, is untouched.
    other = Wayline(store, tenant="other")
    assert other.get("claim-9").status == "done"
    assert MARKER in json.dumps(other.export("claim-9"))


def test_retention_policy_purges_old_finished_runs_only(store: Store) -> None:
    client = finished_claim(store, claim="old")
    app = build_refund_agent(store, refund)
    app.invoke(claim_input("waiting"), {"configurable": {"thread_id": "waiting", "tenant": "acme"}})
    finished_claim(store, claim="new")
    purged = client.purge_older_than(0.0, statuses=("done",))
    assert sorted(purged) == ["new", "old"]
    assert [r.run_id for r in client.list_runs()] == ["waiting"]  # interrupted: kept
    assert client.purge_older_than(3600) == []
