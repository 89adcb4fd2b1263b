"""Durable timers and expiring approvals on SQLite and PostgreSQL, with real workers.

A sleeping run holds no worker slot; its wake time is committed with the step, so a worker
SIGKILLed while it sleeps costs nothing: another worker wakes it when it is due, once, and
the node after the sleep runs once. An approval that expires takes its declared path,
audited as an expiry. Node executions are counted through a file that survives kills.
"""

from __future__ import annotations

import collections
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from waiting import wait_until

import wayline
from wayline import Actor, Command, OnExpire, Wayline, Worker, WorkerConfig
from wayline.errors import ApprovalRefused, ResumeError

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
import wakeup_graphs  # noqa: E402

SLEEPER = f"{HERE / 'wakeup_graphs.py'}:sleeper"
FINANCE = Actor(id="fin-1", roles=("finance",))


def executions(side: Path) -> collections.Counter[tuple[str, str]]:
    path = side / "executions.log"
    lines = path.read_text().split("\n") if path.exists() else []
    return collections.Counter((ln.split()[0], ln.split()[1]) for ln in lines if ln)


def spawn(procs: list[Any], url: str, side: Path, name: str) -> subprocess.Popen[bytes]:
    log = open(side / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process
    cmd = [sys.executable, "-m", "wayline.cli.main", "worker", SLEEPER, "--db", url]
    cmd += ["--lease", "2", "--poll", "0.2", "--concurrency", "1"]
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    procs.append(proc)
    wait_until(lambda: b"serving" in (side / f"{name}.log").read_bytes(), f"{name} to start")
    return proc


class Serving:
    """A worker in a thread of the test, stopped at the end."""

    def __init__(self, store: Any, graph: Any, concurrency: int = 1) -> None:
        config = WorkerConfig(concurrency=concurrency, poll_interval=0.05, lease_seconds=5)
        self.worker = Worker(store, graph, config)
        self.thread = threading.Thread(target=self.worker.run, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.worker.stop()
        self.thread.join(30)


def test_a_sleep_holds_no_worker_slot(url: str, side: Path) -> None:
    app = wakeup_graphs.build_sleeper().compile(url)
    client = Wayline(app.store)
    serving = Serving(app.store, app, concurrency=1)  # one slot
    try:
        client.start(app, {"seconds": 3600}, run_id="long-nap")
        # The sleep is committed with the step; the worker lets the lease go just after.
        asleep = wait_until(
            lambda: (r := client.get("long-nap")).wake_at is not None and not r.lease_owner and r,
            "the sleep to be committed and the lease let go",
        )
        assert asleep.status == "pending"
        assert asleep.wake_at > time.time() + 3000
        client.start(app, {"seconds": 0}, run_id="awake")
        assert client.wait("awake", timeout=30).status == "done"  # the one slot was free
    finally:
        serving.stop()
    assert client.get("long-nap").status == "pending"
    assert executions(side) == {("long-nap", "nap"): 1, ("awake", "nap"): 1, ("awake", "after"): 1}


def test_a_sleeping_run_survives_sigkill_and_wakes_once(
    url: str, side: Path, procs: list[Any]
) -> None:
    store = wayline.connect(url)
    client = Wayline(store)
    first = spawn(procs, url, side, "first")
    app = wakeup_graphs.build_sleeper().compile(store)
    client.start(app, {"seconds": 2}, run_id="nap-1")
    asleep = wait_until(
        lambda: (r := client.get("nap-1")).wake_at is not None and r, "the sleep to commit"
    )
    wake_at = asleep.wake_at
    first.send_signal(signal.SIGKILL)
    first.wait()
    assert client.get("nap-1").status == "pending"  # nothing was held by the dead worker
    spawn(procs, url, side, "second")
    spawn(procs, url, side, "third")  # two workers race for the wake-up
    run = wait_until(
        lambda: (r := client.get("nap-1")).status not in ("pending", "running") and r,
        "the run to wake and finish",
    )
    assert run.status == "done"
    values = app.get_state({"configurable": {"thread_id": "nap-1"}}).values
    assert values["after"] == 1
    assert values["woke_at"] >= wake_at  # never early: the committed time held
    # The sleeping node ran when it fell asleep and once when woken; the next node once.
    assert executions(side) == {("nap-1", "nap"): 2, ("nap-1", "after"): 1}
    store.close()


def test_in_process_invoke_waits_out_a_sleep(url: str, side: Path) -> None:
    app = wakeup_graphs.build_sleeper().compile(url)
    config = {"configurable": {"thread_id": "inline"}}
    out = app.invoke({"seconds": 0.2}, config)
    assert out["after"] == 1
    assert executions(side) == {("inline", "nap"): 2, ("inline", "after"): 1}


def test_a_sleeping_run_cannot_be_resumed_by_hand(url: str) -> None:
    app = wakeup_graphs.build_sleeper().compile(url)
    client = Wayline(app.store)
    serving = Serving(app.store, app)
    try:
        client.start(app, {"seconds": 3600}, run_id="deep")
        wait_until(lambda: client.get("deep").wake_at is not None, "the sleep to commit")
    finally:
        serving.stop()
    with pytest.raises(ResumeError, match="sleeping"):
        app.invoke(Command(resume=1), {"configurable": {"thread_id": "deep"}})
    assert client.get("deep").status == "pending"


def _approval(url: str, on_expire: OnExpire | None, expires_in: float) -> Any:
    return wakeup_graphs.approval_graph(on_expire, expires_in).compile(url)


def _settled(client: Wayline, run_id: str) -> Any:
    return wait_until(
        lambda: (r := client.get(run_id)).status in ("done", "failed") and r,
        f"run {run_id} to take its expiry path",
    )


EXPIRIES: dict[str, tuple[OnExpire | None, str, dict[str, Any]]] = {
    "default": (None, "failed", {}),
    "fail": (OnExpire.fail("finance did not answer"), "failed", {}),
    "resume": (OnExpire.resume({"approved": False}), "done", {"decision": {"approved": False}}),
    "goto": (OnExpire.goto("fallback"), "done", {"path": "fallback"}),
}


@pytest.mark.parametrize("path", sorted(EXPIRIES))
def test_an_expired_approval_takes_its_declared_path(url: str, side: Path, path: str) -> None:
    on_expire, status, expected = EXPIRIES[path]
    app = _approval(url, on_expire, 0.3)
    client = Wayline(app.store)
    serving = Serving(app.store, app)
    try:
        client.start(app, {}, run_id="claim")
        run = _settled(client, "claim")
    finally:
        serving.stop()
    assert run.status == status
    values = app.get_state({"configurable": {"thread_id": "claim"}}).values
    assert {k: values[k] for k in expected} == expected
    if status == "failed":
        reason = on_expire.reason if on_expire else "the approval expired unanswered"
        assert run.error is not None and "expired" in run.error and reason in run.error
    audit = [(a.actor, a.action, a.outcome) for a in client.audit("claim")]
    outcome = {"default": "failed", "fail": "failed", "resume": "resumed", "goto": "goto"}[path]
    assert audit == [("node:ask", "request", "pending"), ("system:expiry", "expire", outcome)]
    ran = executions(side)
    assert ran[("claim", "ask")] == (2 if path == "resume" else 1)
    assert ran[("claim", "fallback")] == (1 if path == "goto" else 0)
    with pytest.raises((ApprovalRefused, ResumeError)):  # too late: nothing to decide
        client.resume("claim", {"approved": True}, actor=FINANCE)


def test_a_decision_before_the_expiry_wins(url: str) -> None:
    app = _approval(url, OnExpire.fail("late"), 3600)
    client = Wayline(app.store)
    serving = Serving(app.store, app)
    try:
        client.start(app, {}, run_id="quick")
        wait_until(lambda: client.get("quick").status == "interrupted", "the question")
        (question,) = client.pending("quick")
        client.resume("quick", {"approved": True}, actor=FINANCE, digest=question.digest)
        run = _settled(client, "quick")
    finally:
        serving.stop()
    assert run.status == "done" and run.wake_at is None
    assert [a.action for a in client.audit("quick")] == ["request", "decide"]


def test_on_expire_needs_an_expiry(url: str) -> None:
    app = _approval(url, None, 1)

    def ask(state: Any) -> Any:
        return {"decision": wayline.interrupt(1, on_expire=OnExpire.fail())}

    g = wayline.StateGraph(wakeup_graphs.Nap, name="bad")
    g.add_node("ask", ask)
    g.add_edge(wayline.START, "ask")
    bad = g.compile(app.store)
    with pytest.raises(wayline.WaylineError, match="needs expires_in"):
        bad.invoke({}, {"configurable": {"thread_id": "bad"}})


def test_the_functional_api_sleeps_durably(url: str) -> None:
    calls: list[str] = []

    @wayline.entrypoint(checkpointer=wayline.connect(url))
    def flow(n: int) -> int:
        calls.append("body")
        wayline.sleep(0.2)
        return n + 1

    config = {"configurable": {"thread_id": "fn"}}
    assert flow.invoke(1, config) == 2
    assert calls == ["body", "body"]  # asleep once, woken once
    with pytest.raises(wayline.WaylineError, match="seconds"):
        wayline.sleep(-1)


def _make_due(store: Any, schedule_id: str, after: float = 0.0) -> None:
    """Bring a schedule's next tick to now, or ``after`` seconds from now (a daily cron's
    is hours away). A tick's run id is its time to the second: two ticks made due within
    one second would be one tick."""
    ph = store.placeholder
    with store._tx("default") as db:
        db.execute(
            f"UPDATE schedules SET next_at = {ph} WHERE tenant_id = {ph} AND schedule_id = {ph}",
            (time.time() + after, "default", schedule_id),
        )


def test_a_schedule_fires_once_per_tick_across_a_worker_killed_mid_fire(
    url: str, side: Path, procs: list[Any]
) -> None:
    store = wayline.connect(url)
    client = Wayline(store)
    app = wakeup_graphs.build_sleeper().compile(store)
    workers = [spawn(procs, url, side, "a"), spawn(procs, url, side, "b")]
    sched = client.schedule(app, {"seconds": 0}, cron="0 9 * * *", schedule_id="daily")
    (side / "block-fire").write_text("")
    _make_due(store, "daily")
    firing = wait_until(lambda: list(side.glob("firing-*")), "a worker to start the fire")
    pid = int(firing[0].name.split("-")[1])
    (victim,) = [w for w in workers if w.pid == pid]
    victim.send_signal(signal.SIGKILL)  # inside the fire's transaction
    victim.wait()
    fired = wait_until(
        lambda: (s := client.schedules()[0]).fires == 1 and s, "the other worker to fire"
    )
    tick_run = fired.last_run_id
    assert tick_run == sched.run_for(float(firing[0].read_text().split()[1]))
    assert client.wait(tick_run, timeout=30).status == "done"
    _make_due(store, "daily", after=1.1)  # a second tick, one second on: its own id
    second = wait_until(lambda: (s := client.schedules()[0]).fires == 2 and s, "a second fire")
    assert second.last_run_id != tick_run
    assert client.wait(second.last_run_id, timeout=30).status == "done"
    # One run per tick, each run once: its nodes ran once each.
    ran = executions(side)
    assert ran == {
        (tick_run, "nap"): 1,
        (tick_run, "after"): 1,
        (second.last_run_id, "nap"): 1,
        (second.last_run_id, "after"): 1,
    }
    runs = [r.run_id for r in client.list_runs()]
    assert sorted(runs) == sorted([tick_run, second.last_run_id])
    store.close()
