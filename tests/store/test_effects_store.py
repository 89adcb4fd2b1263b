"""The effect ledger's store contract, on every backend: conditional writes, fencing,
tenant isolation, metering, purge."""

from __future__ import annotations

import pytest
from effect_rows import effect_record

from wayline.errors import LeaseLost
from wayline.store.base import Store
from wayline.store.records import EffectRecord


def record(tenant: str = "t", key: str = "k1", **kw: object) -> EffectRecord:
    return effect_record(tenant_id=tenant, key=key, **kw)


def claimed(store: Store, tenant: str = "t") -> int:
    store.create_run(tenant, "r1", graph_name="g", graph_version="1", durability="sync")
    return store.claim(tenant, "r1", owner="w", lease_seconds=30)


def test_insert_once_then_conditional_updates(store: Store) -> None:
    token = claimed(store)
    assert store.put_effect("r1", token, record(fencing_token=token), expect=None)
    assert not store.put_effect("r1", token, record(fencing_token=token), expect=None)
    done = record(status="SUCCEEDED", result=b"receipt", fencing_token=token)
    assert not store.put_effect("r1", token, done, expect="PENDING")  # wrong expectation
    assert store.put_effect("r1", token, done, expect="EXECUTING")
    got = store.get_effect("t", "k1")
    assert got is not None
    assert (got.status, got.result, got.fencing_token) == ("SUCCEEDED", b"receipt", token)
    assert got.created_at > 0 and got.updated_at >= got.created_at


def test_a_stale_token_cannot_write_an_effect(store: Store) -> None:
    old = claimed(store)
    store.claim("t", "r1", owner="w2", lease_seconds=30, steal=True)
    with pytest.raises(LeaseLost):
        store.put_effect("r1", old, record(), expect=None)
    assert store.get_effect("t", "k1") is None


def test_effects_are_isolated_by_tenant_and_listed_by_run(store: Store) -> None:
    token = claimed(store, "t")
    store.put_effect("r1", token, record("t", "k1"), expect=None)
    store.put_effect("r1", token, record("t", "k2", step=3), expect=None)
    assert store.get_effect("other", "k1") is None
    assert [e.key for e in store.list_effects("t", "r1")] == ["k1", "k2"]
    assert store.list_effects("other", "r1") == []


def test_effect_results_are_metered_and_purged(store: Store) -> None:
    token = claimed(store)
    store.put_effect("r1", token, record(), expect=None)
    store.put_effect("r1", token, record(status="SUCCEEDED", result=b"x" * 40), expect="EXECUTING")
    meter = [m for m in store.load_meter("t", "r1") if m.table == "effects"]
    assert [(m.channel, m.bytes) for m in meter] == [("charge", 40)]
    assert store.held_bytes("t", "r1")["effects"] == 40
    store.purge_run("t", "r1")
    assert store.get_effect("t", "k1") is None


def test_operator_resolution_needs_no_token(store: Store) -> None:
    token = claimed(store)
    store.put_effect("r1", token, record(status="UNKNOWN"), expect=None)
    assert store.put_effect("r1", None, record(status="PENDING"), expect="UNKNOWN")
    got = store.get_effect("t", "k1")
    assert got is not None and got.status == "PENDING"
