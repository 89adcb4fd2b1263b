"""The error a failed task raised, as LangGraph's ``PregelTask.error`` shows it.

LangGraph saves a failed task's exception among its checkpoint's pending writes, so the
checkpoint's ``get_state`` (and every later ``get_state_history``) lists the task with
``error`` set to the exception's ``repr``, even after a retry of the step succeeded. A
wayline step that fails is not committed, and its pending writes are cleared when the step
commits; so the commit that marks the run failed appends one line to the run's audit log
per failed task (``failure``), naming its step and task id, and a snapshot reads the lines
of the step its tasks belong to (``task_errors``). The run's status and ``error`` still say
why the run stopped; these lines say which task raised what, at which step.
"""

from __future__ import annotations

import json

from wayline.store.base import Store
from wayline.store.records import AuditRecord

__all__ = ["TASK_ERROR_ACTION", "failure", "task_errors"]

TASK_ERROR_ACTION = "task_error"
"""The audit action of a line naming a failed task (``detail``: step, task id, error)."""


def failure(
    tenant_id: str, run_id: str, step: int, task_id: str, node: str, exc: BaseException, actor: str
) -> AuditRecord:
    """The audit line saying task ``task_id`` (of node ``node``) failed at ``step``."""
    detail = json.dumps({"step": step, "task": task_id, "error": repr(exc)}, sort_keys=True)
    return AuditRecord(tenant_id, run_id, actor, TASK_ERROR_ACTION, node, None, detail)


def task_errors(store: Store, tenant_id: str, run_id: str, step: int) -> dict[str, str]:
    """The errors of the tasks of ``step`` that failed, by task id (the latest failure of
    each, as LangGraph keeps one error write per task)."""
    errors: dict[str, str] = {}
    for entry in store.load_audit(tenant_id, run_id):
        if entry.action != TASK_ERROR_ACTION or not entry.detail:
            continue
        detail = json.loads(entry.detail)
        if detail.get("step") == step:
            errors[str(detail["task"])] = str(detail["error"])
    return errors
