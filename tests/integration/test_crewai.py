"""CrewAI Flows on wayline (``wayline.crewai``), on SQLite and PostgreSQL: a fresh process
resumes a flow killed after its charge without re-running completed methods or the charge;
a ledgered tool retried after a failure returns its recorded result; a zombie is fenced;
workers claim queued flows, only their own, and take over a killed worker's; a
``@human_feedback`` pause is an approval decided through ``Wayline.resume``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")
pytest.importorskip("crewai", reason="needs the wayline[crewai] extra")

from crewai.flow.async_feedback import HumanFeedbackPending
from crewai.flow.flow import Flow, listen, start
from crewai.flow.human_feedback import human_feedback
from crewai.flow.persistence import persist
from crewai.tools import BaseTool
from pydantic import BaseModel

from wayline import Actor, Wayline
from wayline.crewai import (
    AwaitDecision,
    CrewAIWorker,
    FlowOutcome,
    WaylineFlowPersistence,
    enqueue_flow,
    kickoff_on_wayline,
    ledgered,
)
from wayline.crewai import payment_flow as crew_payment
from wayline.demo.payments import PaymentsService
from wayline.errors import ApprovalRefused, ConfigError, LeaseLost, VersionMismatchError

TIMEOUT_S = 120.0


def _child(tmp: Path, url: str, service: str, *extra: str) -> int:
    argv = [sys.executable, "-m", "wayline.crewai.payment_flow", "--arm", "wayline",
            "--dir", str(tmp), "--service", service, "--url", url, *extra]  # fmt: skip
    with open(tmp / "child.stderr", "ab") as err:
        return subprocess.run(
            argv, stdout=subprocess.DEVNULL, stderr=err, timeout=TIMEOUT_S, check=False
        ).returncode


def test_a_fresh_process_resumes_a_killed_flow_without_rerunning_methods(
    url: str, tmp_path: Path
) -> None:
    """The child runs the flow and is SIGKILLed after the provider committed the charge; this
    process, which never ran it, resumes it with only the store URL."""
    with PaymentsService(tmp_path / "ledger.db") as svc:
        marker = str(tmp_path / "marker.jsonl")
        rc = _child(tmp_path, url, svc.url, "--point", "provider_committed", "--marker", marker)
        assert rc == -signal.SIGKILL, (tmp_path / "child.stderr").read_text()[-2000:]
        assert svc.ledger.stats()["charges"] == 1  # charged, then killed before the record
        p = WaylineFlowPersistence(url, steal=True)  # the child is dead: take its lease
        try:
            assert p.completed_methods("order-7") == ["prepare"]
            ran: list[str] = []
            flow = crew_payment.build("wayline", svc.url, ran.append, p)
            assert kickoff_on_wayline(flow, "order-7") == "order-7 paid by " + flow.state.charge_id
            # prepare completed before the kill and did not run again; charge did
            assert "before_charge" in ran
            assert p.completed_methods("order-7") == ["prepare", "charge", "finalize"]
            stats = svc.ledger.stats()
            assert (stats["charges"], stats["deduplicated"]) == (1, 1)  # resent under its key
            run = p.store.get_run("default", "order-7")
            assert run is not None and run.status == "done" and run.lease_owner is None
            [rec] = p.store.list_effects("default", "order-7")
            assert (rec.status, rec.attempt) == ("SUCCEEDED", 2)
        finally:
            p.close()


class Charges:
    def __init__(self) -> None:
        self.keys: list[str | None] = []
        self.fail_next = 0

    def __call__(self, amount: int, key: str | None) -> dict[str, Any]:
        self.keys.append(key)
        if self.fail_next:
            self.fail_next -= 1
            raise ConnectionError("the card network timed out")
        return {"charge": f"ch_{len(self.keys)}", "amount": amount}


class PayState(BaseModel):
    id: str = ""
    charge: str = ""
    done: bool = False


def payment_flow(p: WaylineFlowPersistence, charges: Charges, fail_after: list[bool]) -> Any:
    class ChargeTool(BaseTool):
        name: str = "charge_card"
        description: str = "Charge a card."

        def _run(self, amount: int, key: str | None = None) -> dict[str, Any]:
            return charges(amount, key)

    @persist(p)
    class Pay(Flow[PayState]):
        @start()
        def charge(self) -> None:
            tool = ledgered(ChargeTool(), self, pass_key="key")
            try:
                result = tool.run(amount=7)
            except ConnectionError:  # CrewAI's tool retry path: the agent calls it again
                result = tool.run(amount=7)
            self.state.charge = result["charge"]
            if fail_after and fail_after.pop():
                raise RuntimeError("the method failed after the charge")

        @listen(charge)
        def finish(self) -> None:
            self.state.done = True

    return Pay()


def test_a_tool_retried_after_a_failure_returns_its_recorded_result(url: str) -> None:
    charges = Charges()
    charges.fail_next = 1  # the first call fails outright; CrewAI calls the tool again
    p = WaylineFlowPersistence(url)
    try:
        with pytest.raises(RuntimeError, match="after the charge"):
            kickoff_on_wayline(payment_flow(p, charges, [True]), "pay-1")
        assert len(charges.keys) == 2 and charges.keys[0] == charges.keys[1]  # same key
        assert p.store.get_run("default", "pay-1").status == "failed"  # type: ignore[union-attr]
        flow = payment_flow(p, charges, [])
        kickoff_on_wayline(flow, "pay-1")  # the method runs again; its tool call does not
        assert len(charges.keys) == 2
        assert flow.state.charge == "ch_2" and flow.state.done is True
        [rec] = p.store.list_effects("default", "pay-1")
        assert (rec.status, rec.attempt, rec.key) == ("SUCCEEDED", 2, charges.keys[0])
        assert p.completed_methods("pay-1") == ["charge", "finish"]
    finally:
        p.close()


def test_a_zombie_flow_is_fenced(url: str) -> None:
    charges = Charges()
    zombie = WaylineFlowPersistence(url, lease_seconds=60.0)
    other = WaylineFlowPersistence(url, lease_seconds=60.0, steal=True)
    try:
        flow = payment_flow(zombie, charges, [])
        flow.state.id = "pay-2"
        zombie.save_state("pay-2", "charge", {"id": "pay-2", "charge": "", "done": False})
        other.hold("pay-2")  # another process takes the flow over
        with pytest.raises(LeaseLost):
            zombie.save_state("pay-2", "finish", {"id": "pay-2", "charge": "", "done": True})
        from crewai.flow.flow_context import current_flow_method_name

        class Noop(BaseTool):
            name: str = "noop"
            description: str = "n"

            def _run(self) -> str:
                charges(0, None)
                return "ran"

        token = current_flow_method_name.set("finish")
        try:
            with pytest.raises(LeaseLost):
                ledgered(Noop(), flow, persistence=zombie).run()
        finally:
            current_flow_method_name.reset(token)
        assert charges.keys == []  # the zombie's tool never ran
        assert zombie.completed_methods("pay-2") == ["charge"]
        assert zombie.store.list_effects("default", "pay-2") == []
    finally:
        zombie.close()
        other.close()


class Counted(BaseModel):
    id: str = ""
    word: str = ""
    seen: list[str] = []


def counting_flow(ran: list[str]) -> Any:
    @persist(WaylineFlowPersistence("sqlite:///:memory:"))  # the worker's backend replaces it
    class Greet(Flow[Counted]):
        @start()
        def hello(self) -> None:
            ran.append("hello")
            self.state.seen.append(f"hello {self.state.word}")

        @listen(hello)
        def bye(self) -> str:
            ran.append("bye")
            return f"{self.state.seen[-1]}, bye"

    return Greet


def test_a_worker_claims_a_queued_flow(url: str) -> None:
    ran: list[str] = []
    p = WaylineFlowPersistence(url)
    try:
        Greet = counting_flow(ran)
        run = enqueue_flow(p, Greet, "greet-1", {"word": "crew"})
        assert (run.status, run.engine) == ("pending", "crewai")
        assert ran == []  # enqueuing ran nothing
        worker = CrewAIWorker(p, [Greet])
        out = worker.run_once()
        assert out == FlowOutcome("greet-1", "done", result="hello crew, bye")
        assert worker.run_once() is None  # nothing left to claim
        rec = p.store.get_run("default", "greet-1")
        assert rec is not None and (rec.status, rec.inbox, rec.lease_owner) == ("done", None, None)
        assert p.completed_methods("greet-1") == ["hello", "bye"] and ran == ["hello", "bye"]
    finally:
        p.close()


def test_a_run_continues_only_on_the_flow_it_was_queued_for(url: str) -> None:
    p = WaylineFlowPersistence(url)
    try:
        enqueue_flow(p, counting_flow([]), "greet-2", {"word": "a"})

        @persist(p)
        class Other(Flow[Counted]):
            @start()
            def only(self) -> None:
                self.state.word = "other"

        assert CrewAIWorker(p, [Other]).run_once() is None  # not its run: never claimed
        with pytest.raises(VersionMismatchError, match=r"flow run 'greet-2'.*'Greet'"):
            kickoff_on_wayline(Other(), "greet-2")
        rec = p.store.get_run("default", "greet-2")
        assert rec is not None and rec.status == "pending" and rec.inbox is not None
    finally:
        p.close()


def test_a_worker_refuses_a_flow_that_does_not_persist(tmp_path: Path) -> None:
    class Plain(Flow[Counted]):
        @start()
        def only(self) -> None: ...

    p = WaylineFlowPersistence(f"sqlite:///{tmp_path / 'plain.db'}")
    try:
        with pytest.raises(ConfigError, match=r"'Plain'.*@persist"):
            CrewAIWorker(p, [Plain])
    finally:
        p.close()


def test_a_killed_workers_flow_is_taken_over_after_its_lease(url: str, tmp_path: Path) -> None:
    """A worker process claims the queued flow and is SIGKILLed after the provider committed
    the charge; this process's worker claims it once the dead worker's lease expires and
    finishes it: prepare does not run again, the charge is resent under its key once."""
    with PaymentsService(tmp_path / "ledger.db") as svc:
        p = WaylineFlowPersistence(url, lease_seconds=2.0)
        try:
            ran: list[str] = []
            make = crew_payment.factory(svc.url, ran.append)
            enqueue_flow(p, make, crew_payment.RUN_ID)
            marker = str(tmp_path / "marker.jsonl")
            rc = _child(tmp_path, url, svc.url, "--worker", "--point", "provider_committed",
                        "--marker", marker)  # fmt: skip
            assert rc == -signal.SIGKILL, (tmp_path / "child.stderr").read_text()[-2000:]
            assert svc.ledger.stats()["charges"] == 1
            assert p.completed_methods(crew_payment.RUN_ID) == ["prepare"]
            worker = CrewAIWorker(p, [make])
            deadline = time.monotonic() + 30.0
            out = worker.run_once()  # the dead worker's lease has not expired yet, or has
            while out is None and time.monotonic() < deadline:
                p.store.wait_for_work(0.2)
                out = worker.run_once()
            assert out is not None and out.status == "done", out
            assert out.result.startswith(f"{crew_payment.RUN_ID} paid by ")
            assert p.completed_methods(crew_payment.RUN_ID) == ["prepare", "charge", "finalize"]
            stats = svc.ledger.stats()
            assert (stats["charges"], stats["deduplicated"]) == (1, 1)
            run = p.store.get_run("default", crew_payment.RUN_ID)
            assert run is not None and run.status == "done" and run.fencing_token >= 2
        finally:
            p.close()


MANAGER = Actor(id="maria", roles=("manager",))
INTERN = Actor(id="ivan", roles=("intern",))


class Draft(BaseModel):
    id: str = ""
    title: str = ""
    published: str = ""


def review_flow(ran: list[str]) -> Any:
    @persist(WaylineFlowPersistence("sqlite:///:memory:"))  # the worker's backend replaces it
    class Review(Flow[Draft]):
        @start()
        def draft(self) -> None:
            ran.append("draft")

        @listen(draft)
        @human_feedback(message="ship it?", provider=AwaitDecision())
        def review(self) -> dict[str, str]:
            ran.append("review")
            return {"title": self.state.title}

        @listen(review)
        def publish(self, result: Any) -> str:
            ran.append("publish")
            published = f"{self.state.title}: {result.feedback}"
            self.state.published = published
            return published

    return Review


def test_a_feedback_pause_is_decided_by_an_approver_and_resumed_by_a_worker(url: str) -> None:
    ran: list[str] = []
    Review = review_flow(ran)
    p = WaylineFlowPersistence(url, approvers=("manager",))
    try:
        enqueue_flow(p, Review, "rev-1", {"title": "launch post"})
        first = CrewAIWorker(p, [Review]).run_once()
        assert first is not None and first.status == "interrupted" and ran == ["draft", "review"]
        client = Wayline(url)
        run = client.get("rev-1")
        assert (run.status, run.lease_owner, run.inbox) == ("interrupted", None, None)
        [pending] = client.pending("rev-1")
        assert pending.value["message"] == "ship it?"
        assert pending.value["output"] == {"title": "launch post"}
        assert pending.approvers == ("manager",)
        assert CrewAIWorker(p, [Review]).run_once() is None  # nothing to run while it waits
        assert isinstance(
            kickoff_on_wayline(Review(), "rev-1", persistence=p), HumanFeedbackPending
        )
        with pytest.raises(ApprovalRefused, match="may not decide"):
            client.resume("rev-1", "ship", actor=INTERN, digest=pending.digest)
        assert ran == ["draft", "review"]  # neither a refusal nor a second look ran anything

        client.resume("rev-1", "ship", actor=MANAGER, digest=pending.digest)
        fresh = WaylineFlowPersistence(url, approvers=("manager",))  # another worker process
        try:
            done = CrewAIWorker(fresh, [Review]).run_once()
        finally:
            fresh.close()
        assert done == FlowOutcome("rev-1", "done", result="launch post: ship")
        assert ran == ["draft", "review", "publish"]  # draft and review did not run again
        assert p.completed_methods("rev-1") == ["draft", "review", "publish"]
        assert client.get("rev-1").status == "done" and client.pending("rev-1") == []
        audit = [(a.actor, a.action, a.outcome) for a in client.audit("rev-1")]
        assert ("method:review", "request", "pending") in audit
        decided = [(who, outcome) for who, action, outcome in audit if action == "decide"]
        assert decided == [("ivan", "refused"), ("maria", "accepted")]
    finally:
        p.close()
