"""LlamaIndex Workflows on wayline (``wayline.llamaindex``), on SQLite and PostgreSQL: a fresh
process resumes without re-running completed steps; a human-input wait releases the run and
is resumed by an authorized decision; a zombie worker is fenced; an effect in a retried step
returns its recorded result; a worker claims a queued run."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("workflows", reason="needs the wayline[llamaindex] extra")

from workflows import Context, Workflow, step
from workflows.context.serializers import PickleSerializer
from workflows.events import (
    HumanResponseEvent,
    InputRequiredEvent,
    StartEvent,
    StopEvent,
)
from workflows.retry_policy import retry_policy, stop_after_attempt, wait_fixed

from wayline import Actor, Wayline, open_store
from wayline.errors import ApprovalRefused, ConfigError, LeaseLost
from wayline.llamaindex import LlamaIndexWorker, WaylineRuntime, effect

CHILD = Path(__file__).resolve().parent / "li_steps_child.py"
TIMEOUT_S = 60.0
MANAGER = Actor(id="maria", roles=("manager",))
INTERN = Actor(id="ivan", roles=("intern",))


def _child(url: str, log: Path, *extra: str) -> subprocess.CompletedProcess[bytes]:
    argv = [sys.executable, str(CHILD), "--url", url, "--log", str(log), *extra]
    return subprocess.run(argv, capture_output=True, timeout=TIMEOUT_S, check=False)


def test_a_fresh_process_resumes_without_rerunning_completed_steps(
    url: str, tmp_path: Path
) -> None:
    log = tmp_path / "steps.log"
    killed = _child(url, log, "--kill-in", "double")
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()[-2000:]
    assert log.read_text().split() == ["count", "double"]
    out = tmp_path / "out.json"
    resumed = _child(url, log, "--out", str(out))
    assert resumed.returncode == 0, resumed.stderr.decode()[-2000:]
    # count completed before the kill: not run again; double was mid-step: runs again.
    assert log.read_text().split() == ["count", "double", "double", "finish"]
    # the state store written by count came back in the fresh process
    assert json.loads(out.read_text()) == {"status": "done", "result": {"n": 42, "seen": "count"}}
    store = open_store(url)
    try:
        run = store.get_run("default", "steps-1")
        assert run is not None and run.status == "done" and run.lease_owner is None
        steps = [d.step for d in store.load_deltas("default", "steps-1", -1, run.step)]
        assert steps == list(range(run.step + 1))  # one committed row per tick, no gap
    finally:
        store.close()


class Calls:
    def __init__(self) -> None:
        self.keys: list[str] = []

    def __call__(self, key: str) -> dict[str, Any]:
        self.keys.append(key)
        return {"paid": True, "key": key}


def approval_workflow(rt: WaylineRuntime, calls: Calls) -> Workflow:
    class Refund(Workflow):
        @step
        async def ask(self, ctx: Context, ev: StartEvent) -> StopEvent:
            answer = await ctx.wait_for_event(
                HumanResponseEvent,
                waiter_event=InputRequiredEvent(prefix=f"refund {ev.amount}?"),  # type: ignore[call-arg]
            )
            if answer.response != "yes":
                return StopEvent(result={"refunded": False})
            paid = effect(ctx, "refund", calls, request={"amount": ev.amount})
            return StopEvent(result={"refunded": True, "key": paid["key"]})

    return Refund(runtime=rt, timeout=60)


def test_a_human_input_wait_is_resumed_by_an_authorized_actor(url: str) -> None:
    calls = Calls()
    rt = WaylineRuntime(url, approvers=("manager",))
    first = asyncio.run(rt.run(approval_workflow(rt, calls), "refund-1", amount=30))
    assert first.status == "interrupted" and calls.keys == []
    [asked] = first.waiting
    assert asked["step"] == "ask" and asked["prompt"] == {"prefix": "refund 30?"}

    client = Wayline(url)
    run = client.get("refund-1")
    assert run.status == "interrupted" and run.lease_owner is None  # no worker held
    [pending] = client.pending("refund-1")
    assert pending.approvers == ("manager",)
    with pytest.raises(ApprovalRefused, match="may not decide"):
        client.resume("refund-1", "yes", actor=INTERN, digest=pending.digest)

    fresh = WaylineRuntime(url, approvers=("manager",))  # another process, as far as it knows
    still = asyncio.run(fresh.run(approval_workflow(fresh, calls), "refund-1"))
    assert still.status == "interrupted" and calls.keys == []  # a refusal changed nothing

    client.resume("refund-1", "yes", actor=MANAGER, digest=pending.digest)
    done = asyncio.run(fresh.run(approval_workflow(fresh, calls), "refund-1"))
    assert done.status == "done" and done.result["refunded"] is True
    assert calls.keys == [done.result["key"]]
    outcomes = [(a.actor, a.outcome) for a in client.audit("refund-1") if a.action == "decide"]
    assert outcomes == [("ivan", "refused"), ("maria", "accepted")]
    assert client.get("refund-1").status == "done"
    again = asyncio.run(fresh.run(approval_workflow(fresh, calls), "refund-1"))
    assert again.result == done.result and len(calls.keys) == 1  # the answer is not redelivered


def test_a_zombie_worker_is_fenced(url: str) -> None:
    calls = Calls()

    async def scenario() -> None:
        gate = asyncio.Event()
        entered = asyncio.Event()
        rt = WaylineRuntime(url, lease_seconds=60.0)

        class Slow(Workflow):
            @step
            async def pay(self, ctx: Context, ev: StartEvent) -> StopEvent:
                entered.set()
                await gate.wait()
                return StopEvent(result=effect(ctx, "pay", calls))

        run = asyncio.create_task(rt.run(Slow(runtime=rt, timeout=60), "zombie-1"))
        await asyncio.wait_for(entered.wait(), TIMEOUT_S)
        other = open_store(url)
        try:
            before = other.get_run("default", "zombie-1")
            assert before is not None
            other.claim("default", "zombie-1", owner="the-new-worker", lease_seconds=60, steal=True)
            gate.set()
            with pytest.raises(LeaseLost):
                await asyncio.wait_for(run, TIMEOUT_S)
            after = other.get_run("default", "zombie-1")
            assert after is not None and after.step == before.step  # nothing more committed
            assert after.lease_owner == "the-new-worker"
            assert other.list_effects("default", "zombie-1") == []
        finally:
            other.close()

    asyncio.run(scenario())
    assert calls.keys == []  # the zombie never dispatched the effect


def test_an_effect_in_a_retried_step_returns_its_recorded_result(url: str) -> None:
    calls = Calls()
    attempts: list[int] = []
    rt = WaylineRuntime(url)

    class Flaky(Workflow):
        @step(retry_policy=retry_policy(wait=wait_fixed(0), stop=stop_after_attempt(3)))
        async def pay(self, ctx: Context, ev: StartEvent) -> StopEvent:
            paid = effect(ctx, "pay", calls, request={"amount": 5})
            attempts.append(len(attempts))
            if len(attempts) == 1:
                raise ConnectionError("the step failed after the payment went through")
            return StopEvent(result=paid)

    out = asyncio.run(rt.run(Flaky(runtime=rt, timeout=60), "flaky-1"))
    assert out.status == "done" and attempts == [0, 1]
    assert calls.keys == [out.result["key"]]  # one dispatch; the retry got the record
    [rec] = rt.store.list_effects("default", "flaky-1")
    assert (rec.status, rec.attempt) == ("SUCCEEDED", 1)


def test_a_worker_claims_a_queued_run(url: str) -> None:
    rt = WaylineRuntime(url)

    class Echo(Workflow):
        @step
        async def echo(self, ev: StartEvent) -> StopEvent:
            return StopEvent(result={"echo": ev.get("text")})

    wf = Echo(runtime=rt, timeout=60)
    rt.enqueue(wf, "queued-1", text="hi")
    assert rt.store.get_run("default", "queued-1").status == "pending"  # type: ignore[union-attr]
    worker = LlamaIndexWorker(rt, [wf])
    out = asyncio.run(worker.run_once())
    assert out is not None and out.result == {"echo": "hi"}
    assert asyncio.run(worker.run_once()) is None  # nothing left to claim
    run = rt.store.get_run("default", "queued-1")
    assert run is not None and run.status == "done" and run.inbox is None


def test_a_pickle_serializer_is_refused_before_anything_runs(tmp_path: Path) -> None:
    rt = WaylineRuntime(f"sqlite:///{tmp_path / 'p.db'}")

    class Echo(Workflow):
        @step
        async def echo(self, ev: StartEvent) -> StopEvent:
            return StopEvent(result=1)

    wf = Echo(runtime=rt, serializer=PickleSerializer())
    with pytest.raises(ConfigError, match=r"run 'pickled-1'.*PickleSerializer"):
        asyncio.run(rt.run(wf, "pickled-1"))
    assert rt.store.get_run("default", "pickled-1") is None
