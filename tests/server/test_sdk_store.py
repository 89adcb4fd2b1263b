"""``langgraph-sdk``'s ``client.store.*`` (sync and async) against ``wayline serve``, on
SQLite and PostgreSQL: put, get, search, list namespaces, delete, scoped to the key's tenant
and its scopes; what a node wrote is what the API reads."""

from __future__ import annotations

import asyncio
import uuid

import httpx
import pytest
from harness import Running
from langgraph_sdk import get_client, get_sync_client

from wayline.memory import DurableStore


def test_store_items_through_the_sync_client(server: Running) -> None:
    c = get_sync_client(url=server.url, api_key=server.keys["alice"], timeout=30.0)
    ns = ["users", uuid.uuid4().hex[:8]]
    c.store.put_item(ns, key="prefs", value={"food": "tea", "score": 3})
    c.store.put_item(ns, key="other", value={"food": "rice", "score": 9})
    c.store.put_item([*ns, "deep"], key="x", value={"food": "tea", "score": 1})
    item = c.store.get_item(ns, key="prefs")
    assert (item["namespace"], item["key"], item["value"]) == (
        ns,
        "prefs",
        {"food": "tea", "score": 3},
    )
    assert "created_at" in item and "updated_at" in item
    found = c.store.search_items(ns, filter={"food": "tea"})
    assert sorted(i["key"] for i in found["items"]) == ["prefs", "x"]
    paged = c.store.search_items(ns, filter={"score": {"$gt": 2}}, limit=1, offset=0)
    assert len(paged["items"]) == 1
    spaces = c.store.list_namespaces(prefix=ns)
    assert spaces["namespaces"] == [ns, [*ns, "deep"]]
    assert c.store.list_namespaces(prefix=ns, max_depth=2)["namespaces"] == [ns]
    c.store.delete_item(ns, key="prefs")
    with pytest.raises(httpx.HTTPStatusError) as caught:
        c.store.get_item(ns, key="prefs")
    assert caught.value.response.status_code == 404
    # what the API wrote is the tenant's durable memory, with its source
    row = DurableStore(server.store, tenant="acme").record(tuple(ns), "other")
    assert row is not None and row.source == "http" and row.value["food"] == "rice"


def test_tenants_and_scopes(server: Running) -> None:
    alice = get_sync_client(url=server.url, api_key=server.keys["alice"], timeout=30.0)
    eve = get_sync_client(url=server.url, api_key=server.keys["eve"], timeout=30.0)
    reader = get_sync_client(url=server.url, api_key=server.keys["reader"], timeout=30.0)
    ns = ["secrets", uuid.uuid4().hex[:8]]
    alice.store.put_item(ns, key="k", value={"v": "acme's"})
    with pytest.raises(httpx.HTTPStatusError) as caught:
        eve.store.get_item(ns, key="k")  # another tenant: not there at all
    assert caught.value.response.status_code == 404
    assert eve.store.search_items(ns)["items"] == []
    assert reader.store.get_item(ns, key="k")["value"] == {"v": "acme's"}
    with pytest.raises(httpx.HTTPStatusError) as refused:
        reader.store.put_item(ns, key="k", value={"v": "overwritten"})
    assert refused.value.response.status_code == 403
    assert alice.store.get_item(ns, key="k")["value"] == {"v": "acme's"}


def test_bad_input_is_422(server: Running) -> None:
    headers = {"x-api-key": server.keys["alice"]}
    with httpx.Client(base_url=server.url, headers=headers, timeout=30.0) as h:
        bad = [
            h.put("/store/items", json={"namespace": "users", "key": "k", "value": {}}),
            h.put("/store/items", json={"namespace": ["u"], "key": "k", "value": [1]}),
            h.put("/store/items", json={"namespace": ["langgraph"], "key": "k", "value": {}}),
            h.put("/store/items", json={"namespace": ["u"], "key": "k", "value": {}, "ttl": -1}),
            h.post("/store/items/search", json={"namespace_prefix": ["u"], "limit": -1}),
            h.get("/store/items", params={"namespace": "u"}),
        ]
    assert [r.status_code for r in bad] == [422] * len(bad)


def test_store_items_through_the_async_client(server: Running) -> None:
    async def go() -> None:
        c = get_client(url=server.url, api_key=server.keys["bob"], timeout=30.0)
        ns = ["async", uuid.uuid4().hex[:8]]
        await c.store.put_item(ns, key="a", value={"n": 1})
        assert (await c.store.get_item(ns, key="a"))["value"] == {"n": 1}
        found = await c.store.search_items(["async"], limit=100)
        assert [i["key"] for i in found["items"] if i["namespace"] == ns] == ["a"]
        assert ns in (await c.store.list_namespaces(prefix=["async"]))["namespaces"]
        await c.store.delete_item(ns, key="a")
        assert (await c.store.search_items(ns))["items"] == []

    asyncio.run(go())


def test_the_dashboard_lists_a_tenants_namespaces_and_items(server: Running) -> None:
    c = get_sync_client(url=server.url, api_key=server.keys["alice"], timeout=30.0)
    label = f"dash{uuid.uuid4().hex[:6]}"
    c.store.put_item([label, "ann"], key="likes", value={"likes": "green tea"})
    with httpx.Client(base_url=server.url, timeout=30.0) as alice:
        assert alice.post("/ui/login", data={"key": server.keys["alice"]}).status_code == 303
        spaces = alice.get("/ui/memory").text
        assert f"{label}.ann" in spaces
        items = alice.get("/ui/memory", params={"ns": label}).text
        assert "likes" in items and "green tea" in items and "http" in items
    with httpx.Client(base_url=server.url, timeout=30.0) as eve:  # another tenant
        assert eve.post("/ui/login", data={"key": server.keys["eve"]}).status_code == 303
        assert label not in eve.get("/ui/memory").text
