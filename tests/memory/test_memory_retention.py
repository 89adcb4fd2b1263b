"""Retention names long-term memory separately from runs (``memory.<class>=<age>:purge``):
a class's items last written longer ago than its rule go, with their embeddings and kept
versions; other classes, and runs, are not touched; a receipt stays in the operator log."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import pytest
from memory_fixtures import INDEX

from wayline.classes import DEFAULT_CLASS
from wayline.control.audit import OPERATOR_LOG
from wayline.control.policy import DataPolicy, Retain, apply_policy
from wayline.errors import ConfigError
from wayline.instrument_classes import store_report
from wayline.memory import DurableStore

DAY = 86400.0


def test_the_cli_form_names_memory_rules_apart_and_they_only_purge() -> None:
    policy = DataPolicy.parse("pii=30d:redact,memory.pii=90d,memory.default=1w:purge")
    assert policy.rules == {"pii": Retain(30, "redact")}
    assert policy.memory == {"pii": Retain(90, "purge"), "default": Retain(7, "purge")}
    with pytest.raises(ConfigError, match=r"memory\.pii=90d:purge"):
        DataPolicy.parse("memory.pii=90d:redact")


def test_a_memory_rule_purges_its_class_once_due_and_leaves_the_rest(backend: Any) -> None:
    tenant = f"r-{uuid.uuid4().hex[:8]}"
    store = DurableStore(backend, tenant=tenant, index=INDEX)  # type: ignore[arg-type]
    store.put(("p", "alice"), "email", {"text": "alice@example.com"}, cls="pii")
    store.put(("p", "alice"), "email", {"text": "alice@new.example"}, cls="pii")  # a version
    store.put(("p", "alice"), "likes", {"text": "tea"}, cls="prefs")
    store.put(("p", "alice"), "note", {"text": "no class given"})
    db = store._db()
    policy = DataPolicy({}, memory={"pii": Retain(30, "purge"), DEFAULT_CLASS: Retain(60, "purge")})

    assert apply_policy(db, policy, tenant_id=tenant, now=time.time() + 29 * DAY) == []
    later = time.time() + 45 * DAY
    planned = apply_policy(db, policy, tenant_id=tenant, now=later, dry_run=True)
    assert [(a["target"], a["classes"], a["rows"]) for a in planned] == [
        ("memory", ["pii"], {"memory_items": 1, "memory_history": 1})
    ]
    assert store.get(("p", "alice"), "email") is not None  # a dry run deletes nothing

    done = apply_policy(db, policy, tenant_id=tenant, now=later)
    assert [(a["classes"], a["rows"]) for a in done] == [
        (["pii"], {"memory_items": 1, "memory_history": 1, "memory_vectors": 1})
    ]
    assert store.get(("p", "alice"), "email") is None
    assert store.history(("p", "alice"), "email") == []
    assert {i.key for i in store.search(("p",), query="tea")} == {"likes", "note"}
    receipts = [a for a in db.load_audit(tenant, OPERATOR_LOG) if a.action == "retention.memory"]
    assert [json.loads(a.detail or "{}")["cls"] for a in receipts] == ["pii"]

    report = {r.cls: r for r in store_report(db, policy) if r.tenant == tenant}
    assert sorted(report) == ["memory.default", "memory.prefs"]
    assert report["memory.default"].rows == 1 and report["memory.default"].next.startswith("purge")
    assert report["memory.prefs"].next == "keep"  # no rule names it

    apply_policy(db, policy, tenant_id=tenant, now=time.time() + 61 * DAY)
    assert [i.key for i in store.search(("p",))] == ["likes"]
