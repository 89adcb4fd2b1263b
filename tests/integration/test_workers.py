"""Workers on SQLite and PostgreSQL: real worker processes, SIGKILL, SIGSTOP, SIGTERM.

Every run is the ``counter`` graph of worker_graphs.py: six steps, an effect at n == 3.
Node executions and provider charges are counted through files that survive kills.
"""

from __future__ import annotations

import collections
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from waiting import wait_until

import wayline
from wayline.client import Wayline
from wayline.effects import RetryPolicy
from wayline.store.base import Store
from wayline.store.metric_samples import metric_samples
from wayline.worker import Worker, WorkerConfig
from wayline.worker.affinity import allowed_cpus

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
import worker_graphs  # noqa: E402

GRAPHS = f"{HERE / 'worker_graphs.py'}:counter"
INPUT = {"log": [], "n": 0}
FINAL = {"log": list(range(worker_graphs.STEPS)), "n": worker_graphs.STEPS}
pytestmark = pytest.mark.crash


def spawn(procs: list[Any], url: str, side: Path, *, lease: float, name: str) -> Any:
    log = open(side / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process
    cmd = [sys.executable, "-m", "wayline.cli.main", "worker", GRAPHS, "--db", url]
    cmd += ["--lease", str(lease), "--poll", "0.05", "--concurrency", "2"]
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    procs.append(proc)
    # Its signal handlers are installed once it says it is serving.
    wait_until(lambda: b"serving" in (side / f"{name}.log").read_bytes(), f"{name} to start")
    return proc


def command(procs: list[Any], url: str, log: Path, serving: int, *options: str) -> Any:
    """One ``wayline worker`` command with ``options``, started and waited for until
    ``serving`` of its processes say they serve (or it exits)."""
    cmd = [sys.executable, "-m", "wayline.cli.main", "worker", GRAPHS, "--db", url]
    cmd += ["--poll", "0.05", *options]
    with open(log, "wb") as out:
        parent = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    procs.append(parent)
    wait_until(
        lambda: log.read_bytes().count(b"serving") == serving or parent.poll() is not None,
        f"{serving} worker process(es)",
    )
    return parent


def executions(side: Path) -> collections.Counter[tuple[str, int]]:
    lines = (side / "executions.log").read_text().split("\n")
    return collections.Counter((r, int(n)) for r, n, _ in (ln.split() for ln in lines if ln))


def charges(side: Path) -> list[str]:
    path = side / "charges.log"
    return path.read_text().split() if path.exists() else []


def app_for(url: str) -> Any:
    return worker_graphs.build().compile(url)


def values(url: str, run_id: str) -> dict[str, Any]:
    snap = app_for(url).get_state({"configurable": {"thread_id": run_id}})
    return {k: snap.values[k] for k in ("log", "n")}


def tokens_by_step(store: Store, run_id: str) -> dict[int, int]:
    tokens = {}
    for d in store.load_deltas("default", run_id, -1, 10**6):
        assert d.fencing_token is not None, "a worker's step carries its lease's token"
        tokens[d.step] = d.fencing_token
    return tokens


def each_done_and_each_step_once(client: Wayline, url: str, side: Path, ids: list[str]) -> None:
    for run_id in ids:
        assert client.wait(run_id, timeout=60).status == "done"
        assert values(url, run_id) == FINAL
    counts = executions(side)
    assert set(counts.values()) == {1}  # nothing ran twice
    assert len(counts) == len(ids) * worker_graphs.STEPS


def test_workers_share_the_runs_and_each_step_runs_once(
    url: str, side: Path, procs: list[Any]
) -> None:
    workers = [spawn(procs, url, side, lease=10, name=f"w{i}") for i in range(3)]
    client = Wayline(url)
    app = app_for(url)
    ids = [client.start(app, INPUT, run_id=f"r{i}") for i in range(10)]
    each_done_and_each_step_once(client, url, side, ids)
    assert len(charges(side)) == 10 and len(set(charges(side))) == 10
    for w in workers:
        w.send_signal(signal.SIGTERM)
    assert [w.wait(timeout=20) for w in workers] == [0, 0, 0]


def test_one_worker_command_runs_several_processes_and_stops_them_all(
    tmp_path: Path, side: Path, procs: list[Any]
) -> None:
    url = f"sqlite:///{tmp_path / 'processes.db'}"
    log = side / "parent.log"
    parent = command(procs, url, log, 2, "--concurrency", "2", "--processes", "2")
    assert log.read_bytes().count(b"serving") == 2, log.read_text()
    client = Wayline(url)
    app = app_for(url)
    ids = [client.start(app, INPUT, run_id=f"p{i}") for i in range(12)]
    each_done_and_each_step_once(client, url, side, ids)  # across the processes
    lines = (side / "executions.log").read_text().split()
    pids = {int(p) for p in lines[2::3]}
    assert parent.pid not in pids  # the parent only supervises
    if len(allowed_cpus()) >= 2:  # --cpus auto: each process on one CPU, its own at first
        children = Path(f"/proc/{parent.pid}/task/{parent.pid}/children").read_text().split()
        placed = [os.sched_getaffinity(int(pid)) for pid in children]
        assert [len(cpus) for cpus in placed] == [1, 1], placed
        said = " ".join(log.read_text().split())  # rich may wrap a long line
        first = re.findall(r", CPU (\d+), left when others keep it busy", said)
        assert len(first) == 2 and first[0] != first[1], said
    parent.send_signal(signal.SIGTERM)  # forwarded: each child stops gracefully
    assert parent.wait(timeout=30) == 0
    assert log.read_bytes().count(b"stopped after") == 2


def test_by_default_a_command_shares_its_slots_among_a_process_a_cpu(
    tmp_path: Path, side: Path, procs: list[Any]
) -> None:
    """``--processes auto``: --concurrency 8 is two processes of 4 slots on two CPUs (one of
    8 on one): the command's total is what it was told."""
    url = f"sqlite:///{tmp_path / 'auto.db'}"
    log = side / "parent.log"
    expected = min(len(allowed_cpus()) or os.cpu_count() or 1, 2)
    parent = command(procs, url, log, expected, "--concurrency", "8")
    said = " ".join(log.read_text().split())  # rich may wrap a long line
    assert re.findall(r"\(concurrency (\d+)", said) == [str(8 // expected)] * expected, said
    if expected > 1:  # the parent says what it started
        assert "2 worker processes of 4 slots each, one a CPU (--processes auto)" in said
    client = Wayline(url)
    ids = [client.start(app_for(url), INPUT, run_id=f"a{i}") for i in range(12)]
    each_done_and_each_step_once(client, url, side, ids)
    parent.send_signal(signal.SIGTERM)
    assert parent.wait(timeout=30) == 0
    assert log.read_bytes().count(b"stopped after") == expected


def test_one_thread_worker_processes_run_every_step_once(
    tmp_path: Path, side: Path, procs: list[Any]
) -> None:
    """``--one-thread`` reaches each process of the command: its slots are greenlets on one
    thread (``wayline.worker.hub``), and every run's steps and its charge happen once."""
    url = f"sqlite:///{tmp_path / 'one-thread.db'}"
    log = side / "parent.log"
    options = ["--concurrency", "4", "--processes", "2", "--one-thread"]
    parent = command(procs, url, log, 2, *options)
    said = " ".join(log.read_text().split())  # rich may wrap a long line
    assert said.count(", one thread)") == 2, said
    client = Wayline(url)
    ids = [client.start(app_for(url), INPUT, run_id=f"o{i}") for i in range(8)]
    each_done_and_each_step_once(client, url, side, ids)
    assert len(charges(side)) == 8 and len(set(charges(side))) == 8
    parent.send_signal(signal.SIGTERM)
    assert parent.wait(timeout=30) == 0


def test_a_killed_workers_run_is_finished_by_another(
    url: str, side: Path, procs: list[Any]
) -> None:
    (side / "block-k").touch()
    first = spawn(procs, url, side, lease=1.0, name="first")
    client = Wayline(url)
    client.start(app_for(url), INPUT, run_id="k")
    wait_until(lambda: (side / "reached-k").exists(), "the first worker to reach n == 3")
    first.kill()
    first.wait()
    second = spawn(procs, url, side, lease=1.0, name="second")
    assert client.wait("k", timeout=30).status == "done"
    assert values(url, "k") == FINAL
    counts = executions(side)
    assert counts[("k", 3)] == 2  # the step in flight at the kill ran again
    assert all(c == 1 for (_, n), c in counts.items() if n != 3)  # committed steps did not
    assert len(charges(side)) == 1  # its effect had succeeded: recorded, not repeated
    tokens = tokens_by_step(wayline.connect(url), "k")
    assert len({tokens[s] for s in range(4)}) == 1  # input + n=0..2: the first lease
    assert {tokens[s] for s in range(4, 7)} == {max(tokens.values())}  # the second lease
    assert max(tokens.values()) > tokens[0]
    # its read after the takeover is a recovery, as the metrics it flushed on stopping say
    second.send_signal(signal.SIGTERM)
    assert second.wait(timeout=30) == 0
    reads: collections.Counter[str] = collections.Counter()
    for row in metric_samples(wayline.connect(url)).load("default", 0):
        if row.metric == "wayline.reconstruct.duration":
            reads[dict(row.attrs)["recovery"]] += row.count
    assert reads["true"] == 1  # the takeover's read; the first worker's start read nothing


def test_a_paused_worker_past_its_lease_writes_nothing(
    url: str, side: Path, procs: list[Any]
) -> None:
    (side / "block-p").touch()
    paused = spawn(procs, url, side, lease=1.0, name="paused")
    client = Wayline(url)
    client.start(app_for(url), INPUT, run_id="p")
    wait_until(lambda: (side / "reached-p").exists(), "the first worker to reach n == 3")
    paused.send_signal(signal.SIGSTOP)
    spawn(procs, url, side, lease=1.0, name="takeover")
    assert client.wait("p", timeout=30).status == "done"
    store = wayline.connect(url)
    before = tokens_by_step(store, "p")
    paused.send_signal(signal.SIGCONT)
    (side / "go-p").touch()  # the paused worker's node returns and tries to commit
    wait_until(
        lambda: b"lease on run 'p' lost" in (side / "paused.log").read_bytes(),
        "the paused worker to find its lease lost",
    )
    assert tokens_by_step(store, "p") == before  # none of its writes landed
    assert values(url, "p") == FINAL
    assert executions(side)[("p", 3)] == 2 and len(charges(side)) == 1
    (effect,) = store.list_effects("default", "p")
    assert effect.status == "SUCCEEDED"
    paused.send_signal(signal.SIGTERM)
    assert paused.wait(timeout=20) == 0


def test_sigterm_finishes_the_step_and_releases_the_run(
    url: str, side: Path, procs: list[Any]
) -> None:
    (side / "block-t").touch()
    first = spawn(procs, url, side, lease=60.0, name="first")  # a lease far beyond the test
    client = Wayline(url)
    client.start(app_for(url), INPUT, run_id="t")
    wait_until(lambda: (side / "reached-t").exists(), "the worker to reach n == 3")
    first.send_signal(signal.SIGTERM)
    (side / "go-t").touch()
    assert first.wait(timeout=20) == 0
    run = client.get("t")
    assert run.status == "running" and run.lease_owner is None and run.step == 4
    spawn(procs, url, side, lease=60.0, name="second")
    assert client.wait("t", timeout=20).status == "done"  # claimable at once: released
    assert values(url, "t") == FINAL
    assert set(executions(side).values()) == {1}


def test_a_burst_of_stop_signals_stops_the_worker_once(
    tmp_path: Path, side: Path, procs: list[Any]
) -> None:
    """A worker under ``--processes``, systemd or ``timeout`` gets each stop signal more than
    once (its process group's and its parent's). A second handler that ran while the first
    held the stop event's lock waited for itself forever; now the first signal stops the
    worker and the rest are ignored."""
    url = f"sqlite:///{tmp_path / 'burst.db'}"
    for attempt in range(10):
        worker = spawn(procs, url, side, lease=30.0, name=f"burst-{attempt}")
        for _ in range(200):
            worker.send_signal(signal.SIGTERM if _ % 2 else signal.SIGINT)
        assert worker.wait(timeout=20) == 0
        assert b"stopped after" in (side / f"burst-{attempt}.log").read_bytes()


def in_process_worker(url: str, **config: Any) -> tuple[Worker, threading.Thread]:
    settings = {"poll_interval": 0.02, "lease_seconds": 0.6, **config}
    worker = Worker(url, worker_graphs.build().compile(url), WorkerConfig(**settings))
    thread = threading.Thread(target=worker.run)
    thread.start()
    return worker, thread


def test_node_errors_retry_then_dead_letter_then_requeue(
    url: str, side: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WAYLINE_TEST_FAIL", "f")
    retry = RetryPolicy(max_attempts=3, initial_delay=0.01, max_delay=0.02)
    worker, thread = in_process_worker(url, retry=retry)
    try:
        client = Wayline(url)
        client.start(app_for(url), INPUT, run_id="f")
        run = wait_until(
            lambda: (r := client.get("f")).status == "failed" and r.attempts == 2 and r,
            "the run to exhaust its retries",
        )
        assert "node failure in f" in run.error
        assert executions(side)[("f", 0)] == 3  # three attempts of the failing step
        monkeypatch.delenv("WAYLINE_TEST_FAIL")
        assert client.retry("f")  # the operator re-queues the dead letter
        again = client.wait("f", timeout=20)
        assert again.status == "done", again.error  # (once failed in CI under load: why)
        assert values(url, "f") == FINAL
    finally:
        worker.stop()
        thread.join()


def test_cancel_stops_a_held_run_at_its_next_step(url: str, side: Path) -> None:
    (side / "block-c").touch()
    worker, thread = in_process_worker(url)
    try:
        client = Wayline(url)
        client.start(app_for(url), INPUT, run_id="c")
        wait_until(lambda: (side / "reached-c").exists(), "the worker to reach n == 3")
        assert client.cancel("c")
        worker.beat()  # the heartbeat that carries the request to the run (also on a timer)
        (side / "go-c").touch()
        assert client.wait("c", timeout=20).status == "cancelled"
        assert client.get("c").step == 4  # the step in flight finished; no later step ran
        assert not client.cancel("c")
    finally:
        worker.stop()
        thread.join()
    queued = client.start(app_for(url), INPUT, run_id="q")  # no worker holds it
    assert client.cancel(queued)
    assert client.get(queued).status == "cancelled"
