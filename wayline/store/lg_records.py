"""Frozen records of LangGraph threads kept in wayline's store (``wayline.langgraph``).

A LangGraph thread is a wayline run: ``run_id`` in these tables is the thread id, so the
meter, purge, export and retention treat a thread like any run. Payloads are opaque bytes
(the saver's encoding of LangGraph's serializer output): the store never decodes them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from wayline.store.records import MeterRow

__all__ = [
    "LG_TABLES",
    "LgCheckpoint",
    "LgFence",
    "LgOp",
    "LgPut",
    "LgPutWrites",
    "LgThreadRows",
    "LgValue",
    "LgWrite",
]

LG_TABLES = ("lg_checkpoints", "lg_values", "lg_writes")
"""The tables a LangGraph thread's payload lives in (metered, purged, exported)."""


@dataclasses.dataclass(frozen=True, slots=True)
class LgFence:
    """A worker's lease on the thread it runs (``wayline.langgraph.engine``): a write under
    it commits only while ``token`` is the run's fencing token, in the same transaction."""

    token: int
    step: int | None = None
    """The run's step after this write (a root checkpoint's step; None: unchanged)."""
    take_inbox: bool = False
    """This write applies the run's queued input: clear it in the same transaction."""


@dataclasses.dataclass(frozen=True, slots=True)
class LgCheckpoint:
    """One checkpoint of a namespace of a thread, without its channel values (those are
    ``LgValue`` rows, shared by every checkpoint that holds the same version)."""

    checkpoint_ns: str
    checkpoint_id: str
    parent_id: str | None
    lg_run_id: str | None
    """LangGraph's ``metadata["run_id"]``: what ``delete_for_runs`` deletes by."""
    step: int
    payload: bytes
    created_at: float = 0.0

    def meter(self) -> list[MeterRow]:
        return [MeterRow(self.step, "lg_checkpoints", "", len(self.payload))]


@dataclasses.dataclass(frozen=True, slots=True)
class LgValue:
    """One version of one channel: a full copy (``base`` None, ``root == version``), or the
    items appended to version ``base`` (``root``: the full copy the chain starts from),
    stored in ``payload`` or, when they are exactly the channel's pending writes of
    checkpoint ``writes_of``, by that reference (the writes are stored once)."""

    checkpoint_ns: str
    channel: str
    version: str
    base: str | None
    root: str
    writes_of: str | None
    payload: bytes
    step: int = 0
    """The step of the checkpoint that wrote it (for the meter only; not stored)."""
    label: str = ""
    """The meter's channel name (LangGraph's routing channels get a ``__`` prefix)."""

    def meter(self) -> list[MeterRow]:
        return [MeterRow(self.step, "lg_values", self.label, len(self.payload))]


@dataclasses.dataclass(frozen=True, slots=True)
class LgWrite:
    """A pending write of a task against a checkpoint (``put_writes``)."""

    checkpoint_ns: str
    checkpoint_id: str
    task_id: str
    idx: int
    channel: str
    task_path: str
    payload: bytes
    step: int = 0
    label: str = ""

    def meter(self) -> list[MeterRow]:
        return [MeterRow(self.step, "lg_writes", self.label, len(self.payload))]


@dataclasses.dataclass(frozen=True, slots=True)
class LgThreadRows:
    """Every LangGraph row of a thread (copy_thread, prune)."""

    checkpoints: list[LgCheckpoint]
    values: list[LgValue]
    writes: list[LgWrite]


@dataclasses.dataclass(frozen=True, slots=True)
class LgPut:
    """A checkpoint, the channel versions it introduced, and the parent's writes those
    refer to (``lg_put``), as one operation of a batch (``lg_write_batch``)."""

    checkpoint: LgCheckpoint
    values: Sequence[LgValue]
    writes: Sequence[LgWrite] = ()
    fence: LgFence | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class LgPutWrites:
    """A task's pending writes (``lg_put_writes``) as one operation of a batch;
    ``replace``: special writes, which overwrite the task's earlier ones."""

    writes: Sequence[LgWrite]
    replace: bool
    fence: LgFence | None = None


LgOp = LgPut | LgPutWrites
"""One write of a thread; ``lg_write_batch`` commits several in one transaction."""
