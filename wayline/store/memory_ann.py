"""Semantic search of long-term memory on PostgreSQL with pgvector: the SQL.

``memory_vectors.embedding`` stays ``REAL[]``, so the schema does not depend on the
extension (a server without pgvector still migrates; its searches scan exactly). What
pgvector ranks is the cast ``embedding::vector(dims)``: an HNSW index over cosine distance
on that expression, one partial index per dimension count (``WHERE array_length(embedding,
1) = dims``), the form pgvector documents for a column whose vectors differ in dimensions.
LangGraph's ``PostgresStore`` keeps a typed ``vector(dims)`` column under the same kind of
index; with the cast in the index the table stores what it stored before, and only the
index holds vectors.

A search whose candidates are few (``EXACT_UNDER`` embeddings under the prefix) is ranked
exactly, each embedding compared; above that, the HNSW index is walked in distance order
(approximate, as LangGraph's: recall, not exactness, is what an index of 100,000 items
buys), with pgvector's iterative scan, so that the rows the join drops (expired, invalidated,
another prefix) do not shorten the page. Measured (``bench/memory.py --items 100000``, 16
dimensions, the same run as LangGraph's ``PostgresStore``): a search over all 100,000 took
7.9 ms against its 6.5 ms, recall@10 1.0 (before the index, in an earlier run, casting and
ranking every row took 856.7 ms against its 2.7).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "EXACT_UNDER",
    "MAX_INDEX_DIMS",
    "Q_INDEX_EXISTS",
    "ann_query",
    "count_query",
    "create_index",
    "exact_query",
    "index_name",
    "literal",
    "scan_settings",
]

EXACT_UNDER = 1000
"""A search over at most this many embeddings ranks them all exactly (a millisecond or two
at 16 dimensions); a larger one walks the index."""

MAX_INDEX_DIMS = 2000
"""pgvector's HNSW indexes ``vector`` up to 2,000 dimensions: larger ones scan exactly."""

Q_INDEX_EXISTS = (
    "SELECT 1 FROM pg_class WHERE relname = %s AND relnamespace = current_schema()::regnamespace"
)


def index_name(dims: int) -> str:
    return f"memory_vectors_hnsw_{int(dims)}"


def _cast(vs: str, dims: int) -> str:
    return f"(v.embedding::{vs}.vector({int(dims)}))"


def create_index(vs: str, dims: int) -> str:
    """The HNSW index over the cosine distance of the embeddings of ``dims`` dimensions
    (pgvector's defaults, as LangGraph's: m 16, ef_construction 64)."""
    d = int(dims)
    return (
        f"CREATE INDEX IF NOT EXISTS {index_name(d)} ON memory_vectors USING hnsw "
        f"((embedding::{vs}.vector({d})) {vs}.vector_cosine_ops) "
        f"WHERE array_length(embedding, 1) = {d}"
    )


def literal(query: Sequence[float]) -> str:
    """The query vector as pgvector's text form."""
    return "[" + ",".join(repr(float(x)) for x in query) + "]"


def count_query(clause: str, cap: int) -> str:
    """How many embeddings lie under the prefix, counted up to ``cap`` (by the key's index).
    Params: tenant, the prefix's."""
    return (
        "SELECT COUNT(*) FROM (SELECT 1 FROM memory_vectors v "
        f"WHERE v.tenant_id = %s{clause} LIMIT {int(cap)}) AS few"
    )


def _distance(vs: str, dims: int) -> str:
    return f"{_cast(vs, dims)} OPERATOR({vs}.<=>) %s::{vs}.vector({int(dims)})"


def _items_by_key() -> str:
    """Each embedding's item looked up by its key: a lateral subquery the planner may not
    flatten (``OFFSET 0``). Flattened, on a young table it joined the items by a scan of the
    tenant's once per embedding: 400-750 ms for an exact ranking of 1,000. Param: now."""
    return (
        "FROM memory_vectors v CROSS JOIN LATERAL (SELECT * FROM memory_items i "
        "WHERE i.tenant_id = v.tenant_id AND i.namespace = v.namespace AND i.key = v.key "
        "AND i.invalidated_at IS NULL AND (i.expires_at IS NULL OR i.expires_at > %s) "
        "OFFSET 0) AS i "
    )


def _where(dims: int, clause: str) -> str:
    return f"WHERE v.tenant_id = %s AND array_length(v.embedding, 1) = {int(dims)}{clause} "


def exact_query(vs: str, dims: int, clause: str, columns: str, limit: int, offset: int) -> str:
    """Every embedding under the prefix compared (found by the key's index), the best
    similarity per item, equal scores in the order the items were made, the page's items
    with their columns. Params: the query, now, tenant, the prefix's."""
    return (
        f"SELECT * FROM (SELECT DISTINCT ON (v.namespace, v.key) {columns}, "
        f"1 - ({_distance(vs, dims)}) AS score {_items_by_key()}{_where(dims, clause)}"
        "ORDER BY v.namespace, v.key, score DESC) AS best "
        f"ORDER BY score DESC, created_at LIMIT {int(limit)} OFFSET {int(offset)}"
    )


def ann_query(vs: str, dims: int, clause: str, columns: str, fetch: int) -> str:
    """The ``fetch`` embeddings nearest the query in the HNSW index's order, with their
    items' columns. Params: the query, now, tenant, the prefix's, the query again."""
    distance = _distance(vs, dims)
    return (
        f"SELECT {columns}, 1 - ({distance}) AS score {_items_by_key()}{_where(dims, clause)}"
        f"ORDER BY {distance} LIMIT {int(fetch)}"
    )


def scan_settings(fetch: int, *, iterative: bool) -> list[str]:
    """The index walk's settings for one transaction. No sort: the planner must take the
    index's order (on a young table whose statistics say it is small, it joined the items
    first and sorted all their embeddings: 17-27 ms at 3,000 items, against under 1 ms by
    the index). Iterative (pgvector 0.8), so that rows the join drops are replaced; as wide
    as the page (within pgvector's bound)."""
    settings = ["SET LOCAL enable_sort = off"]
    if iterative:
        settings.append("SET LOCAL hnsw.iterative_scan = relaxed_order")
    return [*settings, f"SET LOCAL hnsw.ef_search = {max(40, min(1000, int(fetch)))}"]
