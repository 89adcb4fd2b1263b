"""Threads, runs and states in the shapes LangGraph's server gives them.

A thread is the wayline run of the same id. Its LangGraph status is read off the run row:
busy while input waits or a worker holds it, interrupted while it waits for an answer,
error when it failed or parked on an unknown effect, idle otherwise. An API run's status
is settled from the thread's run once it stops, and recorded then: a run that pauses on
``interrupt()`` ends ``success`` while its thread is ``interrupted``, as LangGraph has it.

Checkpoint ids are UUID-shaped and carry the step (first eight hex digits, step + 1), so a
client can hand one back to read the state at that step.
"""

from __future__ import annotations

import uuid
from typing import Any

from wayline.graph.types import StateSnapshot
from wayline.interop.lg_paths import lg_path
from wayline.server.jsonable import interrupt_json, iso, to_jsonable
from wayline.store.records import RunProgress, RunRecord
from wayline.store.server_tables import ThreadRecord, ThreadRunRecord, ThreadRunStatus

__all__ = [
    "FINAL",
    "checkpoint_id",
    "checkpoint_step",
    "run_json",
    "run_status",
    "state_json",
    "thread_json",
    "thread_status",
]

FINAL: frozenset[str] = frozenset({"success", "error", "timeout", "interrupted"})
_NS = uuid.UUID("9d3c0a44-5d0e-4c4e-9a6e-2f1d0b7e1c55")


def checkpoint_id(thread_id: str, step: int) -> str:
    tail = uuid.uuid5(_NS, thread_id).hex
    return f"{step + 1:08x}-{tail[8:12]}-{tail[12:16]}-{tail[16:20]}-{tail[20:]}"


def checkpoint_step(cid: str) -> int | None:
    try:
        return int(cid[:8], 16) - 1
    except ValueError:
        return None


def settled(run: RunRecord | RunProgress) -> bool:
    """Stopped until someone acts: nothing queued, nobody running it."""
    if run.status == "cancelled":
        return True
    return run.status in ("done", "interrupted", "failed", "parked") and not run.input_waiting


def thread_status(run: RunRecord | None) -> str:
    if run is None or run.status == "cancelled":
        return "idle"
    if not settled(run):
        return "busy"
    return {"interrupted": "interrupted", "failed": "error", "parked": "error"}.get(
        run.status, "idle"
    )


def run_status(
    rec: ThreadRunRecord, run: RunRecord | RunProgress | None, *, latest: bool
) -> ThreadRunStatus:
    """The API run's status now; final ones are recorded by the caller."""
    if rec.status in FINAL:
        return rec.status
    if not latest or run is None:
        return "success" if not latest else "pending"
    if run.status == "cancelled":
        return "interrupted"
    if not settled(run):
        return "pending" if run.input_waiting else "running"
    return "error" if run.status in ("failed", "parked") else "success"


def run_json(rec: ThreadRunRecord, status: str) -> dict[str, Any]:
    return {
        "run_id": rec.run_id,
        "thread_id": rec.thread_id,
        "assistant_id": rec.assistant_id,
        "metadata": rec.metadata,
        "status": status,
        "kwargs": rec.kwargs,
        "multitask_strategy": rec.kwargs.get("multitask_strategy") or "reject",
        "created_at": iso(rec.created_at),
        "updated_at": iso(rec.updated_at),
    }


def thread_json(
    thread: ThreadRecord, run: RunRecord | None, state: StateSnapshot | None
) -> dict[str, Any]:
    interrupts: dict[str, list[dict[str, Any]]] = {}
    if state is not None:
        for task in state.tasks:
            if task.interrupts:
                interrupts[task.id] = [interrupt_json(i) for i in task.interrupts]
    updated = max(thread.updated_at, run.updated_at if run else 0.0)
    return {
        "thread_id": thread.thread_id,
        "created_at": iso(thread.created_at),
        "updated_at": iso(updated),
        "state_updated_at": iso(run.updated_at if run else thread.updated_at),
        "metadata": thread.metadata,
        "status": thread_status(run),
        "config": {"configurable": {}},
        "values": to_jsonable(state.values) if state is not None else None,
        "error": run.error if run is not None and run.status in ("failed", "parked") else None,
        "interrupts": interrupts,
    }


def _checkpoint(thread_id: str, step: int) -> dict[str, Any]:
    return {
        "checkpoint_id": checkpoint_id(thread_id, step),
        "thread_id": thread_id,
        "checkpoint_ns": "",
    }


def state_json(thread_id: str, snap: StateSnapshot | None, graph_id: str | None) -> dict[str, Any]:
    """``GET /threads/{id}/state``. ``snap`` None: the thread has no run yet."""
    if snap is None:
        return {
            "values": {},
            "next": [],
            "tasks": [],
            "metadata": None,
            "created_at": None,
            "checkpoint": None,
            "parent_checkpoint": None,
            "interrupts": [],
            "checkpoint_id": None,
            "parent_checkpoint_id": None,
        }
    step = int(snap.metadata["step"])
    return _state_at(thread_id, step, snap, graph_id)


def pre_input_state(thread_id: str, created_at: float, graph_id: str | None) -> dict[str, Any]:
    """The entry LangGraph's history ends with: before the first input, next ``__start__``."""
    return {
        "values": {},
        "next": ["__start__"],
        "tasks": [],
        "metadata": {"source": "input", "step": -1, "graph_id": graph_id, "thread_id": thread_id},
        "created_at": iso(created_at),
        "checkpoint": _checkpoint(thread_id, -1),
        "parent_checkpoint": None,
        "interrupts": [],
        "checkpoint_id": checkpoint_id(thread_id, -1),
        "parent_checkpoint_id": None,
    }


def _state_at(
    thread_id: str, step: int, snap: StateSnapshot, graph_id: str | None
) -> dict[str, Any]:
    tasks = [
        {
            "id": t.id,
            "name": t.name,
            "path": list(lg_path(t.path)),
            "error": None,
            "interrupts": [interrupt_json(i) for i in t.interrupts],
            "checkpoint": None,
            "state": None,
            "result": to_jsonable(t.result),
        }
        for t in snap.tasks
    ]
    parent = _checkpoint(thread_id, step - 1)
    info = snap.read_info
    return {
        "values": to_jsonable(snap.values),
        "next": list(snap.next),
        "tasks": tasks,
        "metadata": {
            "source": "input" if step < 0 else "loop",
            "step": step,
            "graph_id": graph_id,
            "thread_id": thread_id,
            "status": info.status if info is not None else None,
            "replayed_steps": info.replayed_steps if info is not None else None,
        },
        "created_at": snap.created_at,
        "checkpoint": _checkpoint(thread_id, step),
        "parent_checkpoint": parent,
        "interrupts": [interrupt_json(i) for i in snap.interrupts],
        "checkpoint_id": checkpoint_id(thread_id, step),
        "parent_checkpoint_id": parent["checkpoint_id"],
    }
