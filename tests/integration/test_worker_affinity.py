"""A worker pinned to CPUs (``WorkerConfig.cpus``, ``wayline.worker.affinity``): its own
threads run there, the caller's threads keep theirs, and a CPU it may not use is refused
before anything runs."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, TypedDict

import pytest

import wayline
from wayline import END, START, NodeContext, StateGraph
from wayline.cli.loading import load_graph
from wayline.client import Wayline
from wayline.errors import ConfigError
from wayline.worker import Worker, WorkerConfig
from wayline.worker.affinity import allowed_cpus, parse_cpus

ALLOWED = allowed_cpus()
pytestmark = pytest.mark.skipif(
    len(ALLOWED) < 2 or not hasattr(os, "sched_setaffinity"),
    reason="pinning is visible only with two or more CPUs and os.sched_setaffinity (Linux); "
    f"this process may run on {ALLOWED}",
)


class Count(TypedDict):
    n: int


def _graph(seen: list[set[int]]) -> StateGraph:
    def step(state: Count, ctx: NodeContext) -> dict[str, Any]:
        seen.append(os.sched_getaffinity(0))  # 0: this thread's own
        return {"n": state["n"] + 1}

    g = StateGraph(Count, name="affinity")
    g.add_node("step", step)
    g.add_edge(START, "step")
    g.add_conditional_edges("step", lambda s: "step" if s["n"] < 3 else END)
    return g


def test_a_pinned_worker_runs_its_nodes_on_its_cpu_and_leaves_the_callers_alone(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'pinned.db'}"
    cpu = ALLOWED[-1]
    seen: list[set[int]] = []
    store = wayline.connect(url)
    app = _graph(seen).compile(store)
    ids = [Wayline(store).start(app, {"n": 0}, run_id=f"a{i}") for i in range(4)]
    before = os.sched_getaffinity(0)
    worker = Worker(url, app, WorkerConfig(concurrency=2, poll_interval=0.01, cpus={cpu}))
    runner = threading.Thread(target=worker.run, kwargs={"max_runs": len(ids)})
    runner.start()
    runner.join(60)
    assert not runner.is_alive()
    assert len(seen) == 3 * len(ids)
    assert {frozenset(s) for s in seen} == {frozenset({cpu})}
    assert os.sched_getaffinity(0) == before == set(ALLOWED)  # the caller's thread: as it was
    for run_id in ids:
        run = store.get_run("default", run_id)
        assert run is not None and run.status == "done"
    worker.store.close()
    store.close()


def test_a_cpu_the_process_may_not_use_is_refused_when_the_worker_is_made(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'refused.db'}"
    app = _graph([]).compile(wayline.connect(url))
    missing = max(ALLOWED) + 1
    with pytest.raises(ConfigError, match=rf"CPU\(s\) \[{missing}\] are not available"):
        Worker(url, app, WorkerConfig(cpus={missing}))


def test_cpu_lists_read_as_written() -> None:
    first, second = ALLOWED[0], ALLOWED[1]
    assert parse_cpus(f"{first}") == {first}
    assert parse_cpus(f"{first},{second}") == {first, second}
    assert parse_cpus(f"{first}-{second}") == set(range(first, second + 1))
    with pytest.raises(ConfigError, match="not a CPU list"):
        parse_cpus("first")


def test_an_auto_placed_worker_runs_every_slot_on_the_one_cpu_it_chose(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'auto.db'}"
    seen: list[set[int]] = []
    store = wayline.connect(url)
    app = _graph(seen).compile(store)
    ids = [Wayline(store).start(app, {"n": 0}, run_id=f"a{i}") for i in range(4)]
    before = os.sched_getaffinity(0)
    worker = Worker(url, app, WorkerConfig(concurrency=2, poll_interval=0.01, cpus="auto"))
    assert worker.placement is not None
    runner = threading.Thread(target=worker.run, kwargs={"max_runs": len(ids)})
    runner.start()
    runner.join(60)
    assert not runner.is_alive()
    chosen = worker.placement.cpu
    assert chosen in ALLOWED
    assert len(seen) == 3 * len(ids)
    assert {frozenset(s) for s in seen} == {frozenset({chosen})}
    assert os.sched_getaffinity(0) == before  # the caller's thread: as it was
    worker.store.close()
    store.close()


def test_the_command_places_a_lone_worker_and_spreads_several() -> None:
    from wayline.cli.worker_processes import cpu_list as _cpu_list
    from wayline.cli.worker_processes import place_workers as _place_workers

    assert _place_workers("auto", 1) == ["auto"]
    assert _place_workers("all", 1) == [None]
    assert _place_workers("all", 2) == [None, None]
    spread = _place_workers("auto", 2)  # each placed, starting on a CPU of its own
    assert spread == ALLOWED[:2]
    assert [_cpu_list(p) for p in spread] == [f"auto:{cpu}" for cpu in ALLOWED[:2]]
    assert _place_workers(f"auto:{ALLOWED[1]}", 1) == [ALLOWED[1]]  # what a child is handed
    assert _place_workers(f"{ALLOWED[0]}", 1) == [frozenset({ALLOWED[0]})]
    assert _place_workers(f"{ALLOWED[0]},{ALLOWED[1]}", 2) == [
        frozenset({ALLOWED[0]}),
        frozenset({ALLOWED[1]}),
    ]
    with pytest.raises(ConfigError, match="write auto:N"):
        _place_workers("auto:first", 1)
    with pytest.raises(ConfigError, match="not available"):
        _place_workers(f"auto:{max(ALLOWED) + 1}", 1)


GRAPH = """
import os
import time
from typing import TypedDict
from wayline import END, START, StateGraph

class Count(TypedDict):
    n: int

def step(state):
    path = os.environ["AFFINITY_LOG"]
    with open(path, "a") as log:
        log.write(f"{os.getpid()} {sorted(os.sched_getaffinity(0))}\\n")
    deadline = time.monotonic() + 30  # hold the run until both processes have run a node
    while time.monotonic() < deadline:
        with open(path) as log:
            if len({line.split()[0] for line in log}) >= 2:
                break
        time.sleep(0.01)
    return {"n": state["n"] + 1}

g = StateGraph(Count, name="affinity_cli")
g.add_node("step", step)
g.add_edge(START, "step")
g.add_conditional_edges("step", lambda s: "step" if s["n"] < 3 else END)
graph = g
"""


def test_worker_processes_each_run_on_a_cpu_of_their_own(tmp_path: Path) -> None:
    """``wayline worker --processes 2``: each process placed, starting on its own CPU."""
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    spec = tmp_path / "graph.py"
    spec.write_text(GRAPH)
    log = tmp_path / "affinity.log"
    store = wayline.connect(url)
    app = load_graph(f"{spec}:graph", store)  # as the command loads it
    ids = [Wayline(store).start(app, {"n": 0}, run_id=f"c{i}") for i in range(16)]
    command = [sys.executable, "-m", "wayline.cli.main", "worker", f"{spec}:graph"]
    command += ["--db", url, "--processes", "2", "--concurrency", "2", "--poll", "0.05"]
    proc = subprocess.Popen(
        command,
        env={**os.environ, "AFFINITY_LOG": str(log), "COLUMNS": "200"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            runs = [store.get_run("default", run_id) for run_id in ids]
            if all(r is not None and r.status == "done" for r in runs):
                break
            time.sleep(0.05)
        else:
            raise AssertionError("the worker processes did not finish the runs within 60 s")
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out
    by_pid: dict[str, set[str]] = {}
    for line in log.read_text().splitlines():
        pid, cpus = line.split(" ", 1)
        by_pid.setdefault(pid, set()).add(cpus)
    assert len(by_pid) == 2, by_pid  # both processes ran nodes (each waits for the other)
    assert all(len(seen) == 1 for seen in by_pid.values()), by_pid  # on one CPU each
    (first,), (second,) = by_pid.values()
    assert first != second, by_pid  # and not the same one
    said = " ".join(out.split())  # rich may wrap a long line
    assert said.count("left when others keep it busy") == 2, out  # each placed, not pinned
    store.close()


SERVE_GRAPH = """
import os
from typing import TypedDict
from wayline import END, START, StateGraph

class Where(TypedDict, total=False):
    cpus: list[int]

def where(state):
    return {"cpus": sorted(os.sched_getaffinity(0))}  # 0: the node's thread

g = StateGraph(Where, name="affinity_serve")
g.add_node("where", where)
g.add_edge(START, "where")
g.add_edge("where", END)
graph = g
"""


@pytest.mark.parametrize("cpus", ["auto", "all"])
def test_wayline_serve_runs_its_workers_where_cpus_says(tmp_path: Path, cpus: str) -> None:
    """``wayline serve`` places its process (``--cpus auto``, the default): the nodes its
    in-process workers run are on the one CPU its banner names; ``--cpus all`` leaves them
    to the OS. Stopped, it logs what its workers did."""
    url = f"sqlite:///{tmp_path / 'serve.db'}"
    spec = tmp_path / "where.py"
    spec.write_text(SERVE_GRAPH)
    store = wayline.connect(url)
    app = load_graph(f"{spec}:graph", store)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    command = [sys.executable, "-m", "wayline.cli.main", "serve", f"where={spec}:graph"]
    command += ["--db", url, "--dev", "--port", str(port), "--workers", "2", "--cpus", cpus]
    proc = subprocess.Popen(
        command,
        env={**os.environ, "COLUMNS": "200"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        Wayline(store).start(app, {}, run_id="s1")
        deadline = time.monotonic() + 60
        while (run := store.get_run("default", "s1")) is None or run.status != "done":
            assert time.monotonic() < deadline, "the server's workers did not run s1 in 60 s"
            assert proc.poll() is None, "wayline serve exited"
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    seen = app.get_state({"configurable": {"thread_id": "s1"}}).values["cpus"]
    said = " ".join(out.split())  # rich may wrap a long line
    assert "in-process workers stopped after 1 run executions" in said, out  # its log line
    if cpus == "all":
        assert seen == ALLOWED and "CPU" not in said, out
    else:
        assert len(seen) == 1 and f"CPU {seen[0]}, left when others keep it busy" in said, out
    store.close()


def test_wayline_serve_refuses_a_cpu_it_may_not_use_before_touching_the_store(
    tmp_path: Path,
) -> None:
    path = tmp_path / "never.db"
    bad = max(ALLOWED) + 1
    command = [sys.executable, "-m", "wayline.cli.main", "serve", "--demo"]
    command += ["--db", f"sqlite:///{path}", "--cpus", str(bad)]
    env = {**os.environ, "COLUMNS": "200"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"CPU(s) [{bad}] are not available to this process" in done.stdout
    assert "demo key" not in done.stdout and not path.exists()  # nothing made, no key
