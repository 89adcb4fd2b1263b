"""LangGraph's ``metadata["source"]`` of a checkpoint, for wayline's steps.

LangGraph names what made each checkpoint: ``"input"`` (the input of an invocation),
``"loop"`` (a superstep of nodes), ``"update"`` (``update_state``) or ``"fork"`` (a copy
made by ``update_state(config, None, as_node="__copy__")``). A wayline step's delta names the
nodes that wrote it, which tells an input step (its writer is ``__start__``) from a superstep
but not an ``update_state(..., as_node="a")`` from node ``a`` running; so ``update_state``
and ``__copy__`` leave a line in the run's audit log naming their step (``mark``), and a
fork reads its origin's lines for the steps it shares with it.
"""

from __future__ import annotations

import datetime as dt
import json

import ormsgpack

from wayline.forks import FORK_ACTION, ForkOrigin
from wayline.store.base import Store
from wayline.store.records import AuditRecord

__all__ = ["SOURCE_ACTION", "mark", "step_source", "step_time"]

SOURCE_ACTION = "checkpoint_source"
"""The audit action of a line naming the source of a step (``detail``: step and source)."""

INPUT_WRITER = "__start__"


def mark(tenant_id: str, run_id: str, step: int, source: str, actor: str = "client") -> AuditRecord:
    """The audit line saying step ``step`` of the run was made by ``source``."""
    detail = json.dumps({"step": step, "source": source}, sort_keys=True)
    return AuditRecord(tenant_id, run_id, actor, SOURCE_ACTION, source, None, detail)


def step_source(store: Store, tenant_id: str, run_id: str, step: int) -> str:
    """What made step ``step`` of a run: ``input``, ``loop``, ``update`` or ``fork``. Each
    run's audit log is read once: its source lines and its fork origin are both there."""
    run, through = run_id, step
    while True:
        origin = None
        for entry in store.load_audit(tenant_id, run):
            if entry.action == FORK_ACTION and origin is None:
                origin = ForkOrigin.from_audit(entry)
            elif entry.action == SOURCE_ACTION and entry.detail:
                detail = json.loads(entry.detail)
                if detail.get("step") == step:
                    return str(detail.get("source", "update"))
        if origin is None or origin.step < through or origin.run_id == run:
            break
        run = origin.run_id
    for delta in store.load_deltas(tenant_id, run_id, step - 1, step):
        writers = {name for name, _, _ in ormsgpack.unpackb(delta.payload)}
        if INPUT_WRITER in writers:
            return "input"
    return "loop"


def step_time(store: Store, tenant_id: str, run_id: str, step: int) -> str | None:
    """When step ``step`` of a run was committed, as LangGraph's ``created_at`` (ISO 8601,
    UTC); None for a step written before the store kept the time."""
    when = store.step_times(tenant_id, run_id, step - 1, step).get(step)
    return None if when is None else dt.datetime.fromtimestamp(when, dt.UTC).isoformat()
