"""``multitask_strategy`` on a busy thread through ``langgraph-sdk``, on SQLite and
PostgreSQL: ``reject`` (the default) is 409; ``interrupt`` stops the running run at its
next step boundary (its API run ``interrupted``, its finished steps kept) and the new run
continues the thread; ``enqueue`` records the new run ``pending`` and starts it when the
runs before it have ended, in order, its stream starting when it starts; ``rollback``
cancels the running run, removes its steps and its record (audited), keeps its effects in
the ledger and starts the new run from the state before it, its effects under new keys."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from harness import Running, as_dict, start, until, worker_process
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient
from pg import schema_url

from wayline.demo.payment_flow import find_charge
from wayline.demo.payments import PaymentsService


def client(server: Running) -> SyncLangGraphClient:
    return get_sync_client(url=server.url, api_key=server.keys["alice"], timeout=60.0)


def _busy(c: SyncLangGraphClient, ticks: int = 400) -> tuple[str, dict[str, Any]]:
    tid = c.threads.create()["thread_id"]
    first = c.runs.create(tid, "slow", input={"n": 0, "until": ticks})
    until(lambda: c.runs.get(tid, first["run_id"])["status"] == "running", what="running")
    until(lambda: _n(c, tid) >= 2, what="two ticks")
    return tid, dict(first)


def _n(c: SyncLangGraphClient, tid: str) -> int:
    values = c.threads.get_state(tid)["values"]
    return int(values.get("n", 0)) if isinstance(values, dict) else 0


def test_reject_is_the_default(server: Running) -> None:
    c = client(server)
    tid, first = _busy(c)
    with pytest.raises(httpx.HTTPStatusError) as busy:
        c.runs.create(tid, "slow", input={"n": 0, "until": 1})
    assert busy.value.response.status_code == 409
    with pytest.raises(httpx.HTTPStatusError) as also:
        c.runs.create(tid, "slow", input={"until": 1}, multitask_strategy="reject")
    assert also.value.response.status_code == 409
    c.runs.cancel(tid, first["run_id"], wait=True)


def test_interrupt_stops_the_running_run_and_continues_the_thread(server: Running) -> None:
    c = client(server)
    tid, first = _busy(c)
    second = c.runs.create(tid, "slow", input={"until": 0}, multitask_strategy="interrupt")
    assert second["multitask_strategy"] == "interrupt"
    out = as_dict(c.runs.join(tid, second["run_id"]))
    assert c.runs.get(tid, first["run_id"])["status"] == "interrupted"
    assert c.runs.get(tid, second["run_id"])["status"] == "success"
    ticks = out["items"]
    assert len(ticks) >= 3 and ticks == [f"t{i}" for i in range(len(ticks))]
    assert out["n"] == len(ticks) < 400  # the first run's steps kept, then one more tick


def test_an_unknown_strategy_is_422(server: Running) -> None:
    c = client(server)
    tid = c.threads.create()["thread_id"]
    with pytest.raises(httpx.HTTPStatusError) as refused:
        c.runs.create(tid, "slow", input={"until": 1}, multitask_strategy="sideways")  # type: ignore[call-overload]
    assert refused.value.response.status_code == 422


def test_enqueued_runs_wait_then_run_in_order(server: Running) -> None:
    c = client(server)
    tid, first = _busy(c, ticks=30)
    second = c.runs.create(tid, "slow", input={"until": 34}, multitask_strategy="enqueue")
    third = c.runs.create(tid, "slow", input={"until": 37}, multitask_strategy="enqueue")
    assert second["status"] == "pending" and second["multitask_strategy"] == "enqueue"
    assert c.runs.get(tid, third["run_id"])["status"] == "pending"
    assert c.runs.get(tid, first["run_id"])["status"] == "running"
    with pytest.raises(httpx.HTTPStatusError) as busy:  # reject still refuses while any wait
        c.runs.create(tid, "slow", input={"until": 1})
    assert busy.value.response.status_code == 409

    # the third run's stream opens now and sends nothing until its turn, then its own steps
    seen = [
        as_dict(part.data)["n"]
        for part in c.runs.join_stream(tid, third["run_id"], stream_mode="values")
        if part.event == "values"
    ]
    assert seen[0] == 34 and seen[-1] == 37 and seen == sorted(seen)

    out = as_dict(c.runs.join(tid, third["run_id"]))
    assert out["n"] == 37 and out["items"] == [f"t{i}" for i in range(37)]
    assert as_dict(c.runs.join(tid, first["run_id"]))["n"] == 30  # what each one left
    assert as_dict(c.runs.join(tid, second["run_id"]))["n"] == 34
    for run in (first, second, third):
        assert c.runs.get(tid, run["run_id"])["status"] == "success"
    first_steps = [
        as_dict(part.data)["n"]
        for part in c.runs.join_stream(tid, first["run_id"], stream_mode="values")
        if part.event == "values"
    ]
    assert first_steps[-1] == 30  # its stream ends where the second run took over


def test_a_queued_run_streamed_from_its_creation_sends_its_own_steps(server: Running) -> None:
    c = client(server)
    tid, first = _busy(c, ticks=20)
    parts = list(
        c.runs.stream(
            tid, "slow", input={"until": 23}, stream_mode="values", multitask_strategy="enqueue"
        )
    )
    assert parts[0].event == "metadata"
    seen = [as_dict(p.data)["n"] for p in parts if p.event == "values"]
    assert seen == [20, 21, 22, 23]  # from where the first run ended: none of its steps
    assert c.runs.get(tid, first["run_id"])["status"] == "success"


def test_enqueue_on_langgraph_s_engine_and_rollback_refused(server: Running) -> None:
    """A LangGraph graph on wayline's workers takes queued input the same way; a rollback
    is refused (wayline does not roll its checkpoints back) and the running run goes on."""
    c = client(server)
    tid = c.threads.create()["thread_id"]
    first = c.runs.create(tid, "lg_slow", input={"n": 0, "until": 20})
    until(lambda: _n(c, tid) >= 2, what="two ticks")
    with pytest.raises(httpx.HTTPStatusError) as refused:
        c.runs.create(tid, "lg_slow", input={"until": 1}, multitask_strategy="rollback")
    assert refused.value.response.status_code == 409
    assert "engine" in refused.value.response.text
    second = c.runs.create(tid, "lg_slow", input={"until": 23}, multitask_strategy="enqueue")
    assert second["status"] == "pending"
    out = as_dict(c.runs.join(tid, second["run_id"]))
    assert out["n"] == 23 and out["items"] == [f"t{i}" for i in range(23)]
    assert c.runs.get(tid, first["run_id"])["status"] == "success"
    assert c.runs.get(tid, second["run_id"])["status"] == "success"


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_queued_run_starts_after_the_worker_of_the_run_before_it_was_killed(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Nothing in the server starts a queued run: the claim query of whichever worker is
    left moves its input into the thread once the run before it ends."""
    if backend == "sqlite":
        url = f"sqlite:///{tmp_path / 'kill.db'}"
    else:
        url = schema_url(request.getfixturevalue("pg_base_url"))
    running = start(url, workers=0)
    first = worker_process(url, "slow")
    second = None
    try:
        c = client(running)
        tid, run1 = _busy(c, ticks=20)
        run2 = c.runs.create(tid, "slow", input={"until": 24}, multitask_strategy="enqueue")
        first.send_signal(signal.SIGKILL)
        first.wait(10)
        assert c.runs.get(tid, run2["run_id"])["status"] == "pending"
        second = worker_process(url, "slow")
        out = as_dict(c.runs.join(tid, run2["run_id"]))
        assert out["n"] == 24 and out["items"] == [f"t{i}" for i in range(24)]
        deltas = running.store.load_deltas("acme", tid, -1, 24)
        assert len({d.fencing_token for d in deltas}) >= 2  # taken over, then the queue
        assert c.runs.get(tid, run1["run_id"])["status"] == "success"
        assert c.runs.get(tid, run2["run_id"])["status"] == "success"
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait(10)
        running.stop()


def test_a_queued_run_cancelled_leaves_the_queue(server: Running) -> None:
    c = client(server)
    tid, first = _busy(c, ticks=30)
    second = c.runs.create(tid, "slow", input={"until": 33}, multitask_strategy="enqueue")
    third = c.runs.create(tid, "slow", input={"until": 35}, multitask_strategy="enqueue")
    with pytest.raises(httpx.HTTPStatusError) as queued:  # the queue would go first
        c.runs.create(tid, "slow", input={"until": 1}, multitask_strategy="rollback")
    assert queued.value.response.status_code == 409
    c.runs.cancel(tid, second["run_id"])
    assert c.runs.get(tid, second["run_id"])["status"] == "interrupted"
    out = as_dict(c.runs.join(tid, third["run_id"]))
    assert out["n"] == 35 and out["items"] == [f"t{i}" for i in range(35)]
    assert c.runs.get(tid, first["run_id"])["status"] == "success"
    assert c.runs.get(tid, third["run_id"])["status"] == "success"


@pytest.fixture
def payments(tmp_path: Path) -> Iterator[PaymentsService]:
    with PaymentsService(tmp_path / "ledger.db") as service:
        yield service


def test_rollback_removes_the_running_run_and_starts_from_before_it(
    server: Running, payments: PaymentsService
) -> None:
    """The rolled-back run's record 404s and its steps are gone; the new run starts from
    the state before it; the audit log says so; its charge happened once and stays in the
    ledger, and the new run's charge at the same step goes out under a new key."""
    c = client(server)
    tid = c.threads.create()["thread_id"]
    pay: dict[str, Any] = {"url": payments.url, "amount": 5}
    c.runs.wait(tid, "slow_pay", input={**pay, "n": 0, "until": 2})
    doomed = c.runs.create(tid, "slow_pay", input={**pay, "amount": 7, "until": 400})
    until(lambda: _n(c, tid) >= 4, what="the doomed run charged and ticked")
    new = c.runs.create(
        tid, "slow_pay", input={**pay, "amount": 7, "until": 4}, multitask_strategy="rollback"
    )
    out = as_dict(c.runs.join(tid, new["run_id"]))
    with pytest.raises(httpx.HTTPStatusError) as gone:
        c.runs.get(tid, doomed["run_id"])
    assert gone.value.response.status_code == 404
    assert [r["run_id"] for r in c.runs.list(tid)][:1] == [new["run_id"]]
    assert doomed["run_id"] not in {r["run_id"] for r in c.runs.list(tid)}
    assert c.runs.get(tid, new["run_id"])["status"] == "success"
    # as if the doomed run never ran: the first run's two ticks, then the new run's two
    assert out["n"] == 4 and out["items"] == ["t0", "t1", "t2", "t3"]
    assert len(out["receipts"]) == 2
    history = c.threads.get_history(tid, limit=100)
    assert max(int(as_dict(h["values"]).get("n", 0)) for h in history) == 4

    (entry,) = [a for a in server.store.load_audit("acme", tid) if a.action == "rollback"]
    detail = json.loads(entry.detail)
    assert entry.actor == "alice" and doomed["run_id"] in detail["reason"]
    first, last = detail["steps_removed"]
    assert first == 4 and last >= 5  # the doomed run's input step on, all of them

    charges = [e for e in server.store.list_effects("acme", tid) if e.name == "charge"]
    assert [e.status for e in charges] == ["SUCCEEDED"] * 3  # the doomed run's stays
    assert len({e.key for e in charges}) == 3
    doomed_charge, new_charge = charges[1], charges[2]
    assert doomed_charge.step == new_charge.step  # the same step, run again: a new key
    amounts = [find_charge(payments.url, e.key) for e in charges]  # each key charged once
    assert [a["amount"] if a else None for a in amounts] == [5, 7, 7]
    stats = httpx.get(f"{payments.url}/stats").json()
    assert stats["charges"] == 3 and stats["deduplicated"] == 0


def test_rollback_of_a_thread_s_first_run_leaves_only_the_new_run(server: Running) -> None:
    c = client(server)
    tid, first = _busy(c)
    new = c.runs.create(tid, "slow", input={"n": 10, "until": 12}, multitask_strategy="rollback")
    out = as_dict(c.runs.join(tid, new["run_id"]))
    assert out["items"] == ["t10", "t11"] and out["n"] == 12  # nothing of the first run
    assert [r["run_id"] for r in c.runs.list(tid)] == [new["run_id"]]
    with pytest.raises(httpx.HTTPStatusError) as gone:
        c.runs.join(tid, first["run_id"])
    assert gone.value.response.status_code == 404


def test_a_stream_after_a_rollback_is_the_new_run_s_alone(server: Running) -> None:
    """The removed run's recorded stream (its attempt mark, what its nodes emitted) goes
    with its steps: the new run's stream is its first attempt, from the state before."""
    c = client(server)
    tid = c.threads.create()["thread_id"]
    modes: Any = ["values", "custom"]
    c.runs.create(tid, "slow", input={"n": 0, "until": 400}, stream_mode=modes)
    until(lambda: _n(c, tid) >= 2, what="two ticks")
    parts = list(
        c.runs.stream(
            tid,
            "slow",
            input={"n": 0, "until": 3},
            stream_mode=modes,
            multitask_strategy="rollback",
        )
    )
    assert [p.event for p in parts].count("metadata") == 1
    assert [as_dict(p.data)["n"] for p in parts if p.event == "values"] == [0, 1, 2, 3]
