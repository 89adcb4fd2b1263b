"""Approvals: who may answer an ``interrupt(proposal, approvers=..., expires_in=...)``.

A thread id locates state; it is not authorization. A decision is accepted only if the
actor belongs to the run's tenant, the policy allows the actor, the decision names the
digest of the proposal it answers (so an approval of yesterday's amount cannot approve
today's), and the proposal has not expired. Accepted or refused, every decision is written
to the audit log; a refused one changes nothing else.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

from wayline.codec import Codec
from wayline.errors import ApprovalRefused, ResumeError, RunNotFoundError
from wayline.store.base import Store
from wayline.store.records import AuditRecord, InterruptRecord, RunRecord

__all__ = [
    "Actor",
    "ApprovalPolicy",
    "ApprovalRequest",
    "audit_refusal",
    "decide",
    "role_policy",
]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Actor:
    """Someone deciding: an id, the roles they hold, the tenant they act for."""

    id: str
    roles: tuple[str, ...] = ()
    tenant: str = "default"


@dataclasses.dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """What a policy is asked about (one object, so fields can be added later)."""

    actor: Actor
    run: RunRecord
    interrupt: InterruptRecord
    proposal: Any


ApprovalPolicy = Callable[[ApprovalRequest], bool]


def role_policy(request: ApprovalRequest) -> bool:
    """The built-in rule: ``approvers`` lists actor ids and roles; no list means anyone of
    the run's tenant."""
    approvers = request.interrupt.approvers
    if approvers is None:
        return True
    actor = request.actor
    return actor.id in approvers or bool(set(actor.roles) & set(approvers))


def decide(
    store: Store,
    codec: Codec,
    tenant_id: str,
    run_id: str,
    decision: Any,
    *,
    actor: Actor | None,
    digest: str | None = None,
    interrupt_id: str | None = None,
    policy: ApprovalPolicy = role_policy,
) -> InterruptRecord:
    """Check and record a decision on a run's open interrupt; returns the interrupt.

    Every refusal on a run that exists is audited in that run's log, whatever the reason:
    a wrong tenant, a run not waiting (a second decision after one was accepted), an
    interrupt answered already or not open, an actor the policy refuses, a stale digest,
    an expired proposal."""
    who = actor.id if actor is not None else "anonymous"
    run = store.get_run(tenant_id, run_id)
    if run is None:
        if actor is not None and actor.tenant != tenant_id:
            # The actor claims another tenant: if the run is that tenant's, its log shows
            # the attempt. The caller learns nothing more than "not found" here.
            audit_refusal(store, actor.tenant, run_id, who, digest, "wrong_tenant", via=tenant_id)
        raise RunNotFoundError(f"no run {run_id!r} for tenant {tenant_id!r}")

    def refuse(reason: str, message: str) -> ApprovalRefused:
        store.append_audit(AuditRecord(tenant_id, run_id, who, "decide", "refused", digest, reason))
        return ApprovalRefused(reason, message)

    if actor is not None and actor.tenant != tenant_id:
        raise refuse(
            "wrong_tenant",
            f"actor {actor.id!r} acts for tenant {actor.tenant!r}, not for this run's tenant",
        )
    if run.status != "interrupted":
        raise refuse("not_waiting", f"run {run_id!r} is {run.status}, not waiting for a decision")
    try:
        target = _target(store, run, interrupt_id)
    except ResumeError as exc:
        raise refuse("unknown_interrupt", str(exc)) from None
    if target.governed:
        proposal = codec.loads(target.value)
        if actor is None:
            raise refuse("unauthorized", "this is an approval: say who decides (actor=Actor(...))")
        if not policy(ApprovalRequest(actor, run, target, proposal)):
            raise refuse(
                "unauthorized",
                f"actor {actor.id!r} (roles {list(actor.roles)}) may not decide this; "
                f"approvers: {list(target.approvers or ())}",
            )
        if digest != target.digest:
            raise refuse(
                "stale_digest",
                f"the decision names proposal digest {str(digest)[:16]}, but the proposal "
                f"waiting is {str(target.digest)[:16]}: look at the current proposal and "
                "decide on it",
            )
        if target.expires_at is not None and time.time() > target.expires_at:
            raise refuse("expired", "the proposal expired; it can no longer be decided")
    accepted = AuditRecord(tenant_id, run_id, who, "decide", "accepted", target.digest)
    if not store.answer_interrupt(
        tenant_id, run_id, target.interrupt_id, codec.dumps(decision), accepted
    ):
        raise refuse("already_answered", f"interrupt {target.interrupt_id} was answered already")
    return target


def audit_refusal(
    store: Store,
    tenant_id: str,
    run_id: str,
    who: str,
    digest: str | None,
    reason: str,
    *,
    via: str,
) -> None:
    """Audit a decision refused before its run was reached (through a client of tenant
    ``via``), in the run's own tenant, if the run exists there. Scoped by tenant like
    every query: nothing is looked up across tenants."""
    if store.get_run(tenant_id, run_id) is not None:
        detail = f"{reason} (through tenant {via!r})"
        store.append_audit(AuditRecord(tenant_id, run_id, who, "decide", "refused", digest, detail))


def _target(store: Store, run: RunRecord, interrupt_id: str | None) -> InterruptRecord:
    waiting = [
        i
        for i in store.load_interrupts(run.tenant_id, run.run_id, run.step + 1)
        if i.resume is None
    ]
    if interrupt_id is not None:
        for i in waiting:
            if i.interrupt_id == interrupt_id:
                return i
        raise ResumeError(f"run {run.run_id!r} has no open interrupt {interrupt_id!r}")
    if len(waiting) != 1:
        ids = [i.interrupt_id for i in waiting]
        raise ResumeError(
            f"run {run.run_id!r} has {len(waiting)} open interrupts {ids}: name one "
            "with interrupt_id=..."
        )
    return waiting[0]
