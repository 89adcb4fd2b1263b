"""A worker whose slots are greenlets on one thread (``WorkerConfig.one_thread``,
``wayline.worker.hub``): every ready run's step in one transaction (counted), nodes that
never overlap, new work found beside busy slots, a prompt stop, effects and interrupts as
with threads, and a clear error without ``greenlet``."""

from __future__ import annotations

import itertools
import sys
import threading
import time
from pathlib import Path
from typing import Any, TypedDict

import pytest

import wayline
from wayline import END, START, NodeContext, StateGraph, interrupt
from wayline.client import Wayline
from wayline.errors import ConfigError
from wayline.worker import Worker, WorkerConfig
from wayline.worker.hub import HubCommit

STEPS = 6


class Count(TypedDict):
    n: int
    steps: int


def _graph(spans: list[tuple[str, float, float]], name: str = "hub") -> StateGraph:
    def step(state: Count, ctx: NodeContext) -> dict[str, Any]:
        start = time.monotonic()
        time.sleep(0.001)  # a node that takes time: another run's node must not overlap it
        spans.append((ctx.run_id, start, time.monotonic()))
        return {"n": state["n"] + 1}

    g = StateGraph(Count, name=name)
    g.add_node("step", step)
    g.add_edge(START, "step")
    g.add_conditional_edges("step", lambda s: "step" if s["n"] < s["steps"] else END)
    return g


def _worker(url: str, app: Any, concurrency: int) -> Worker:
    config = WorkerConfig(concurrency=concurrency, poll_interval=0.05, one_thread=True)
    return Worker(url, app, config)


def _run(worker: Worker, max_runs: int, timeout: float = 60.0) -> None:
    t = threading.Thread(target=worker.run, kwargs={"max_runs": max_runs})
    t.start()
    t.join(timeout)
    assert not t.is_alive(), "the one-thread worker did not finish its runs"


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'hub.db'}"
    return str(request.getfixturevalue("pg_url"))


def test_every_ready_run_commits_in_one_transaction_and_nodes_never_overlap(url: str) -> None:
    spans: list[tuple[str, float, float]] = []
    store = wayline.connect(url)
    app = _graph(spans).compile(store)
    ids = [Wayline(store).start(app, {"n": 0, "steps": STEPS}, run_id=f"r{i}") for i in range(4)]
    worker = _worker(url, app, 4)
    assert isinstance(worker.group, HubCommit)
    _run(worker, len(ids))
    for run_id in ids:
        run = store.get_run("default", run_id)
        assert run is not None and run.status == "done" and run.step == STEPS
    stats = worker.group.stats
    # Four runs claimed at once, each parked at every commit until all four asked: the input
    # step and each node step of the four went out together, one transaction each.
    assert stats.commits == 4 * (STEPS + 1)
    assert stats.transactions == STEPS + 1
    assert stats.largest == 4
    ordered = sorted(spans, key=lambda s: s[1])
    assert len(ordered) == 4 * STEPS
    assert all(a[2] <= b[1] for a, b in itertools.pairwise(ordered))  # one at a time
    worker.store.close()
    store.close()


def test_a_run_started_while_another_runs_is_claimed_beside_it(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'late.db'}"
    spans: list[tuple[str, float, float]] = []
    store = wayline.connect(url)
    app = _graph(spans).compile(store)
    client = Wayline(store)
    client.start(app, {"n": 0, "steps": 400}, run_id="long")
    worker = _worker(url, app, 2)
    t = threading.Thread(target=worker.run, kwargs={"max_runs": 2})
    t.start()
    deadline = time.monotonic() + 30
    while not any(r == "long" for r, _, _ in spans):
        assert time.monotonic() < deadline, "the long run never started"
        time.sleep(0.005)
    client.start(app, {"n": 0, "steps": 2}, run_id="late")
    t.join(60)
    assert not t.is_alive()
    finished = {r: max(end for rid, _, end in spans if rid == r) for r in ("long", "late")}
    assert finished["late"] < finished["long"]  # it did not wait for the long run to end
    late = store.get_run("default", "late")
    assert late is not None and late.status == "done" and late.step == 2
    worker.store.close()
    store.close()


def test_an_idle_one_thread_worker_stops_promptly(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'idle.db'}"
    store = wayline.connect(url)
    app = _graph([]).compile(store)
    worker = Worker(url, app, WorkerConfig(concurrency=3, poll_interval=30, one_thread=True))
    t = threading.Thread(target=worker.run)
    t.start()
    deadline = time.monotonic() + 10
    while not worker.store._work.waiting():  # type: ignore[attr-defined]
        assert time.monotonic() < deadline, "the hub never went to sleep on the work signal"
        time.sleep(0.005)
    worker.stop()
    t.join(10)
    assert not t.is_alive(), "stop() did not wake the idle hub (its poll is 30 s)"
    worker.store.close()
    store.close()


class Pay(TypedDict, total=False):
    amount: int
    approved: bool
    charged: str


def test_effects_and_interrupts_behave_as_with_threads(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'pay.db'}"
    calls: list[int] = []

    def ask(state: Pay) -> dict[str, Any]:
        return {"approved": bool(interrupt({"amount": state["amount"]}))}

    def charge(state: Pay, ctx: NodeContext) -> dict[str, Any]:
        def send(key: str) -> str:
            calls.append(state["amount"])
            return f"ch_{state['amount']}"

        return {"charged": ctx.effect("charge", send)}

    g = StateGraph(Pay, name="pay")
    g.add_node("ask", ask)
    g.add_node("charge", charge)
    g.add_edge(START, "ask")
    g.add_edge("ask", "charge")
    g.add_edge("charge", END)
    store = wayline.connect(url)
    app = g.compile(store)
    client = Wayline(store)
    ids = [client.start(app, {"amount": 10 + i}, run_id=f"p{i}") for i in range(3)]
    _run(_worker(url, app, 3), len(ids))
    for run_id in ids:
        run = store.get_run("default", run_id)
        assert run is not None and run.status == "interrupted"
        client.resume(run_id, True)
    _run(_worker(url, app, 3), len(ids))
    assert sorted(calls) == [10, 11, 12]  # each charge once
    for i, run_id in enumerate(ids):
        state = app.get_state({"configurable": {"thread_id": run_id}})
        assert state.values["charged"] == f"ch_{10 + i}"
    store.close()


def test_without_greenlet_the_worker_is_refused_with_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "greenlet", None)  # import greenlet: ImportError
    url = f"sqlite:///{tmp_path / 'none.db'}"
    app = _graph([]).compile(wayline.connect(url))
    with pytest.raises(ConfigError, match=r"pip install 'wayline\[one-thread\]'"):
        Worker(url, app, WorkerConfig(one_thread=True))


def test_a_commit_from_inside_an_event_loop_does_not_yield(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """asyncio allows one running loop a thread: a slot parked inside an engine's loop would
    leave the next slot unable to start its own, so such a commit keeps the thread."""
    import asyncio

    import greenlet

    from wayline.store.group import GroupCommit

    store = wayline.connect(f"sqlite:///{tmp_path / 'loop.db'}")
    commits = HubCommit(store)
    blocking: list[str] = []
    monkeypatch.setattr(
        GroupCommit, "commit", lambda self, tenant, run, token, batch: blocking.append(run)
    )

    async def inside() -> None:
        commits.commit("default", "in-loop", 1, None)  # type: ignore[arg-type]

    def slot() -> None:
        asyncio.run(inside())
        commits.commit("default", "outside", 1, None)  # type: ignore[arg-type]

    commits.hub = greenlet.getcurrent()
    greenlet.greenlet(slot, parent=commits.hub).switch()  # back here when "outside" parks
    assert blocking == ["in-loop"]  # the ordinary commit, without yielding
    assert len(commits.waiting) == 1 and commits._parked[0].run_id == "outside"
    store.close()
