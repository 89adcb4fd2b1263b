"""Frozen records that cross the store interface. Payloads are codec bytes: the store
never decodes them, so no backend can execute stored data."""

from __future__ import annotations

import dataclasses
from typing import Literal

__all__ = [
    "CommitBatch",
    "DeltaRecord",
    "InterruptRecord",
    "PendingWriteRecord",
    "RunRecord",
    "RunStatus",
    "RunUpdate",
    "SnapshotRecord",
]

RunStatus = Literal["pending", "running", "interrupted", "done", "failed", "cancelled"]
TERMINAL: frozenset[str] = frozenset({"done", "failed", "cancelled"})


@dataclasses.dataclass(frozen=True, slots=True)
class RunRecord:
    tenant_id: str
    run_id: str
    graph_name: str
    graph_version: str
    status: RunStatus
    step: int
    """Last committed superstep; -1 before the input step commits."""
    next_nodes: tuple[str, ...]
    durability: str
    fencing_token: int
    lease_owner: str | None
    lease_expires_at: float | None
    error: str | None
    state_digest: str | None
    created_at: float
    updated_at: float


@dataclasses.dataclass(frozen=True, slots=True)
class DeltaRecord:
    """One superstep's writes, in the grouping and order the fold applied them."""

    step: int
    payload: bytes


@dataclasses.dataclass(frozen=True, slots=True)
class SnapshotRecord:
    """Channel values and next tasks after ``step``; replay starts from the nearest one."""

    step: int
    payload: bytes


@dataclasses.dataclass(frozen=True, slots=True)
class PendingWriteRecord:
    """The writes of a task that finished in a superstep that has not committed yet."""

    step: int
    task_id: str
    payload: bytes


@dataclasses.dataclass(frozen=True, slots=True)
class InterruptRecord:
    """A question asked by ``interrupt()``; ``resume`` holds the answer once given."""

    step: int
    task_id: str
    idx: int
    interrupt_id: str
    value: bytes
    resume: bytes | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class RunUpdate:
    """The run row after a commit."""

    status: RunStatus
    step: int
    next_nodes: tuple[str, ...]
    error: str | None = None
    state_digest: str | None = None


@dataclasses.dataclass(slots=True)
class CommitBatch:
    """Everything one durable commit writes, in one transaction, under one fencing token.

    Several steps' batches merge into one (group commit) in async and exit durability.
    """

    deltas: list[DeltaRecord] = dataclasses.field(default_factory=list)
    snapshots: list[SnapshotRecord] = dataclasses.field(default_factory=list)
    pending: list[PendingWriteRecord] = dataclasses.field(default_factory=list)
    interrupts: list[InterruptRecord] = dataclasses.field(default_factory=list)
    clear_pending_through: int | None = None
    """Delete pending writes and interrupts of steps <= this (their step committed)."""
    run: RunUpdate | None = None

    def merge(self, later: CommitBatch) -> None:
        self.deltas.extend(later.deltas)
        self.snapshots.extend(later.snapshots)
        if later.clear_pending_through is not None:
            self.pending = [p for p in self.pending if p.step > later.clear_pending_through]
            self.interrupts = [i for i in self.interrupts if i.step > later.clear_pending_through]
            self.clear_pending_through = later.clear_pending_through
        self.pending.extend(later.pending)
        self.interrupts.extend(later.interrupts)
        if later.run is not None:
            self.run = later.run

    def is_empty(self) -> bool:
        return not (self.deltas or self.snapshots or self.pending or self.interrupts or self.run)
