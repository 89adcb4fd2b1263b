"""Approvals on SQLite and PostgreSQL: who may decide, on which proposal, until when; every
request and decision audited; a refusal changes nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from wayline.client import Wayline
from wayline.control import Actor
from wayline.errors import ApprovalRefused, ResumeError, RunNotFoundError
from wayline.examples.refund_agent import build_refund_agent, claim_input
from wayline.graph.types import Command

FINANCE = Actor(id="fatima", roles=("finance",), tenant="acme")
INTERN = Actor(id="ivan", roles=("support",), tenant="acme")
CFG = {"configurable": {"thread_id": "claim-9", "tenant": "acme"}}


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'approvals.db'}"
    return str(request.getfixturevalue("pg_url"))


class Refunds:
    def __init__(self) -> None:
        self.made: dict[str, dict[str, Any]] = {}

    def __call__(self, key: str, amount: int, customer: str) -> dict[str, Any]:
        self.made.setdefault(key, {"id": f"re_{len(self.made) + 1}", "amount": amount})
        return self.made[key]


def waiting(url: str, refunds: Refunds) -> tuple[Any, Wayline, Any]:
    app = build_refund_agent(url, refunds)
    out = app.invoke(claim_input(), CFG)
    (question,) = out["__interrupt__"]
    return app, Wayline(app.store, tenant="acme"), question


def test_an_authorized_decision_on_the_current_proposal_continues_the_run(url: str) -> None:
    refunds = Refunds()
    app, client, question = waiting(url, refunds)
    assert question.approvers == ("finance",) and question.digest
    (pending,) = client.pending("claim-9")
    assert pending.digest == question.digest and pending.value["refund"] == 4200
    client.resume("claim-9", {"approved": True}, actor=FINANCE, digest=question.digest)
    final = app.invoke(None, CFG)
    assert final["refund"] == {"id": "re_1", "amount": 4200}
    assert final["outbox"] == ["Refund of 4200 issued."]
    assert len(refunds.made) == 1
    log = [(a.actor, a.action, a.outcome) for a in client.audit("claim-9")]
    assert log == [("node:approve", "request", "pending"), ("fatima", "decide", "accepted")]


@pytest.mark.parametrize(
    ("actor", "digest", "reason"),
    [
        (INTERN, "current", "unauthorized"),
        (None, "current", "unauthorized"),
        (FINANCE, "0" * 64, "stale_digest"),
        (Actor(id="fatima", roles=("finance",), tenant="other"), "current", "wrong_tenant"),
    ],
)
def test_a_refused_decision_is_audited_and_changes_nothing(
    url: str, actor: Actor | None, digest: str, reason: str
) -> None:
    refunds = Refunds()
    app, client, question = waiting(url, refunds)
    before = app.get_state(CFG)
    named = question.digest if digest == "current" else digest
    with pytest.raises(ApprovalRefused) as refused:
        client.resume("claim-9", {"approved": True}, actor=actor, digest=named, tenant="acme")
    assert refused.value.reason == reason
    after = app.get_state(CFG)
    assert (after.values, after.next, after.interrupts) == (
        before.values,
        before.next,
        before.interrupts,
    )
    assert client.get("claim-9").status == "interrupted" and client.get("claim-9").inbox is None
    assert [(a.outcome, a.detail) for a in client.audit("claim-9")][-1] == ("refused", reason)
    assert refunds.made == {}


def test_an_expired_proposal_cannot_be_approved(url: str) -> None:
    refunds = Refunds()
    app = build_refund_agent(url, refunds)
    import wayline.examples.refund_agent as agent

    original = agent.EXPIRES_IN
    agent.EXPIRES_IN = -1  # expired the moment it is asked
    try:
        out = build_refund_agent(url, refunds).invoke(claim_input(), CFG)
    finally:
        agent.EXPIRES_IN = original
    (question,) = out["__interrupt__"]
    client = Wayline(app.store, tenant="acme")
    with pytest.raises(ApprovalRefused, match="expired"):
        client.resume("claim-9", {"approved": True}, actor=FINANCE, digest=question.digest)
    assert client.get("claim-9").status == "interrupted"


def test_an_approval_cannot_be_answered_through_a_plain_command(url: str) -> None:
    app, client, _ = waiting(url, Refunds())
    with pytest.raises(ResumeError, match="waits for an approval"):
        app.invoke(Command(resume={"approved": True}), CFG)
    assert client.get("claim-9").status == "interrupted"


def test_another_tenant_cannot_see_or_decide_the_run(url: str) -> None:
    app, _, question = waiting(url, Refunds())
    outsider = Wayline(app.store, tenant="globex")
    with pytest.raises(RunNotFoundError):
        outsider.resume("claim-9", {"approved": True}, actor=FINANCE, digest=question.digest)
    with pytest.raises(RunNotFoundError):
        outsider.pending("claim-9")
    assert outsider.list_runs() == []
    assert outsider.purge("claim-9") == 0  # nothing of acme's is reachable to purge
    with pytest.raises(RunNotFoundError):
        outsider.export("claim-9")
    assert app.store.get_run("acme", "claim-9").status == "interrupted"
    assert (
        app.get_state({"configurable": {"thread_id": "claim-9", "tenant": "globex"}}).values == {}
    )


def test_a_node_that_asks_twice_settles_after_each_answer(url: str) -> None:
    from typing import TypedDict

    from wayline import END, START, StateGraph, interrupt

    class Two(TypedDict, total=False):
        first: str
        second: str

    def ask(s: Two) -> dict[str, str]:
        return {"first": interrupt("first?"), "second": interrupt("second?")}

    g = StateGraph(Two, name="two")
    g.add_node("ask", ask)
    g.add_edge(START, "ask")
    g.add_edge("ask", END)
    app = g.compile(url)
    cfg = {"configurable": {"thread_id": "two"}}
    app.invoke({}, cfg)
    client = Wayline(app.store)
    client.resume("two", "a")
    out = app.invoke(None, cfg)  # answers the first, asks the second
    assert [i.value for i in out["__interrupt__"]] == ["second?"]
    run = client.get("two")
    assert run.status == "interrupted" and run.inbox is None  # settled: wait() returns
    assert client.wait("two", timeout=5).status == "interrupted"
    client.resume("two", "b")
    assert app.invoke(None, cfg) == {"first": "a", "second": "b"}
