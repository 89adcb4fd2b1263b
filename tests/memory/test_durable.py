"""What the durable store adds to LangGraph's contract, on SQLite and PostgreSQL: TTL with
refresh on read and a sweeper, provenance, invalidation with history, tenants, data
subjects (export, erasure), the meter and checksums."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from wayline.errors import CorruptionError
from wayline.memory import DurableStore
from wayline.memory.base import PutOp


def test_expired_items_are_never_read_and_the_sweeper_deletes_them(durable: DurableStore) -> None:
    durable.put(("t",), "brief", {"v": 1}, ttl=1e-7)  # 6 microseconds: expired once read
    durable.put(("t",), "long", {"v": 2}, ttl=60)
    durable.put(("t",), "forever", {"v": 3})
    assert durable.get(("t",), "brief") is None
    assert {i.key for i in durable.search(("t",))} == {"long", "forever"}
    assert durable.list_namespaces() == [("t",)]
    assert durable._db().memory_sweep() == 1
    assert durable._db().memory_sweep(now=time.time() + 3601) == 1  # "long", an hour on
    assert [i.key for i in durable.search(("t",))] == ["forever"]
    assert [h.ended for h in durable.history(("t",), "long")] == ["deleted"]


def test_reads_refresh_the_ttl_unless_told_not_to(durable: DurableStore) -> None:
    durable.put(("r",), "k", {"v": 1}, ttl=10)
    first = durable.record(("r",), "k")
    assert first is not None and first.expires_at is not None
    durable.get(("r",), "k", refresh_ttl=False)
    same = durable.record(("r",), "k")
    assert same is not None and same.expires_at == first.expires_at
    durable.get(("r",), "k")
    later = durable.record(("r",), "k")
    assert later is not None and later.expires_at is not None
    assert later.expires_at >= first.expires_at
    durable.search(("r",), refresh_ttl=True)


def test_default_ttl_and_refresh_on_read_config(backend: Any) -> None:
    store = DurableStore(
        backend, tenant=uuid.uuid4().hex, ttl={"default_ttl": 5, "refresh_on_read": False}
    )
    store.put(("d",), "k", {"v": 1})
    row = store.record(("d",), "k")
    assert row is not None and row.ttl_minutes == 5
    store.put(("d",), "no-ttl", {"v": 1}, ttl=None)
    row2 = store.record(("d",), "no-ttl")
    assert row2 is not None and row2.expires_at is None


def test_provenance_invalidation_and_history(durable: DurableStore) -> None:
    durable.put(("facts", "u1"), "city", {"city": "Lyon"}, source="crm:42", observed_at=1000.0)
    row = durable.record(("facts", "u1"), "city")
    assert row is not None
    assert (row.source, row.observed_at, row.run_id, row.node) == ("crm:42", 1000.0, None, None)
    durable.put(("facts", "u1"), "city", {"city": "Paris"}, source="chat")
    assert durable.invalidate(("facts", "u1"), "city", "user moved again")
    assert not durable.invalidate(("facts", "u1"), "city", "twice")
    assert not durable.invalidate(("facts", "u1"), "nothing", "absent")
    assert durable.search(("facts",)) == []  # invalidated items are left out of a search
    kept = durable.search_records(("facts",), include_invalidated=True)
    assert [(r.key, r.invalid_reason) for r in kept] == [("city", "user moved again")]
    item = durable.get(("facts", "u1"), "city")  # a get still answers, record says why
    assert item is not None and item.value == {"city": "Paris"}
    history = durable.history(("facts", "u1"), "city")
    assert [(h.value["city"], h.source, h.ended) for h in history] == [
        ("Lyon", "crm:42", "superseded"),
        ("Paris", "chat", "invalidated: user moved again"),
    ]
    assert [h.version for h in history] == [1, 2]
    durable.put(("facts", "u1"), "city", {"city": "Nice"})  # a new put is valid again
    assert [i.value for i in durable.search(("facts",))] == [{"city": "Nice"}]


def test_tenants_never_see_each_other(backend: Any) -> None:
    a = DurableStore(backend, tenant=f"a-{uuid.uuid4().hex}")
    b = DurableStore(backend, tenant=f"b-{uuid.uuid4().hex}")
    a.put(("shared",), "k", {"who": "a"})
    b.put(("shared",), "k", {"who": "b"})
    assert a.get(("shared",), "k").value == {"who": "a"}  # type: ignore[union-attr]
    assert [i.value for i in b.search(("shared",))] == [{"who": "b"}]
    b.delete(("shared",), "k")
    assert a.get(("shared",), "k") is not None
    assert b.list_namespaces() == []


def test_subject_export_and_erasure(backend: Any) -> None:
    from wayline.client import Wayline

    tenant = f"s-{uuid.uuid4().hex[:8]}"
    store = DurableStore(backend, tenant=tenant)
    store.put(("p", "alice"), "email", {"email": "alice@example.com"}, subject="alice", cls="pii")
    store.put(("p", "alice"), "email", {"email": "alice@new.example"}, subject="alice", cls="pii")
    store.put(("p", "alice"), "likes", {"likes": "tea"}, subject="alice", cls="prefs")
    store.put(("p", "bob"), "email", {"email": "bob@example.com"}, subject="bob", cls="pii")
    client = Wayline(backend, tenant=tenant)
    exported = client.export_subject("alice")
    assert sorted((m["key"], m["version"] or 0) for m in exported["memory"]) == [
        ("email", 0), ("email", 1), ("likes", 0)
    ]  # fmt: skip
    receipt = client.erase_subject("alice", classes=["pii"])
    assert receipt["rows"]["memory"] == 2  # the live email and its kept version
    assert store.get(("p", "alice"), "email") is None
    assert store.get(("p", "alice"), "likes") is not None
    client.erase_subject("alice")
    assert store.get(("p", "alice"), "likes") is None
    assert client.export_subject("alice")["memory"] == []
    assert store.get(("p", "bob"), "email").value == {"email": "bob@example.com"}  # type: ignore[union-attr]


def test_the_meter_counts_memory_bytes(durable: DurableStore) -> None:
    durable.put(("m",), "a", {"text": "x" * 100})
    durable.put(("m",), "a", {"text": "y" * 50})
    held = durable._db().memory_bytes(durable.tenant)
    assert held["memory_items"] == len('{"text":""}') + 50
    assert held["memory_history"] == len('{"text":""}') + 100
    written = [m for m in durable._db().load_meter(durable.tenant, "") if m.table == "memory_items"]
    assert [m.bytes for m in written] == [len('{"text":""}') + 100, len('{"text":""}') + 50]
    assert {m.channel for m in written} == {"m"}


def test_a_damaged_value_is_reported_not_returned(durable: DurableStore) -> None:
    durable.put(("c",), "k", {"v": 1})
    sql: Any = durable._db()  # the SQL backend under the Store protocol
    ph = sql.placeholder
    with sql._tx(durable.tenant) as db:
        db.execute(
            f"UPDATE memory_items SET value = {ph} WHERE tenant_id = {ph}",
            (b'{"v":2}', durable.tenant),
        )
    with pytest.raises(CorruptionError, match="checksum"):
        durable.get(("c",), "k")


def test_values_must_be_json(durable: DurableStore) -> None:
    from wayline.errors import ConfigError

    with pytest.raises(ConfigError, match="not JSON"):
        durable.put(("j",), "k", {"when": object()})
    with pytest.raises(ConfigError, match="dims"):
        durable.batch([PutOp(("j",), "k", {"text": "x"})]) if False else DurableStore(
            durable.backend,
            tenant=durable.tenant,
            index={"dims": 3, "embed": lambda t: [[1.0]] * len(t)},
        ).put(("j",), "k", {"text": "x"})
    assert durable.get(("j",), "k") is None


def test_postgresql_ranks_with_pgvector_as_the_exact_scan_does(durable: DurableStore) -> None:
    for i in range(30):
        durable.put(("v", f"u{i % 3}"), f"k{i}", {"text": f"item {i} " + "sun " * (i % 7)})
    db = durable._db()
    query = durable.embeddings.embed_query("sun sun")  # type: ignore[union-attr]
    near = db.memory_nearest(durable.tenant, ("v",), query, limit=5, offset=2)
    sql: Any = db
    assert near is not None and len(near) == 5  # pgvector on PostgreSQL, a scan on SQLite
    assert (sql._pgvector_schema() is not None) == (sql.dialect == "postgres")
    sql.__dict__["_pgvector"] = ""  # the same search by the store's exact scan
    try:
        exact = durable.search(("v",), query="sun sun", limit=5, offset=2)
        from wayline.memory.base import SearchOp
        from wayline.memory.durable import rank

        op = SearchOp(("v",), query="sun sun", limit=5, offset=2)
        scanned = rank(op, durable.candidates(op, {}), query)  # every value opened
    finally:
        del sql.__dict__["_pgvector"]
    expected = [(h.key, round(h.score or 0, 5)) for h in scanned]
    assert [(r.key, round(s, 5)) for r, s in near] == expected
    assert [(h.key, round(h.score or 0, 5)) for h in exact] == expected
