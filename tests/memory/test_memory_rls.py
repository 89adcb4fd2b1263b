"""Row-level security on the memory tables, seen from a role without BYPASSRLS: a store
scoped to one tenant neither reads nor writes another tenant's items, a node's writes go
through the policy with its step, and a statement without a tenant sees nothing."""

from __future__ import annotations

import uuid
from typing import Any, TypedDict
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

import wayline
from wayline.graph import END, START, StateGraph
from wayline.memory import DurableStore


class State(TypedDict):
    who: str


def _as_role(url: str, role: str) -> str:
    parts = urlsplit(url)
    host = parts.netloc.split("@", 1)[-1]
    return urlunsplit(parts._replace(netloc=f"{role}@{host}"))


def test_memory_is_confined_to_its_tenant(pg_base_url: str) -> None:
    schema = f"t_mrls_{uuid.uuid4().hex[:8]}"
    role = f"mapp_{uuid.uuid4().hex[:8]}"
    sep = "&" if "?" in pg_base_url else "?"
    owner = wayline.connect(f"{pg_base_url}{sep}schema={schema}")
    assert {"memory_items", "memory_history", "memory_vectors"} <= set(owner.enable_rls())  # type: ignore[attr-defined]
    owner.close()
    with psycopg.connect(pg_base_url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN NOBYPASSRLS")
        conn.execute(f"GRANT USAGE ON SCHEMA {schema} TO {role}")
        conn.execute(
            f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {schema} TO {role}"
        )
        conn.execute(f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA {schema} TO {role}")
    libpq = _as_role(pg_base_url, role)
    store = wayline.connect(f"{libpq}{sep}schema={schema}&rls=1")

    def remember(s: State, store: Any) -> dict[str, Any]:
        store.put(("prefs",), "who", {"who": s["who"]})
        return {}

    b = StateGraph(State)
    b.add_node("remember", remember)
    b.add_edge(START, "remember")
    b.add_edge("remember", END)
    app = b.compile(store, store=DurableStore(store))
    for tenant in ("acme", "globex"):
        app.invoke({"who": tenant}, {"configurable": {"thread_id": "t", "tenant": tenant}})
    assert DurableStore(store, tenant="acme").get(("prefs",), "who").value == {"who": "acme"}  # type: ignore[union-attr]

    pinned = wayline.connect(f"{libpq}{sep}schema={schema}&rls=1&tenant=acme")
    as_globex = DurableStore(pinned, tenant="globex")  # names globex, the database says acme
    assert as_globex.get(("prefs",), "who") is None
    assert as_globex.search(("prefs",)) == []
    with pytest.raises(wayline.WaylineError):
        as_globex.put(("prefs",), "who", {"who": "mallory"})  # WITH CHECK refuses it
    pinned.close()

    with psycopg.connect(libpq, autocommit=True) as conn:
        conn.execute(f"SET search_path TO {schema}")
        assert conn.execute("SELECT count(*) FROM memory_items").fetchone() == (0,)
        with conn.transaction():
            conn.execute("SELECT set_config('wayline.tenant', 'globex', true)")
            rows = conn.execute("SELECT tenant_id FROM memory_items").fetchall()
            assert rows == [("globex",)]
    store.close()
