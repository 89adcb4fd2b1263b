"""Approvals on SQLite and PostgreSQL: who may decide, on which proposal, until when; every
request and decision audited; a refusal changes nothing."""

from __future__ import annotations

from typing import Any

import pytest

from wayline.client import Wayline
from wayline.control import Actor
from wayline.demo.refund_agent import build_refund_agent, claim_input
from wayline.errors import ApprovalRefused, CorruptionError, ResumeError, RunNotFoundError
from wayline.graph.types import Command

FINANCE = Actor(id="fatima", roles=("finance",), tenant="acme")
INTERN = Actor(id="ivan", roles=("support",), tenant="acme")
CFG = {"configurable": {"thread_id": "claim-9", "tenant": "acme"}}


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
    import wayline.demo.refund_agent as agent

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


# -- every refused decision on an existing run is audited; a pinned client stays in its tenant


def refusals(client: Wayline) -> list[tuple[str, str | None]]:
    return [(a.actor, a.detail) for a in client.audit("claim-9") if a.outcome == "refused"]


def test_a_second_decision_after_acceptance_is_refused_and_audited(url: str) -> None:
    app, client, question = waiting(url, Refunds())
    client.resume("claim-9", {"approved": True}, actor=FINANCE, digest=question.digest)
    with pytest.raises(ApprovalRefused, match="not waiting for a decision") as again:
        client.resume("claim-9", {"approved": False}, actor=FINANCE, digest=question.digest)
    assert again.value.reason == "not_waiting"
    assert refusals(client) == [("fatima", "not_waiting")]
    final = app.invoke(None, CFG)  # the accepted decision stands
    assert final["outbox"] == ["Refund of 4200 issued."]
    with pytest.raises(ApprovalRefused):  # and after the run finished
        client.resume("claim-9", {"approved": False}, actor=INTERN, digest=question.digest)
    assert refusals(client) == [("fatima", "not_waiting"), ("ivan", "not_waiting")]


def test_a_decision_through_another_tenants_client_is_audited_in_the_runs_log(url: str) -> None:
    app, client, question = waiting(url, Refunds())
    outsider = Wayline(app.store, tenant="globex")
    with pytest.raises(RunNotFoundError):  # the outsider learns nothing new
        outsider.resume("claim-9", {"approved": True}, actor=FINANCE, digest=question.digest)
    assert refusals(client) == [("fatima", "wrong_tenant (through tenant 'globex')")]
    assert client.get("claim-9").status == "interrupted"
    assert outsider.audit("claim-9") == []


def test_a_pinned_client_cannot_act_for_another_tenant(url: str) -> None:
    from wayline.errors import TenantMismatchError

    app, client, question = waiting(url, Refunds())
    outsider = Wayline(app.store, tenant="globex")
    with pytest.raises(TenantMismatchError, match="pinned to tenant 'globex'"):
        outsider.resume(
            "claim-9", {"approved": True}, actor=FINANCE, digest=question.digest, tenant="acme"
        )
    assert client.get("claim-9").status == "interrupted"  # not approved
    assert refusals(client) == [("fatima", "wrong_tenant (through tenant 'globex')")]
    for call in (
        lambda: outsider.get("claim-9", tenant="acme"),
        lambda: outsider.pending("claim-9", tenant="acme"),
        lambda: outsider.audit("claim-9", tenant="acme"),
        lambda: outsider.export("claim-9", tenant="acme"),
        lambda: outsider.cancel("claim-9", tenant="acme"),
        lambda: outsider.purge("claim-9", tenant="acme"),
        lambda: outsider.list_runs(tenant="acme"),
        lambda: outsider.start(app, {}, run_id="x", tenant="acme"),
    ):
        with pytest.raises(TenantMismatchError):
            call()
    assert client.get("claim-9").status == "interrupted"
    assert [r.run_id for r in client.list_runs()] == ["claim-9"]
    # An unpinned client is an operator's tool: it acts for the tenant a call names.
    operator_client = Wayline(app.store)
    assert operator_client.get("claim-9", tenant="acme").status == "interrupted"


def test_an_actor_of_another_tenant_is_refused_whatever_the_run_state(url: str) -> None:
    _, client, question = waiting(url, Refunds())
    client.resume("claim-9", {"approved": True}, actor=FINANCE, digest=question.digest)
    stranger = Actor(id="fatima", roles=("finance",), tenant="globex")
    with pytest.raises(ApprovalRefused) as refused:
        client.resume("claim-9", {"approved": False}, actor=stranger, digest=question.digest)
    assert refused.value.reason == "wrong_tenant"
    assert refusals(client) == [("fatima", "wrong_tenant")]


def test_a_question_whose_approvers_cannot_be_read_is_reported_and_decides_nothing(
    url: str,
) -> None:
    """Who may decide is a column without a checksum: damaged, a decision is refused with
    the question named (never a guess that anyone may decide), nothing is written, and
    once the column is restored the decision goes through."""
    refunds = Refunds()
    app, client, question = waiting(url, refunds)
    store: Any = app.store
    damage = "UPDATE interrupts SET approvers = {ph} WHERE tenant_id = 'acme' AND run_id = {ph}"
    with store._tx("acme") as db:
        db.execute(damage.format(ph=store.placeholder), ('["fin', "claim-9"))
    with pytest.raises(CorruptionError, match="interrupts row of run 'claim-9'"):
        client.resume("claim-9", {"approved": True}, actor=FINANCE, digest=question.digest)
    assert [a.action for a in client.audit("claim-9")] == ["request"]
    assert refunds.made == {}
    with store._tx("acme") as db:
        db.execute(damage.format(ph=store.placeholder), ('["finance"]', "claim-9"))
    client.resume("claim-9", {"approved": True}, actor=FINANCE, digest=question.digest)
    assert app.invoke(None, CFG)["refund"] == {"id": "re_1", "amount": 4200}
