"""LangGraph checkpointed by WaylineSaver against LangGraph's own savers, same graph, same run.

    python bench/langgraph_saver.py [--quick] [--no-postgres]

The graph: a LangGraph ``StateGraph`` whose one node appends a ~500-byte item to
``log: Annotated[list, operator.add]`` per step (``_common.langgraph_graph("plain", n)``),
durability ``sync``, SQLite at ``synchronous=FULL`` for every saver.

- WaylineSaver (SQLite; PostgreSQL unless ``--no-postgres``) at n = 100, 1,000, 10,000
  (``--quick``: 100, 1,000). Bytes come from wayline's meter (``byte_report``): every
  payload byte the store wrote, per table, in the same transactions as the rows.
- SqliteSaver and PostgresSaver at n = 100 and 1,000 (their bytes grow quadratically; 10,000
  would write ~25 GB). Bytes are what the saver serialized in put + put_writes (a counting
  serializer subclass; for SqliteSaver also the metadata JSON it stores), i.e. a lower
  bound of what it wrote.

Columns: bytes/step, write amplification (wayline: all bytes over the bytes of the tasks'
writes to state keys; LangGraph: the same numerator over 500 bytes x n), steps/s (wall
clock of ``invoke``), SQLite file size, and ``get_state`` in a new saver on the same store
(nothing cached: the reconstruction a fresh process does), the median of 5 such reads and
the first. Goal for WaylineSaver: bytes/step at the largest n within 1.5x of n = 100, write
amplification <= 3; a 10,000-step read <= 20 ms on SQLite (issue 31).
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import _common as c

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))


def counting_serde(counter: c.ByteCounter) -> Any:
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    class CountingSerde(JsonPlusSerializer):
        def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
            type_, data = super().dumps_typed(obj)
            counter.add("serialized", len(data))
            return type_, data

    return CountingSerde()


def run_graph(saver: Any, n: int) -> float:
    app = c.langgraph_graph("plain", n).compile(checkpointer=saver)
    t = time.perf_counter()
    out = app.invoke(c.initial("accumulate"), c.config(), durability="sync")
    seconds = time.perf_counter() - t
    assert out["n"] == n and len(out["log"]) == n, out["n"]
    return seconds


READS = 5
"""Fresh-saver reads timed per arm: ``get_state_ms`` is their median (one read on a shared
2-core machine varied 2x from run to run), ``get_state_first_ms`` the first."""


def timed_get_state(new_saver: Callable[[], Any], n: int) -> tuple[list[float], int]:
    """``READS`` times: a new saver (nothing cached), ``graph.get_state`` of the thread."""
    times, items = [], 0
    for _ in range(READS):
        app = c.langgraph_graph("plain", n).compile(checkpointer=new_saver())
        t = time.perf_counter()
        st = app.get_state(c.config())
        times.append((time.perf_counter() - t) * 1000)
        items = len(st.values["log"])
    return times, items


def wayline_arm(url: str, backend: str, n: int, path: Path | None) -> dict[str, Any]:
    import wayline
    from wayline.instrument import byte_report
    from wayline.langgraph import WaylineSaver

    store = wayline.connect(url)
    seconds = run_graph(WaylineSaver(store), n)
    r = byte_report(store, c.TENANT, c.RUN_ID)
    times, items = timed_get_state(lambda: WaylineSaver(store), n)
    assert items == n
    store.close()
    return {
        "saver": f"WaylineSaver ({backend})",
        "n": n,
        "bytes": r.total,
        "by_table": r.by_table(),
        "bytes_per_step": r.total / n,
        "write_amplification": r.write_amplification,
        "first_to_last": r.first_to_last,
        "steps_per_s": n / seconds,
        "file_size": c.sqlite_file_size(path) if path else None,
        "get_state_ms": statistics.median(times),
        "get_state_first_ms": times[0],
        "get_state_all_ms": times,
    }


def sqlite_arm(path: Path, n: int) -> dict[str, Any]:
    counter = c.ByteCounter()
    saver = c.counting_saver(c.lg_connect(path), counter)
    seconds = run_graph(saver, n)
    readers: list[Any] = []

    def new_saver() -> Any:
        readers.append(c.counting_saver(c.lg_connect(path), c.ByteCounter()))
        return readers[-1]

    times, _ = timed_get_state(new_saver, n)
    for r in [saver, *readers]:
        r.conn.close()
    return _lg_row("SqliteSaver", n, counter.total, seconds, c.sqlite_file_size(path), times)


def postgres_arm(url: str, n: int) -> dict[str, Any]:
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg import Connection

    from wayline.store.postgres import _split_url

    conninfo, options = _split_url(url)
    schema = options["schema"]
    with Connection.connect(conninfo, autocommit=True) as admin:
        admin.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
    counter = c.ByteCounter()
    with Connection.connect(
        conninfo, autocommit=True, prepare_threshold=0, options=f"-c search_path={schema}"
    ) as conn:
        saver = PostgresSaver(conn, serde=counting_serde(counter))  # type: ignore[arg-type]
        saver.setup()
        seconds = run_graph(saver, n)
        times, _ = timed_get_state(lambda: PostgresSaver(conn), n)  # type: ignore[arg-type]
    return _lg_row("PostgresSaver", n, counter.total, seconds, None, times)


def _lg_row(
    name: str, n: int, total: int, seconds: float, size: int | None, times: list[float]
) -> dict[str, Any]:
    return {
        "saver": name,
        "n": n,
        "bytes": total,
        "bytes_per_step": total / n,
        "write_amplification": total / (c.ITEM_CHARS * n),
        "first_to_last": None,
        "steps_per_s": n / seconds,
        "file_size": size,
        "get_state_ms": statistics.median(times),
        "get_state_first_ms": times[0],
        "get_state_all_ms": times,
    }


COLUMNS = ["saver", "steps", "bytes", "bytes/step", "write amp.", "steps/s", "file",
           "get_state ms", "first"]  # fmt: skip


def main() -> None:
    args = c.quick_flag(
        [a for a in sys.argv[1:] if a != "--no-postgres"], "WaylineSaver vs LangGraph's savers"
    )
    use_pg = "--no-postgres" not in sys.argv
    wl_sizes = [100, 1_000] if args.quick else [100, 1_000, 10_000]
    lg_sizes = [100, 1_000]
    c.prepare_items(max(wl_sizes))
    pg_base = None
    if use_pg:
        from pg import schema_url, start_postgres

        pg_base = start_postgres()
    rows: list[dict[str, Any]] = []
    with c.temp_dir("lgsaver") as tmp:
        # warm-up: imports, first connections and prepared statements, not timed
        wayline_arm(c.wayline_url(tmp / "warm.db"), "SQLite", 20, None)
        sqlite_arm(tmp / "warm-lg.db", 20)
        if pg_base:
            wayline_arm(schema_url(pg_base), "PostgreSQL", 20, None)
            postgres_arm(schema_url(pg_base), 20)
        for n in wl_sizes:
            path = tmp / f"wayline-{n}.db"
            rows.append(wayline_arm(c.wayline_url(path), "SQLite", n, path))
            if pg_base:
                rows.append(wayline_arm(schema_url(pg_base), "PostgreSQL", n, None))
        for n in lg_sizes:
            rows.append(sqlite_arm(tmp / f"lg-{n}.db", n))
            if pg_base:
                rows.append(postgres_arm(schema_url(pg_base), n))
    table = [
        [
            r["saver"],
            f"{r['n']:,}",
            c.fmt_bytes(r["bytes"]),
            c.fmt_num(r["bytes_per_step"]),
            f"{r['write_amplification']:.2f}",
            c.fmt_num(r["steps_per_s"]),
            c.fmt_bytes(r["file_size"]) if r["file_size"] else "-",
            f"{r['get_state_ms']:.1f}",
            f"{r['get_state_first_ms']:.1f}",
        ]
        for r in rows
    ]
    c.print_table(
        "LangGraph graph, a ~500-byte item appended per step, durability sync",
        COLUMNS,
        table,
    )
    goals = []
    for backend in ("SQLite", "PostgreSQL"):
        arm = [r for r in rows if r["saver"] == f"WaylineSaver ({backend})"]
        if not arm:
            continue
        flat = arm[-1]["bytes_per_step"] / arm[0]["bytes_per_step"]
        worst = max(r["write_amplification"] for r in arm)
        goals.append([f"{backend}: bytes/step {arm[-1]['n']:,} / 100", "<= 1.5",
                      f"{flat:.2f}", c.verdict(flat <= 1.5)])  # fmt: skip
        goals.append([f"{backend}: write amplification, every n", "<= 3",
                      f"{worst:.2f}", c.verdict(worst <= 3)])  # fmt: skip
    c.print_table("goals (WaylineSaver)", ["goal", "target", "measured", "verdict"], goals)
    for n in lg_sizes:
        wl = next(r for r in rows if r["saver"] == "WaylineSaver (SQLite)" and r["n"] == n)
        lg = next(r for r in rows if r["saver"] == "SqliteSaver" and r["n"] == n)
        print(
            f"n={n:,}: SqliteSaver / WaylineSaver bytes {lg['bytes'] / wl['bytes']:.1f}x, "
            f"steps/s WaylineSaver / SqliteSaver {wl['steps_per_s'] / lg['steps_per_s']:.2f}x"
        )
    path = c.write_json("langgraph_saver", {"env": c.environment(), "rows": rows})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
