"""Semantic search on PostgreSQL by pgvector's HNSW index (``wayline.store.memory_ann``):
above ``EXACT_UNDER`` embeddings a search walks the index, whatever the statistics say, and
answers as the exact ranking does on a set the index holds whole (fewer items than its
search width), within the tenant, leaving out the items a search must not return."""

from __future__ import annotations

import hashlib
import re
import time
import uuid
from typing import Any

import psycopg
import pytest

from wayline.memory import DurableStore
from wayline.memory.base import SearchOp
from wayline.memory.durable import rank
from wayline.store import memory_ann
from wayline.store.memory_sql import _prefix_clause

DIMS = 12


def embed(texts: Any) -> list[list[float]]:
    """Distinct vectors (no ties to order): bytes of each text's SHA-256, centred."""
    out = []
    for t in texts:
        digest = hashlib.sha256(str(t).encode()).digest()
        out.append([(b - 127.5) / 127.5 for b in digest[:DIMS]])
    return out


INDEX = {"dims": DIMS, "embed": embed, "fields": ["text"]}


@pytest.fixture
def walked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every search walks the index (no set is small enough to rank exactly)."""
    monkeypatch.setattr(memory_ann, "EXACT_UNDER", 0)


def store(pg_backend: Any, tenant: str | None = None) -> DurableStore:
    return DurableStore(pg_backend, tenant=tenant or uuid.uuid4().hex[:10], index=INDEX)  # type: ignore[arg-type]


def fill(s: DurableStore, n: int, prefix: str = "u") -> None:
    for start in range(0, n, 20):
        for i in range(start, min(n, start + 20)):
            s.put((prefix, f"g{i % 3}"), f"k{i}", {"text": f"memory {prefix} {i}"})


def exact(s: DurableStore, prefix: tuple[str, ...], text: str, limit: int, offset: int) -> Any:
    """The exact ranking of every candidate (the store's scan, each value opened)."""
    op = SearchOp(prefix, query=text, limit=limit, offset=offset)
    query = embed([text])[0]
    return [(h.key, round(h.score or 0.0, 5)) for h in rank(op, s.candidates(op, {}), query)]


def plan(pg_backend: Any, tenant: str, query: list[float], *, walk: bool) -> str:
    """The custom and the generic plan of the index walk (or of the exact ranking) over a
    tenant's items under ("u",), in the store's session with the walk's settings."""
    vs = pg_backend._pgvector_schema()
    clause, prefix = _prefix_clause(("u",), "%s")
    clause = clause.replace("namespace", "v.namespace")
    vec = memory_ann.literal(query)
    if walk:
        sql = memory_ann.ann_query(vs, DIMS, clause, "i.key", 21)
        params: tuple[Any, ...] = (vec, time.time(), tenant, *prefix, vec)
    else:
        sql = memory_ann.exact_query(vs, DIMS, clause, "i.key, i.created_at", 10, 0)
        params = (vec, time.time(), tenant, *prefix)
    numbers = iter(range(1, 20))
    generic = re.sub(r"%s", lambda _: f"${next(numbers)}", sql)
    with pg_backend._pool.connection() as conn, conn.transaction():
        for setting in memory_ann.scan_settings(21, iterative=True) if walk else []:
            conn.execute(setting)
        custom = conn.execute("EXPLAIN (COSTS OFF) " + sql, params)
        lines = [r[0] for r in custom.fetchall()]
        explained = psycopg.ClientCursor(conn).execute(
            "EXPLAIN (GENERIC_PLAN, COSTS OFF) " + generic
        )
        lines += [r[0] for r in explained.fetchall()]
    return "\n".join(lines)


BY_KEY = "Index Cond: ((tenant_id = v.tenant_id) AND (namespace = v.namespace) AND (key = v.key))"


def test_searches_walk_the_index_and_look_items_up_by_key_whatever_the_statistics(
    pg_backend: Any,
) -> None:
    """On a young table (never analyzed: PostgreSQL guesses it small) the planner joined
    the items first and sorted all their embeddings instead of walking the index, and joined
    the items of an exact ranking by a scan of the tenant's once per embedding."""
    s = store(pg_backend)
    fill(s, 60)
    query = embed(["what do you remember"])[0]
    for analyzed in (False, True):
        if analyzed:
            with pg_backend._pool.connection() as conn:
                conn.execute("ANALYZE memory_items, memory_vectors")
        shown = plan(pg_backend, s.tenant, query, walk=True)
        walks = re.findall(rf"Index Scan using memory_vectors_hnsw_{DIMS} on memory_vectors", shown)
        assert len(walks) == 2, shown  # the custom plan and the generic one
        assert "Sort" not in shown and "Seq Scan" not in shown, shown
        assert shown.count(BY_KEY) == 2, shown
        shown = plan(pg_backend, s.tenant, query, walk=False)
        assert shown.count("Index Scan using memory_vectors_pkey on memory_vectors v") == 2, shown
        assert shown.count(BY_KEY) == 2 and "Seq Scan" not in shown, shown


def test_the_index_walk_answers_as_the_exact_ranking(pg_backend: Any, walked: None) -> None:
    s = store(pg_backend)
    fill(s, 30)  # fewer than the walk's width (40): the index holds the set whole
    s.put(("u", "g1"), "two", {"text": "first text", "title": "second"}, index=["text", "title"])
    for prefix, limit, offset in ((("u",), 10, 0), (("u",), 5, 7), (("u", "g1"), 4, 1)):
        found = s.search(prefix, query="remember me", limit=limit, offset=offset)
        got = [(h.key, round(h.score or 0.0, 5)) for h in found]
        assert got == exact(s, prefix, "remember me", limit, offset)
    best = s.search(("u",), query="second", limit=3)  # an item's best text, counted once
    assert best[0].key == "two" and best[0].score == pytest.approx(1.0)
    assert [h.key for h in best].count("two") == 1


def test_the_index_walk_stays_in_the_tenant_and_skips_what_a_search_leaves_out(
    pg_backend: Any, walked: None
) -> None:
    mine, theirs = store(pg_backend), store(pg_backend)
    fill(mine, 60)
    fill(theirs, 60)  # the same texts: the same vectors, as near as mine
    query = "memory u 7"
    db: Any = pg_backend
    vec = embed([query])[0]
    near = db.memory_nearest(mine.tenant, ("u",), vec, limit=10, offset=0)
    assert near[0][0].key == "k7" and len(near) == 10
    assert {r.namespace[0] for r, _ in near} == {"u"}
    assert all(r.run_id is None for r, _ in near)
    # invalidate and expire the 35 nearest of mine: the walk goes on past them (iterative)
    ranked = exact(mine, ("u",), query, 60, 0)
    for key, _ in ranked[:30]:
        i = int(key[1:])
        assert mine.invalidate(("u", f"g{i % 3}"), key, "test")
    for key, _ in ranked[30:35]:
        i = int(key[1:])
        mine.put(("u", f"g{i % 3}"), key, {"text": f"memory u {i}"}, ttl=1e-7)  # expired
    near = db.memory_nearest(mine.tenant, ("u",), vec, limit=10, offset=0)
    assert [(r.key, round(sc, 5)) for r, sc in near] == ranked[35:45]
    assert theirs.search(("u",), query=query, limit=1)[0].key == "k7"  # theirs untouched
