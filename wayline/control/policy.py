"""Retention by data class: ``DataPolicy({"pii": Retain(days=30, then="redact"), ...})``.

A run's age is the time since it was last written (``runs.updated_at``); only runs that
are over (done, failed, cancelled) are acted on, so a policy never races a worker. When a
class of a run is older than its rule's ``days``: ``redact`` erases that class's values
(``wayline.control.erasure``) and keeps the rest of the run; ``purge`` deletes the whole
run. Classes without a rule are kept. ``wayline retention apply`` and workers (with
``WorkerConfig(data_policy=...)``) apply it; ``dry_run`` says what it would do.

Long-term memory (``wayline.memory``) is named separately: ``memory={"pii": Retain(days=90,
then="purge")}`` (the CLI's ``memory.pii=90d:purge``) deletes a tenant's items of that class
last written more than 90 days ago, with their embeddings and kept versions, and the kept
versions of the class that ended that long ago. An item holds one class, so its rule can
only purge. Each pass that deletes something leaves a receipt under ``OPERATOR_LOG``.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Mapping
from typing import Any, Literal

from wayline.control.audit import audit_operator
from wayline.control.erasure import held_classes, redact_run
from wayline.errors import ConfigError, CorruptionError
from wayline.store.base import Store
from wayline.store.records import TERMINAL_STATUSES, AuditRecord

__all__ = ["DataPolicy", "Retain", "apply_policy", "next_action"]

Then = Literal["redact", "purge"]


@dataclasses.dataclass(frozen=True, slots=True)
class Retain:
    """Keep a class's values ``days`` after the run's last write, then redact or purge."""

    days: float
    then: Then = "redact"

    def __post_init__(self) -> None:
        if self.days < 0:
            raise ConfigError(f"Retain(days={self.days}) cannot be negative")
        if self.then not in ("redact", "purge"):
            raise ConfigError(f"Retain(then={self.then!r}) must be 'redact' or 'purge'")


@dataclasses.dataclass(frozen=True)
class DataPolicy:
    """What is kept how long, by data class: in runs (``rules``) and in long-term memory
    (``memory``), each named on its own."""

    rules: Mapping[str, Retain]
    memory: Mapping[str, Retain] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        for name, rule in self.memory.items():
            if rule.then != "purge":
                raise ConfigError(
                    f"memory rule for {name!r} must purge (memory.{name}={rule.days:g}d:purge): "
                    "a memory item holds one class, so there is nothing to redact it to"
                )

    @classmethod
    def parse(cls, text: str) -> DataPolicy:
        """``pii=30d:redact,default=365d:purge,memory.pii=90d:purge`` (the CLI's form)."""
        from wayline.control.retention import parse_age

        rules: dict[str, Retain] = {}
        memory: dict[str, Retain] = {}
        for part in filter(None, (p.strip() for p in text.split(","))):
            try:
                name, rest = part.split("=", 1)
                age, then = rest.split(":", 1) if ":" in rest else (rest, "")
            except ValueError:
                raise ConfigError(
                    f"policy rule {part!r} must look like pii=30d:redact, default=365d:purge "
                    "or memory.pii=90d:purge"
                ) from None
            name = name.strip()
            into, default = (memory, "purge") if name.startswith("memory.") else (rules, "redact")
            name = name.removeprefix("memory.")
            into[name] = Retain(parse_age(age) / 86400, then.strip() or default)  # type: ignore[arg-type]
        return cls(rules, memory)


def next_action(
    policy: DataPolicy, cls: str, updated_at: float, redacted: Mapping[str, float]
) -> tuple[str, float] | None:
    """(what the policy does next to this class of a run, when), or None: kept."""
    rule = policy.rules.get(cls)
    if rule is None or (rule.then == "redact" and cls in redacted):
        return None
    return rule.then, updated_at + rule.days * 86400


def apply_policy(
    store: Store,
    policy: DataPolicy,
    *,
    tenant_id: str | None = None,
    now: float | None = None,
    dry_run: bool = False,
    actor: str = "retention",
) -> list[dict[str, Any]]:
    """Apply ``policy`` to one tenant (or every tenant); returns the actions taken (or,
    with ``dry_run``, that would be): ``{tenant, run_id, action, classes}``. A run whose
    rows cannot be read is reported as ``{..., action: "failed", error}`` and the others
    go on: otherwise every pass would stop at it and keep the rest past their time."""
    now = time.time() if now is None else now
    actions: list[dict[str, Any]] = []
    tenants = [tenant_id] if tenant_id is not None else store.tenants()
    for tenant in tenants:
        actions += _apply_to_memory(store, policy, tenant, now, dry_run, actor)
        for run_id in store.run_ids(tenant):
            try:
                action = _apply_to_run(store, policy, tenant, run_id, now, dry_run, actor)
            except CorruptionError as exc:
                action = {"tenant": tenant, "run_id": run_id, "action": "failed"}
                action.update(classes=[], error=str(exc))
            if action is not None:
                actions.append(action)
    if any(a["action"] != "failed" for a in actions) and not dry_run:
        store.scrub()
    return actions


def _apply_to_run(
    store: Store,
    policy: DataPolicy,
    tenant: str,
    run_id: str,
    now: float,
    dry_run: bool,
    actor: str,
) -> dict[str, Any] | None:
    """What the policy does to one run now (None: nothing is due)."""
    run = store.get_run(tenant, run_id)
    if run is None or run.status not in TERMINAL_STATUSES:
        return None
    due = {}
    for cls in sorted(held_classes(run)):
        step = next_action(policy, cls, run.updated_at, run.redacted)
        if step is not None and step[1] <= now:
            due[cls] = step[0]
    if not due:
        return None
    if "purge" in due.values():
        purged = sorted(c for c, a in due.items() if a == "purge")
        if not dry_run:
            rows = store.purge_run(tenant, run_id)
            store.append_audit(  # the receipt outlives the run
                AuditRecord(
                    tenant,
                    run_id,
                    "retention",
                    "purge",
                    "erased",
                    detail=json.dumps({"rows": rows, "classes": purged}),
                    at=time.time(),
                )
            )
        return {"tenant": tenant, "run_id": run_id, "action": "purge", "classes": purged}
    if not dry_run:
        redact_run(store, tenant, run_id, due, actor=actor, at=now, scrub=False)
    return {"tenant": tenant, "run_id": run_id, "action": "redact", "classes": sorted(due)}


def _apply_to_memory(
    store: Store, policy: DataPolicy, tenant: str, now: float, dry_run: bool, actor: str
) -> list[dict[str, Any]]:
    """The memory rules for one tenant: one action per class with rows due (``run_id`` is
    empty: memory belongs to the tenant, not to a run)."""
    actions = []
    for cls, rule in sorted(policy.memory.items()):
        before = now - rule.days * 86400
        rows = store.memory_purge_class(tenant, cls, before, dry_run=dry_run)
        if not any(rows.values()):
            continue
        action = {"tenant": tenant, "run_id": "", "action": "purge", "classes": [cls]}
        actions.append({**action, "target": "memory", "rows": rows})
        if not dry_run:
            audit_operator(store, tenant, actor, "retention.memory", "erased", cls=cls, rows=rows)
    return actions
