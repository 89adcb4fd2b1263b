"""Operator actions that concern no single run, in the audit log.

Run-scoped actions (cancel, retry, purge, an effect resolved, a decision) are audited under
the run's own id. Actions on the store itself (keys created or revoked, a scope granted, a
retention policy applied) are audited under ``OPERATOR_LOG`` in the tenant they concern, so
``load_audit(tenant, OPERATOR_LOG)`` and ``/wayline/runs/~operator/audit`` list them.
"""

from __future__ import annotations

import json
import time
from typing import Any

from wayline.store.base import Store
from wayline.store.records import AuditRecord

__all__ = ["OPERATOR_LOG", "audit_operator"]

OPERATOR_LOG = "~operator"
"""The pseudo run id of the store-wide operator log (no run id starts with ``~``)."""


def audit_operator(
    store: Store, tenant_id: str, actor: str, action: str, outcome: str, **detail: Any
) -> None:
    """Append one store-wide operator action: who, what, when, how it went."""
    store.append_audit(
        AuditRecord(
            tenant_id,
            OPERATOR_LOG,
            actor,
            action,
            outcome,
            detail=json.dumps(detail, sort_keys=True, default=str) if detail else None,
            at=time.time(),
        )
    )
