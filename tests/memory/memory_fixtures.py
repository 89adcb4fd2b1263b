"""Stores for the memory conformance suite, and a way to call each sync or async.

Each test gets a fresh tenant on a database shared by the module (wayline) or a fresh
instance (in-memory stores), so no test sees another's items."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

import wayline
from wayline.memory import DurableStore, InMemoryStore

STORES = [
    "wayline-sqlite",
    "wayline-postgres",
    "wayline-inmemory",
    "langgraph-inmemory",
    "lgstore-sqlite",
    "lgstore-postgres",
]
"""``lgstore-*``: ``wayline.langgraph.store.WaylineStore``, LangGraph's ``BaseStore`` on the
durable store, given LangGraph's own operation types."""
DURABLE = ["wayline-sqlite", "wayline-postgres"]
LETTERS = "aeiourstnl"


def fake_embed(texts: Any) -> list[list[float]]:
    """A deterministic embedding: how often each of ten letters occurs (same on every run)."""
    return [[float(str(t).lower().count(c)) for c in LETTERS] for t in texts]


INDEX = {"dims": len(LETTERS), "embed": fake_embed, "fields": ["text"]}


@pytest.fixture(scope="module")
def sqlite_backend(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    s = wayline.connect(f"sqlite:///{tmp_path_factory.mktemp('memory') / 'memory.db'}")
    yield s
    s.close()


@pytest.fixture(scope="module")
def pg_backend(pg_base_url: str) -> Iterator[Any]:
    from pg import schema_url

    s = wayline.connect(schema_url(pg_base_url))
    yield s
    s.close()


@pytest.fixture(params=DURABLE)
def backend(request: pytest.FixtureRequest) -> Any:
    name = "sqlite_backend" if request.param == "wayline-sqlite" else "pg_backend"
    return request.getfixturevalue(name)


@pytest.fixture
def durable(backend: Any) -> DurableStore:
    """A wayline durable store with an index, on a tenant of its own."""
    return DurableStore(backend, tenant=f"t-{uuid.uuid4().hex[:10]}", index=INDEX)  # type: ignore[arg-type]


def make_store(kind: str, request: pytest.FixtureRequest, **options: Any) -> Any:
    if kind == "langgraph-inmemory":
        from langgraph.store.memory import InMemoryStore as LgInMemoryStore

        return LgInMemoryStore(**options)
    if kind == "wayline-inmemory":
        return InMemoryStore(**options)
    name = "sqlite_backend" if kind.endswith("-sqlite") else "pg_backend"
    backend = request.getfixturevalue(name)
    if kind.startswith("lgstore-"):
        from wayline.langgraph.store import WaylineStore

        return WaylineStore(backend, tenant=f"t-{uuid.uuid4().hex[:10]}", **options)
    return DurableStore(backend, tenant=f"t-{uuid.uuid4().hex[:10]}", **options)


@pytest.fixture(params=STORES)
def any_store(request: pytest.FixtureRequest) -> Any:
    """Every store, with the fake embedding index."""
    return make_store(request.param, request, index=INDEX)


@pytest.fixture(params=["sync", "async"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


class Calls:
    """A store's methods called sync (``put``) or async (``aput`` on a fresh loop)."""

    def __init__(self, store: Any, mode: str) -> None:
        self.store = store
        self.mode = mode

    def __getattr__(self, name: str) -> Any:
        if self.mode == "sync":
            return getattr(self.store, name)
        method = getattr(self.store, "a" + name)

        def call(*args: Any, **kwargs: Any) -> Any:
            return asyncio.run(method(*args, **kwargs))

        return call


def ops_of(store: Any) -> tuple[Any, Any, Any, Any]:
    """(GetOp, ListNamespacesOp, PutOp, SearchOp) of the store's own library."""
    if type(store).__module__.startswith("langgraph") or _is_lg_store(store):
        from langgraph.store import base as lg
    else:
        from wayline.memory import base as lg  # type: ignore[no-redef]
    return lg.GetOp, lg.ListNamespacesOp, lg.PutOp, lg.SearchOp


def _is_lg_store(store: Any) -> bool:
    from langgraph.store.base import BaseStore as LgBaseStore

    return isinstance(store, LgBaseStore)
