"""LangGraph's engine on wayline's workers against plain ``invoke``, same graph, same run.

    python bench/lg_engine.py [--quick] [--no-postgres]

The graph: ``_common.langgraph_graph("plain", n)``, a LangGraph ``StateGraph`` whose one
node appends a ~500-byte item to ``log: Annotated[list, operator.add]`` per step, durability
``sync``, SQLite at ``synchronous=FULL`` for every arm. Per backend (SQLite; PostgreSQL
unless ``--no-postgres``), each arm runs the same n-step run ``REPEATS`` times, alternating
arms, and reports the median steps per second (node steps over the wall clock):

- ``invoke, SqliteSaver`` / ``invoke, PostgresSaver``: LangGraph alone.
- ``invoke, WaylineSaver``: LangGraph's loop on wayline's store, no lease, no fence.
- ``astream, WaylineSaver``: the same, through ``astream`` (what the engine calls).
- ``wayline worker``: ``Wayline.start`` and a ``Worker`` in this process running LangGraph's
  engine (``wayline.langgraph.engine``): claimed under a lease, heartbeated, every write
  fenced; timed from ``start`` to the run's row saying ``done`` (claim and settle included).

The overhead of the lease and the fence is ``wayline worker`` over ``astream, WaylineSaver``:
the same loop and the same store, plus the claim, the fenced writes (one more UPDATE of the
run row in each write's transaction), the final ``get_state`` and the settle commit.
"""

from __future__ import annotations

import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import _common as c

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

REPEATS = 5


def app(n: int) -> Any:
    return (
        c.langgraph_graph("plain", n)
        .compile(name="bench")
        .with_config(recursion_limit=c.RECURSION_LIMIT)
    )


def invoke_arm(saver: Any, n: int, thread: str) -> float:
    graph = app(n).copy(update={"checkpointer": saver})
    t = time.perf_counter()
    out = graph.invoke(c.initial("accumulate"), c.config(thread), durability="sync")
    seconds = time.perf_counter() - t
    assert out["n"] == n
    return seconds


def astream_arm(saver: Any, n: int, thread: str) -> float:
    import asyncio

    graph = app(n).copy(update={"checkpointer": saver})

    async def go() -> None:
        async for _ in graph.astream(c.initial("accumulate"), c.config(thread), durability="sync"):
            pass

    t = time.perf_counter()
    asyncio.run(go())
    seconds = time.perf_counter() - t
    assert graph.get_state(c.config(thread)).values["n"] == n
    return seconds


def worker_arm(url: str, n: int, thread: str) -> float:
    import wayline
    from wayline.langgraph.engine import LangGraphEngine
    from wayline.worker import Worker, WorkerConfig

    store = wayline.connect(url)
    engine = LangGraphEngine(app(n), store=store)
    worker = Worker(store, engine, WorkerConfig(poll_interval=0.005, cpus=None))
    running = threading.Thread(target=worker.run)
    running.start()
    try:
        client = wayline.Wayline(store)
        t = time.perf_counter()
        client.start(engine, c.initial("accumulate"), run_id=thread)
        run = client.wait(thread, timeout=600, poll=0.002)
        seconds = time.perf_counter() - t
        assert (run.status, run.step) == ("done", n), (run.status, run.error)
    finally:
        worker.stop()
        running.join()
        store.close()
    return seconds


def sqlite_saver(path: Path) -> Any:
    from langgraph.checkpoint.sqlite import SqliteSaver

    return SqliteSaver(c.lg_connect(path))


def postgres_saver(url: str) -> tuple[Any, Any]:
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg import Connection

    from wayline.store.postgres import _split_url

    conninfo, options = _split_url(url)
    schema = options["schema"]
    with Connection.connect(conninfo, autocommit=True) as admin:
        admin.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
    conn = Connection.connect(
        conninfo, autocommit=True, prepare_threshold=0, options=f"-c search_path={schema}"
    )
    saver = PostgresSaver(conn)  # type: ignore[arg-type]
    saver.setup()
    return saver, conn


def measure(arms: dict[str, Callable[[str], float]], n: int) -> dict[str, float]:
    """Median steps/s of each arm, the arms interleaved round by round (load on a shared
    machine falls on all of them alike)."""
    seconds: dict[str, list[float]] = {name: [] for name in arms}
    for i in range(REPEATS):
        for name, arm in arms.items():
            seconds[name].append(arm(f"{name.split()[0]}-{i}-{len(seconds[name])}"))
    return {name: n / statistics.median(s) for name, s in seconds.items()}


def backend_arms(
    backend: str, n: int, tmp: Path, pg_base: str | None
) -> dict[str, Callable[[str], float]]:
    import wayline
    from wayline.langgraph import WaylineSaver

    if backend == "SQLite":
        url = c.wayline_url(tmp / "wayline.db")
        lg_name, lg_saver = "invoke, SqliteSaver", sqlite_saver(tmp / "lg.db")
    else:
        from pg import schema_url

        assert pg_base is not None
        url = schema_url(pg_base)
        lg_name, (lg_saver, _) = "invoke, PostgresSaver", postgres_saver(schema_url(pg_base))
    store = wayline.connect(url)
    saver = WaylineSaver(store)
    return {
        lg_name: lambda t: invoke_arm(lg_saver, n, t),
        "invoke, WaylineSaver": lambda t: invoke_arm(saver, n, t),
        "astream, WaylineSaver": lambda t: astream_arm(saver, n, t),
        "wayline worker": lambda t: worker_arm(url, n, t),
    }


def main() -> None:
    argv = [a for a in sys.argv[1:] if a != "--no-postgres"]
    args = c.quick_flag(argv, "LangGraph's engine on wayline's workers vs plain invoke")
    n = 100 if args.quick else 300
    c.prepare_items(n)
    pg_base = None
    if "--no-postgres" not in sys.argv:
        from pg import start_postgres

        pg_base = start_postgres()
    rows = []
    ratios = []
    with c.temp_dir("lgengine") as tmp:
        for backend in ("SQLite", "PostgreSQL") if pg_base else ("SQLite",):
            folder = tmp / backend
            folder.mkdir()
            arms = backend_arms(backend, n, folder, pg_base)
            measure({k: (lambda a: lambda t: a(f"warm-{t}"))(v) for k, v in arms.items()}, 20)
            rates = measure(arms, n)
            base = rates["invoke, SqliteSaver" if backend == "SQLite" else "invoke, PostgresSaver"]
            for name, rate in rates.items():
                rows.append([backend, name, f"{n:,}", c.fmt_num(rate), f"{rate / base:.2f}"])
            fenced = rates["wayline worker"] / rates["astream, WaylineSaver"]
            ratios.append([backend, f"{fenced:.2f}", f"{(1 / fenced - 1) * 100:+.0f}%"])
    c.print_table(
        f"LangGraph graph, a ~500-byte item appended per step, durability sync "
        f"(median of {REPEATS}, arms interleaved)",
        ["backend", "arm", "steps", "steps/s", "vs LangGraph's saver"],
        rows,
    )
    c.print_table(
        "lease + fence: wayline worker / astream on WaylineSaver",
        ["backend", "steps/s ratio", "time per step"],
        ratios,
    )


if __name__ == "__main__":
    main()
