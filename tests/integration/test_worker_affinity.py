"""A worker pinned to CPUs (``WorkerConfig.cpus``, ``wayline.worker.affinity``): its own
threads run there, the caller's threads keep theirs, and a CPU it may not use is refused
before anything runs."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any, TypedDict

import pytest

import wayline
from wayline import END, START, NodeContext, StateGraph
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
    from wayline.cli.main import _place_workers

    assert _place_workers("auto", 1) == ["auto"]
    assert _place_workers("all", 1) == [None]
    assert _place_workers("all", 2) == [None, None]
    spread = _place_workers("auto", 2)
    assert len(set(spread)) == 2 and all(isinstance(p, frozenset) and len(p) == 1 for p in spread)
    assert _place_workers(f"{ALLOWED[0]}", 1) == [frozenset({ALLOWED[0]})]
