"""WaylineSaver's ``put`` / ``put_writes`` / ``get_tuple`` against LangGraph's savers, each
call timed inside LangGraph's own loop, same graph, same run.

    python bench/saver_ops.py [--quick] [--no-postgres]

The graph: ``_common.langgraph_graph("plain", n)``, one node appending a ~500-byte item to
``log: Annotated[list, operator.add]`` per step, durability ``sync``, SQLite at
``synchronous=FULL``. Each saver's ``put``, ``put_writes`` and ``get_tuple`` are wrapped
with a timer on the instance LangGraph's loop calls, so a figure is the saver's own time per
call as the loop makes it (microseconds, mean over the run), beside the loop's steps/s.
Then ``get_tuple`` in a fresh saver on the same store (nothing cached, as a new process):
the latest checkpoint and the middle one, median of 10.

Savers: WaylineSaver on SQLite and PostgreSQL (``--no-postgres`` skips the server),
LangGraph's SqliteSaver and PostgresSaver, and InMemorySaver (the limit of LangGraph's loop,
no I/O). n = 300 and 1,000 (``--quick``: 100); WaylineSaver and InMemorySaver also at 3,000
(the SQL savers write every step's whole list: 3,000 steps would be ~2 GB each).
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import _common as c

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

OPS = ("put", "put_writes", "get_tuple")
COLUMNS = ["saver", "steps", "steps/s", "put us", "put_writes us", "get_tuple us",
           "saver ms/step", "read latest ms", "read middle ms"]  # fmt: skip


def timed_calls(saver: Any) -> dict[str, list[float]]:
    """Wrap the saver's calls with timers (seconds per call), on the instance."""
    spent: dict[str, list[float]] = {op: [] for op in OPS}
    for op in OPS:
        inner = getattr(saver, op)

        def timed(*args: Any, _inner: Callable[..., Any] = inner, _op: str = op, **kw: Any) -> Any:
            t = time.perf_counter()
            try:
                return _inner(*args, **kw)
            finally:
                spent[_op].append(time.perf_counter() - t)

        setattr(saver, op, timed)
    return spent


def run(saver: Any, fresh: Callable[[], Any], name: str, n: int) -> dict[str, Any]:
    spent = timed_calls(saver)
    app = c.langgraph_graph("plain", n).compile(checkpointer=saver)
    t = time.perf_counter()
    out = app.invoke(c.initial("accumulate"), c.config(), durability="sync")
    seconds = time.perf_counter() - t
    assert out["n"] == n and len(out["log"]) == n, out["n"]
    ids = [t.config["configurable"]["checkpoint_id"] for t in saver.list(c.config())]
    latest, middle = ids[0], ids[len(ids) // 2]
    reader = fresh()

    def read(checkpoint_id: str) -> float:
        conf = {"configurable": {"thread_id": c.RUN_ID, "checkpoint_ns": ""}}
        conf["configurable"]["checkpoint_id"] = checkpoint_id
        samples = []
        for _ in range(10):
            t0 = time.perf_counter()
            got = reader.get_tuple(conf)
            samples.append((time.perf_counter() - t0) * 1000)
            assert got is not None
        return statistics.median(samples)

    row: dict[str, Any] = {"saver": name, "n": n, "steps_per_s": n / seconds}
    for op in OPS:
        calls = spent[op]
        row[f"{op}_us"] = 1e6 * sum(calls) / len(calls) if calls else None
    row["saver_ms_per_step"] = 1000 * sum(sum(v) for v in spent.values()) / n
    row["read_latest_ms"] = read(latest)
    row["read_middle_ms"] = read(middle)
    return row


@contextmanager
def pg_conn(url: str) -> Iterator[Any]:
    from psycopg import Connection

    from wayline.store.postgres import _split_url

    conninfo, options = _split_url(url)
    schema = options["schema"]
    with Connection.connect(conninfo, autocommit=True) as admin:
        admin.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
    with Connection.connect(
        conninfo, autocommit=True, prepare_threshold=0, options=f"-c search_path={schema}"
    ) as conn:
        yield conn


def arms(tmp: Path, pg_base: str | None, n: int) -> list[dict[str, Any]]:
    from langgraph.checkpoint.memory import InMemorySaver

    import wayline
    from wayline.langgraph import WaylineSaver

    rows = []
    memory = InMemorySaver()
    rows.append(run(memory, lambda: memory, "InMemorySaver", n))
    store = wayline.connect(c.wayline_url(tmp / f"wl-{n}.db"))
    url = store.url
    fresh = lambda: WaylineSaver(wayline.connect(url))  # noqa: E731
    rows.append(run(WaylineSaver(store), fresh, "WaylineSaver (SQLite)", n))
    if pg_base:
        from pg import schema_url

        pg = wayline.connect(schema_url(pg_base))
        pg_url = pg.url
        name = "WaylineSaver (PostgreSQL)"
        rows.append(run(WaylineSaver(pg), lambda: WaylineSaver(wayline.connect(pg_url)), name, n))
    if n > 1_000:
        return rows
    from langgraph.checkpoint.sqlite import SqliteSaver

    path = tmp / f"lg-{n}.db"
    lg = SqliteSaver(c.lg_connect(path))
    rows.append(run(lg, lambda: SqliteSaver(c.lg_connect(path)), "SqliteSaver", n))
    if pg_base:
        from langgraph.checkpoint.postgres import PostgresSaver
        from pg import schema_url

        with pg_conn(schema_url(pg_base)) as conn:
            saver = PostgresSaver(conn)
            saver.setup()
            rows.append(run(saver, lambda: PostgresSaver(conn), "PostgresSaver", n))
    return rows


def main() -> None:
    args = c.quick_flag(
        [a for a in sys.argv[1:] if a != "--no-postgres"], "WaylineSaver's calls vs LangGraph's"
    )
    use_pg = "--no-postgres" not in sys.argv
    sizes = [100] if args.quick else [300, 1_000, 3_000]
    c.prepare_items(max(sizes))
    pg_base = None
    if use_pg:
        from pg import start_postgres

        pg_base = start_postgres()
    rows: list[dict[str, Any]] = []
    with c.temp_dir("saverops") as tmp:
        (tmp / "warm").mkdir()
        arms(tmp / "warm", pg_base, 20)  # imports, first connections: not timed
        for n in sizes:
            rows.extend(arms(tmp, pg_base, n))
    c.print_table(
        "LangGraph's loop, a ~500-byte item appended per step, durability sync (per call, mean)",
        COLUMNS,
        [
            [
                r["saver"],
                f"{r['n']:,}",
                c.fmt_num(r["steps_per_s"]),
                c.fmt_num(r["put_us"]),
                c.fmt_num(r["put_writes_us"]),
                c.fmt_num(r["get_tuple_us"]),
                f"{r['saver_ms_per_step']:.2f}",
                f"{r['read_latest_ms']:.2f}",
                f"{r['read_middle_ms']:.2f}",
            ]
            for r in rows
        ],
    )
    for n in sizes:
        at = {r["saver"]: r for r in rows if r["n"] == n}
        for wl, lg in (
            ("WaylineSaver (SQLite)", "InMemorySaver"),
            ("WaylineSaver (SQLite)", "SqliteSaver"),
            ("WaylineSaver (PostgreSQL)", "PostgresSaver"),
        ):
            if wl in at and lg in at:
                a, b = at[wl], at[lg]
                print(
                    f"n={n:,}: {wl} / {lg}: steps/s {a['steps_per_s'] / b['steps_per_s']:.2f}x, "
                    f"put {a['put_us'] / b['put_us']:.2f}x the time, read latest "
                    f"{a['read_latest_ms'] / b['read_latest_ms']:.2f}x the time"
                )
    c.write_json("saver_ops", {"rows": rows, "environment": c.environment()})


if __name__ == "__main__":
    main()
