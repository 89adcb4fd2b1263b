"""Rolling a stopped run back to an earlier step, over SQL: the contract
(``RollbackContract``) and its SQL (``RollbackSQL``), written once for both backends.

The HTTP server's ``multitask_strategy="rollback"`` stops a thread's run and removes what
that API run wrote: its steps (deltas, snapshots, segments), its questions, peers' writes
and stream events, in one transaction with the run row moved back and an audit entry
naming who rolled what back. The effect ledger is never touched: an effect the removed
steps dispatched has happened, and its record stays. The run row gets a new
``incarnation`` (``wayline.ids.rolled_back``) so the steps that run again after
``after_step`` derive new effect keys, while every step up to it keeps its own.
"""

from __future__ import annotations

import json
import time
from typing import Protocol

from wayline.errors import RunNotFoundError, StoreError
from wayline.store.records import AuditRecord
from wayline.store.sql_core import SQLCore
from wayline.store.sql_governance import audit_row

__all__ = ["ROLLBACK_ACTION", "RollbackContract", "RollbackSQL"]

ROLLBACK_ACTION = "rollback"
"""The audit action of a rollback; its detail says the steps removed and the new
incarnation."""


class RollbackContract(Protocol):
    def roll_back(
        self,
        tenant_id: str,
        run_id: str,
        *,
        after_step: int,
        incarnation: str,
        actor: str,
        reason: str = "",
    ) -> int:
        """Remove every step of a stopped run after ``after_step`` and what hangs on it
        (never its effect records), move its row back to ``after_step`` under
        ``incarnation``, and audit it; returns how many steps were removed. The questions
        asked at ``after_step + 1`` (a question stays with the step that asked it, answered
        or not) are open again and the run waits on them. Refused (``StoreError``)
        while a worker holds the run or it has not stopped."""
        ...


class RollbackSQL(SQLCore):
    """``RollbackContract`` over SQL (``SQLStore`` inherits it)."""

    def roll_back(
        self,
        tenant_id: str,
        run_id: str,
        *,
        after_step: int,
        incarnation: str,
        actor: str,
        reason: str = "",
    ) -> int:
        q = self.q
        now = time.time()
        key = (tenant_id, run_id)
        with self._tx(tenant_id) as db:
            row = db.execute(q.Q_GET_RUN, key).fetchone()
            if row is None:
                raise RunNotFoundError(f"no run {run_id!r} for tenant {tenant_id!r} to roll back")
            was = int(dict(zip(q.RUN_COLUMN_NAMES, row, strict=True))["step"])
            asked = db.execute(q.Q_OPEN_QUESTIONS, (*key, after_step + 1)).fetchone()[0]
            status = "interrupted" if int(asked) else "done"  # answered or not: asked
            params = (after_step, status, incarnation, now, *key, now, after_step)
            if db.execute(q.Q_ROLLBACK_RUN, params).fetchone() is None:
                raise StoreError(
                    f"run {run_id!r} (tenant {tenant_id!r}) is held by a worker or has not "
                    f"stopped, or is before step {after_step}: stop it (cancel) and roll it "
                    "back once its worker let it go; nothing was removed"
                )
            for query in q.Q_ROLLBACK_TRIM:
                db.execute(query, (*key, after_step))
            detail = {
                "steps_removed": [after_step + 1, was] if was > after_step else [],
                "incarnation": incarnation,
                "reason": reason,
            }
            entry = AuditRecord(
                tenant_id,
                run_id,
                actor,
                ROLLBACK_ACTION,
                "removed",
                detail=json.dumps(detail, sort_keys=True),
                at=now,
            )
            db.execute(q.Q_APPEND_AUDIT, audit_row(entry, now))
        return max(0, was - after_step)
