"""Long-term memory: wayline's DurableStore against LangGraph's SqliteStore and
PostgresStore, same machine, same run, same items and the same deterministic embedding.

    python bench/memory.py [--quick] [--items N] [--no-postgres]

- put throughput: single ``put`` calls (one transaction each, as a node's writes outside a
  run or LangGraph's immediate writes), and ``batch`` of 500 puts;
- search latency (median of 20) with N items in the store (default 10,000; ``--items
  100000`` for the larger point): a filtered search in one user's namespace (100 items),
  a filtered search over all N, and a semantic search (query, limit 10) in one user's
  namespace and over all N.

LangGraph's stores index with sqlite-vec (SQLite) and pgvector (PostgreSQL). wayline ranks
by an exact scan of the candidates' embeddings on SQLite; on PostgreSQL by pgvector, exactly
up to 1,000 embeddings under the prefix (one user's namespace) and by an HNSW index above
(all N), as LangGraph's PostgresStore does."""

from __future__ import annotations

import hashlib
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import _common as c

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

DIMS = 16
USERS = 100
SEARCHES = 20


def embed(texts: Any) -> list[list[float]]:
    """Deterministic vectors: bytes of each text's SHA-256, centred."""
    out = []
    for t in texts:
        digest = hashlib.sha256(str(t).encode()).digest()
        out.append([(b - 127.5) / 127.5 for b in digest[:DIMS]])
    return out


INDEX: dict[str, Any] = {"dims": DIMS, "embed": embed, "fields": ["text"]}


def item(i: int) -> tuple[tuple[str, ...], str, dict[str, Any]]:
    ns = ("users", f"u{i % USERS}", "memories")
    return ns, f"m{i}", {"text": f"memory number {i} about topic {i % 37}", "topic": i % 37}


def timed(fn: Callable[[], Any], n: int = SEARCHES) -> float:
    """Median milliseconds of ``n`` calls."""
    samples = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1000)
    return statistics.median(samples)


def exercise(
    name: str, store: Any, put_op: Any, items: int, singles: int, semantic: bool = True
) -> dict[str, Any]:
    t0 = time.perf_counter()
    for i in range(singles):
        ns, key, value = item(i)
        store.put(ns, key, value)
    single_rate = singles / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    batched = 0
    for start in range(singles, items, 500):
        ops = [put_op(*item(i)) for i in range(start, min(start + 500, items))]
        store.batch(ops)
        batched += len(ops)
    batch_rate = batched / (time.perf_counter() - t0) if batched else 0.0
    one = ("users", "u7")
    top = store.search(("users",), query="topic 3", limit=10) if semantic else []
    return {
        "top10": [i.key for i in top],
        "store": name,
        "items": items,
        "put_per_s": round(single_rate),
        "batch_put_per_s": round(batch_rate),
        "search_user_ms": round(timed(lambda: store.search(one, filter={"topic": 3})), 2),
        "search_all_ms": round(timed(lambda: store.search(("users",), filter={"topic": 3})), 2),
        "semantic_user_ms": round(timed(lambda: store.search(one, query="topic 3")), 2)
        if semantic
        else None,
        "semantic_all_ms": round(timed(lambda: store.search(("users",), query="topic 3")), 2)
        if semantic
        else None,
    }


def wayline_arm(url: str, label: str, items: int, singles: int) -> dict[str, Any]:
    import wayline
    from wayline.memory import DurableStore
    from wayline.memory.base import PutOp

    backend = wayline.connect(url)
    try:
        return exercise(label, DurableStore(backend, index=INDEX), PutOp, items, singles)  # type: ignore[arg-type]
    finally:
        backend.close()


def lg_sqlite_arm(path: Path, items: int, singles: int) -> dict[str, Any]:
    import sqlite3

    from langgraph.store.base import PutOp
    from langgraph.store.sqlite import SqliteStore

    # sqlite-vec is loaded as an extension: a Python whose sqlite3 cannot load extensions
    # (this machine's) runs LangGraph's SqliteStore without an index, semantic search n/a
    can_load = hasattr(sqlite3.Connection, "enable_load_extension")
    index = INDEX if can_load else None
    with SqliteStore.from_conn_string(str(path), index=index) as store:  # type: ignore[arg-type]
        store.setup()
        return exercise("LangGraph SqliteStore", store, PutOp, items, singles, can_load)


def lg_postgres_arm(url: str, items: int, singles: int) -> dict[str, Any]:
    from langgraph.store.base import PutOp
    from langgraph.store.postgres import PostgresStore
    from psycopg import Connection

    from wayline.store.postgres import _split_url

    conninfo, options = _split_url(url)
    schema = options["schema"]
    with Connection.connect(conninfo, autocommit=True) as admin:
        admin.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
        admin.execute("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public")
    with Connection.connect(
        conninfo, autocommit=True, prepare_threshold=0, options=f"-c search_path={schema},public"
    ) as conn:
        store = PostgresStore(conn, index=INDEX)  # type: ignore[arg-type]
        store.setup()
        return exercise("LangGraph PostgresStore", store, PutOp, items, singles)


def main() -> None:
    argv = [a for a in sys.argv[1:] if a != "--no-postgres"]
    items = 10_000
    if "--items" in argv:
        at = argv.index("--items")
        items = int(argv[at + 1])
        del argv[at : at + 2]
    args = c.quick_flag(argv, "DurableStore vs LangGraph's SqliteStore and PostgresStore")
    if args.quick:
        items = 1_000
    singles = min(500, items)
    use_pg = "--no-postgres" not in sys.argv
    rows = []
    with c.temp_dir("memory") as tmp:
        rows.append(
            wayline_arm(c.wayline_url(tmp / "wayline.db"), "wayline SQLite", items, singles)
        )
        rows.append(lg_sqlite_arm(tmp / "lg.db", items, singles))
        if use_pg:
            from pg import schema_url, start_postgres

            base = start_postgres()
            rows.append(wayline_arm(schema_url(base), "wayline PostgreSQL", items, singles))
            rows.append(lg_postgres_arm(schema_url(base), items, singles))
    from rich.console import Console
    from rich.table import Table

    # recall@10 of the semantic search over all items against wayline SQLite's exact scan
    exact = set(rows[0].pop("top10"))
    for row in rows[1:]:
        found = row.pop("top10")
        row["recall_at_10"] = round(len(exact & set(found)) / len(exact), 2) if found else None
    rows[0]["recall_at_10"] = 1.0
    table = Table(title=f"long-term memory, {items:,} items, {DIMS}-dim embeddings")
    for col in rows[0]:
        table.add_column(col)
    for row in rows:
        table.add_row(*(f"{v:,}" if isinstance(v, int) else str(v) for v in row.values()))
    Console().print(table)
    for a, b in ((0, 1), (2, 3)):
        if b < len(rows):
            wl, lg = rows[a], rows[b]
            line = (
                f"{wl['store']} / {lg['store']}: put {wl['put_per_s'] / lg['put_per_s']:.2f}x, "
                f"batch put {wl['batch_put_per_s'] / max(lg['batch_put_per_s'], 1):.2f}x, "
                f"filtered search (all) latency {wl['search_all_ms'] / lg['search_all_ms']:.2f}x"
            )
            if lg["semantic_all_ms"]:
                ratio = wl["semantic_all_ms"] / lg["semantic_all_ms"]
                line += f", semantic search (all) latency {ratio:.2f}x"
            print(line)
    c.write_json("memory", {"items": items, "dims": DIMS, "rows": rows})


if __name__ == "__main__":
    main()
