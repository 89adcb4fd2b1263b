"""CrewAI's ``@human_feedback`` pause as a wayline interrupt: the question a paused method
asks is an interrupt of the flow's run (an approval when the persistence names approvers),
decided through ``Wayline.resume`` (actor checked, digest named, audited), and the decision
is the feedback ``Flow.resume`` continues with. ``AwaitDecision`` is the provider that
pauses a flow for it instead of blocking on a console."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from crewai.flow.async_feedback.types import HumanFeedbackPending, PendingFeedbackContext

from wayline.codec import default_codec
from wayline.ids import derive_id
from wayline.store.base import Store
from wayline.store.records import AuditRecord, InterruptRecord

__all__ = ["AwaitDecision", "answered_feedback", "feedback_interrupt"]


class AwaitDecision:
    """``@human_feedback(message=..., provider=AwaitDecision())``: the flow pauses (its
    ``kickoff`` returns ``HumanFeedbackPending``) until a decision is recorded on its run."""

    def request_feedback(self, context: PendingFeedbackContext, flow: Any) -> str:
        raise HumanFeedbackPending(context=context)


def feedback_interrupt(
    tenant: str,
    flow_id: str,
    incarnation: str,
    step: int,
    context: dict[str, Any],
    approvers: tuple[str, ...] | None,
) -> tuple[InterruptRecord, AuditRecord]:
    """The interrupt a pause at row ``step`` records, and its audit line."""
    method = str(context["method_name"])
    question = {
        "method": method,
        "message": context.get("message"),
        "output": context.get("method_output"),
        "emit": context.get("emit"),
    }
    value = default_codec.dumps(question)
    digest = hashlib.sha256(value).hexdigest()
    record = InterruptRecord(
        step=step + 1,
        task_id=method,
        idx=0,
        interrupt_id=derive_id(incarnation, flow_id, method, step),
        value=value,
        digest=digest,
        approvers=approvers,
    )
    who = "anyone" if approvers is None else ", ".join(approvers)
    audit = AuditRecord(
        tenant,
        flow_id,
        actor=f"method:{method}",
        action="request",
        outcome="pending",
        digest=digest,
        detail=f"approvers: {who}",
    )
    return record, audit


def answered_feedback(store: Store, tenant: str, flow_id: str) -> str | None:
    """The decision recorded on the flow's open pause, as the feedback text CrewAI takes
    (a non-string decision as JSON); None if the run is not paused or not yet decided. A
    worker that claimed the run finds it ``running``: the pause's interrupt, cleared by the
    next save, says it is still to resume."""
    rec = store.get_run(tenant, flow_id)
    if rec is None:
        return None
    for interrupt in store.load_interrupts(tenant, flow_id, rec.step + 1):
        if interrupt.resume is not None:
            decision = default_codec.loads(interrupt.resume)
            return decision if isinstance(decision, str) else json.dumps(decision, default=str)
    return None
