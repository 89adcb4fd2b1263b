"""Many queued and waiting runs, and what a claim and a worker cost among them (used by
``bench/fleet.py --only scale``).

Rows are written through the store's own insert (``Q_INSERT_RUN``, the row ``Wayline.start``
writes, with its checksummed inbox ``{"n": 0}`` for ``fleet_graph.fleet``), many to a
transaction, so 100,000 runs take seconds instead of 100,000 commits; waiting runs are then
set ``interrupted`` with an older ``updated_at`` than any queued run (were they in the claim's
range, they would come first). Not a test module.
"""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import _common as c
import fleet_graph as fg

import wayline
from wayline.graph.checkpoint import encode_inbox
from wayline.store.sql_store import SQLStore

CHUNK = 5_000


def populate(store: SQLStore, *, queued: int, waiting: int) -> None:
    app = fg.fleet.compile(store)
    base = time.time() - 3600
    kinds = [("w", i, base + i * 1e-4) for i in range(waiting)]
    kinds += [("q", i, base + 1800 + i * 1e-4) for i in range(queued)]
    for start in range(0, len(kinds), CHUNK):
        rows = []
        for kind, i, at in kinds[start : start + CHUNK]:
            run_id = f"{kind}{i}"
            inbox = encode_inbox(app.codec, {"n": 0})
            stored, crc = store.payloads.put(
                ("runs", "default", run_id, "inbox"), "default", f"{run_id}|n", inbox
            )
            rows.append(
                (
                    "default",
                    run_id,
                    app.name,
                    app.version,
                    "sync",
                    0,  # fencing token, lease owner, lease expiry: not held
                    None,
                    None,
                    at,
                    at,
                    stored,
                    "",
                    crc,
                    uuid.uuid4().hex,
                    at,
                )
            )
        with store._tx("default") as db:
            db.executemany(store.q.Q_INSERT_RUN, rows)
    ph = store.placeholder
    with store._tx("default") as db:
        db.execute(
            f"UPDATE runs SET status = 'interrupted', inbox = NULL, inbox_crc = NULL, step = 5 "
            f"WHERE tenant_id = {ph} AND substr(run_id, 1, 1) = 'w'",
            ("default",),
        )
    analyze = "ANALYZE" if store.dialect == "sqlite" else "ANALYZE runs"
    with store._tx() as db:
        db.execute(analyze)


def claim_plan(store: SQLStore, graphs: list[tuple[str, str, str]]) -> str:
    """The claim query's plan in a word: every access to ``runs`` by index, or a scan."""
    ph = store.placeholder
    if not hasattr(store.q, "Q_CLAIM_BRANCHES"):  # wayline before the claim-queue index
        clause = f"(graph_name = {ph} AND graph_version = {ph})"
        query = store.q.Q_CLAIM_CANDIDATE.format(graphs=clause, lock="")
        return _plan(store, query, [*graphs[0][:2], time.time(), time.time(), None, None])
    branches = [
        f"SELECT * FROM ({b.format(lock='', peek=getattr(store, 'claim_peek', 1))}) AS b{i}"
        for i, b in enumerate(store.q.Q_CLAIM_BRANCHES)
    ]
    peek = getattr(store, "claim_peek", 1)  # older trees: LIMIT 1, no {peek}
    query = store.q.Q_CLAIM_CANDIDATE.format(branches=" UNION ALL ".join(branches), peek=peek)
    now = time.time()
    params: list[Any] = []
    for b in store.q.Q_CLAIM_BRANCHES:
        key = graphs[0] if "fingerprint" in b else graphs[0][:2]  # claims before 0013: no fp
        params += [*key, *[now] * (b.count(ph) - len(key) - 2), None, None]
    return _plan(store, query, params)


def _plan(store: SQLStore, query: str, params: list[Any]) -> str:
    if store.dialect == "sqlite":
        lines = [str(r[-1]) for r in store._read("EXPLAIN QUERY PLAN " + query, params)]
        scans = [ln for ln in lines if ln.startswith("SCAN runs")]
    else:
        lines = [str(r[0]) for r in store._read("EXPLAIN " + query, params)]
        scans = [ln for ln in lines if "Seq Scan on runs" in ln]
    used = sorted(
        {w for ln in lines for w in ln.replace("(", " ").split() if w.startswith("runs_")}
    )
    return ("SCAN" if scans else "index") + " (" + ", ".join(used) + ")"


def claim_probe(url: str, *, queued: int, waiting: int, claims: int = 50) -> dict[str, Any]:
    store = wayline.connect(url)
    assert isinstance(store, SQLStore)
    populate(store, queued=queued, waiting=waiting)
    app = fg.fleet.compile(store)
    graphs = [(app.name, app.version, app.fingerprint)]
    counted = _count_statements(store)
    times = []
    for _ in range(claims):
        t0 = time.perf_counter()
        claimed = store.claim_next(owner="probe", lease_seconds=600, graphs=graphs)
        times.append(time.perf_counter() - t0)
        assert claimed is not None and claimed[0].run_id.startswith("q")
    statements = counted[0] / claims
    plan = claim_plan(store, graphs)
    store.close()
    rss_idle, rss_busy = worker_rss(url)
    return {
        "claim_ms_p50": c.percentile(times, 50) * 1e3,
        "claim_ms_p99": c.percentile(times, 99) * 1e3,
        "queries_per_claim": statements,
        "plan": plan,
        "worker_rss": rss_busy,
        "worker_rss_idle_start": rss_idle,
    }


def _count_statements(store: SQLStore) -> list[int]:
    counter = [0]
    inner = store._tx

    from contextlib import contextmanager

    @contextmanager
    def counted(tenant: str | None = None) -> Any:
        with inner(tenant) as db:
            yield _Counting(db, counter)

    store._tx = counted  # type: ignore[method-assign]
    return counter


class _Counting:
    def __init__(self, db: Any, counter: list[int]) -> None:
        self.db, self.counter = db, counter

    def execute(self, query: str, params: Any = ()) -> Any:
        self.counter[0] += 1
        return self.db.execute(query, params)

    def executemany(self, query: str, rows: Any) -> Any:
        self.counter[0] += 1
        return self.db.executemany(query, rows)


def worker_rss(url: str, seconds: float = 8.0) -> tuple[float, float]:
    """RSS of a ``wayline worker`` (concurrency 8) just after it started serving, and after
    ``seconds`` of claiming and finishing queued runs among all the others."""
    import psutil  # type: ignore[import-untyped]

    repo = Path(wayline.__file__).resolve().parent.parent
    cmd = [
        sys.executable,
        "-m",
        "wayline.cli.main",
        "worker",
        f"{c.BENCH_DIR / 'fleet_graph.py'}:fleet",
    ]
    cmd += ["--db", url, "--concurrency", "8", "--processes", "1", "--poll", "0.05"]
    log = Path(c.RESULTS_DIR.parent / "results" / f"scale-worker-{uuid.uuid4().hex[:6]}.log")
    log.parent.mkdir(exist_ok=True)
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=str(repo))
    try:
        deadline = time.monotonic() + 60
        while "serving" not in log.read_text(errors="replace"):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(log.read_text(errors="replace")[-2000:])
            time.sleep(0.05)
        ps = psutil.Process(proc.pid)
        idle = ps.memory_info().rss
        time.sleep(seconds)
        busy = ps.memory_info().rss
    finally:
        proc.terminate()
        proc.wait(30)
        log.unlink(missing_ok=True)
    return float(idle), float(busy)
