"""Operator actions on effects: list a run's ledger, resolve an unknown or failed outcome."""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Literal

from wayline.codec import Codec, default_codec
from wayline.errors import EffectError, RunNotFoundError
from wayline.store.base import Store
from wayline.store.records import AuditRecord, EffectRecord, EffectStatus

__all__ = ["Outcome", "list_effects", "resolve_effect"]

Outcome = Literal["succeeded", "failed", "retry"]
_STATUS: dict[str, EffectStatus] = {
    "succeeded": "SUCCEEDED",
    "failed": "FAILED",
    "retry": "PENDING",
}
RESOLVABLE: tuple[EffectStatus, ...] = ("UNKNOWN", "EXECUTING", "FAILED", "PENDING")


def list_effects(store: Store, tenant_id: str, run_id: str) -> list[EffectRecord]:
    if store.get_run(tenant_id, run_id) is None:
        raise RunNotFoundError(f"no run {run_id!r} for tenant {tenant_id!r}")
    return store.list_effects(tenant_id, run_id)


def resolve_effect(
    store: Store,
    tenant_id: str,
    run_id: str,
    key: str,
    outcome: Outcome,
    *,
    result: Any = None,
    reason: str | None = None,
    codec: Codec = default_codec,
    actor: str = "operator",
) -> EffectRecord:
    """Record what an operator established about an effect, so the run can continue.

    ``succeeded``: the provider did it (``result`` is what the node gets back); ``failed``:
    it did not and will not (the node raises ``EffectFailed`` with ``reason``); ``retry``:
    send it again, under the same key, when the run resumes.
    """
    rec = store.get_effect(tenant_id, key)
    if rec is None or rec.run_id != run_id:
        if store.get_run(tenant_id, run_id) is None:
            raise RunNotFoundError(
                f"there is no run {run_id!r} for tenant {tenant_id!r}: `wayline runs list` "
                "shows the runs (resolve needs the run id and the effect key)"
            )
        raise EffectError(f"run {run_id!r} has no effect with key {key!r}")
    if rec.status not in RESOLVABLE:
        raise EffectError(
            f"effect {key!r} is {rec.status}; only an effect that is {', '.join(RESOLVABLE)} "
            "can be resolved"
        )
    new = dataclasses.replace(
        rec,
        status=_STATUS[outcome],
        result=codec.dumps(result) if outcome == "succeeded" else None,
        error=reason if outcome != "succeeded" else None,
    )
    if not store.put_effect(run_id, None, new, expect=rec.status):
        raise EffectError(f"effect {key!r} changed while it was being resolved; look again")
    detail = json.dumps({"key": key, "was": rec.status, "now": new.status, "reason": reason})
    store.append_audit(
        AuditRecord(tenant_id, run_id, actor, "effects.resolve", outcome, detail=detail)
    )
    return new
