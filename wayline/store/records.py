"""Frozen records that cross the store interface. Payloads are codec bytes: the store
never decodes them, so no backend can execute stored data."""

from __future__ import annotations

import dataclasses
import functools
import json
import uuid
from collections.abc import Iterable, Mapping
from typing import Any, Literal, cast, get_args

from wayline.errors import ConfigError
from wayline.store.memory_records import MemoryWrite

__all__ = [
    "DURABILITY_MODES",
    "METERED_TABLES",
    "RUN_STATUSES",
    "SETTLED_STATUSES",
    "TERMINAL_STATUSES",
    "TIMER",
    "AuditRecord",
    "BlobRecord",
    "CommitBatch",
    "DeltaRecord",
    "Durability",
    "EffectRecord",
    "EffectStatus",
    "InterruptRecord",
    "MeterRow",
    "PendingWriteRecord",
    "QueuedInput",
    "RunCreation",
    "RunRecord",
    "RunStatus",
    "RunUpdate",
    "SegmentRecord",
    "SnapshotRecord",
    "Wake",
    "check_durability",
]

METERED_TABLES = (
    "deltas",
    "snapshots",
    "segments",
    "pending_writes",
    "interrupts",
    "blobs",
    "effects",
    "runs",
    "lg_checkpoints",
    "lg_values",
    "lg_writes",
    "stream_events",
    "run_queue",
)
"""Every table that holds run payload (for ``runs``: the inbox of input not yet applied;
``run_queue``: inputs queued behind a busy run's current one;
``lg_*``: LangGraph threads kept by ``wayline.langgraph.WaylineSaver``;
``stream_events``: what nodes emitted for a server stream).
Each byte written to one has a meter row."""

ChannelBytes = tuple[tuple[str, int], ...]
"""Per-channel attribution of a payload; "" is framing. The parts add up to the payload."""


def _attribute(payload: bytes, channels: ChannelBytes) -> ChannelBytes:
    framing = len(payload) - sum(n for _, n in channels)
    return (*channels, ("", framing)) if framing else channels


RunStatus = Literal["pending", "running", "interrupted", "parked", "done", "failed", "cancelled"]
EffectStatus = Literal["PENDING", "EXECUTING", "SUCCEEDED", "FAILED", "UNKNOWN"]
RUN_STATUSES: tuple[str, ...] = get_args(RunStatus)
"""The one definition of the run statuses (CLI filters, the dashboard, checks)."""
TERMINAL_STATUSES: tuple[str, ...] = ("done", "failed", "cancelled")
"""A run in one of these will not run again unless asked (retention ages these out)."""
SETTLED_STATUSES: frozenset[str] = frozenset({*TERMINAL_STATUSES, "interrupted", "parked"})
"""No worker holds a run in one of these: it waits for an answer, an operator or nothing."""

Durability = Literal["sync", "async", "exit"]
"""When a step is durable (README, "What survives what"); the one definition of the modes."""
DURABILITY_MODES: tuple[str, ...] = get_args(Durability)


def check_durability(value: object) -> Durability:
    """The mode, or ``ConfigError`` before anything is queued or written."""
    if value not in DURABILITY_MODES:
        raise ConfigError(
            f"durability must be one of {', '.join(map(repr, DURABILITY_MODES))}, got {value!r}"
        )
    return cast(Durability, value)


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
    attempts: int = 0
    """Run-level retries so far (node errors), reset when an operator re-queues the run."""
    wake_at: float | None = None
    """A retry waits until then before a worker may claim it."""
    cancel_requested: bool = False
    inbox: bytes | None = None
    """Input a worker applies when it next claims the run (a start, a resume decision)."""
    schema_version: str = ""
    """Fingerprint (or declared version) of the state schema the run was written with."""
    incarnation: str = ""
    """Random at creation: a run started again under a purged run's id is a new
    incarnation, so the idempotency keys derived for it are new keys."""
    subject: str | None = None
    """The data subject the run's classified values are about (erasure and export by it)."""
    classes: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """The class of each labelled channel, as the run's schema declared it at creation."""
    redacted: Mapping[str, float] = dataclasses.field(default_factory=dict)
    """Classes erased from the run, and when: those channels read as ``Redacted``."""
    fingerprint: str = ""
    """The structural fingerprint of the graph that started the run ('' for runs written
    before 0013): only a worker serving this name, version and fingerprint claims it."""
    shape: str | None = None
    """That graph's shape (JSON, ``wayline.graph.identity``), to name what differs."""
    engine: str = "wayline"
    """What executes it: ``wayline`` (wayline's loop) or ``langgraph`` (LangGraph's own
    engine on ``WaylineSaver``, under a worker's lease: ``wayline.langgraph.engine``)."""
    taken_over: bool = False
    """Not a column: set on the record a claim returns when the claim took the run from a
    holder whose lease had expired (it died or stalled), so the read that follows is a
    recovery (``wayline.metrics``); False on every other read."""

    @property
    def input_waiting(self) -> bool:
        """Input (a start, a resume, a queued input) waits in its inbox."""
        return self.inbox is not None


@dataclasses.dataclass(frozen=True, slots=True)
class RunProgress:
    """Where a run is, and nothing else of its row (``RunsContract.run_progress``): what a
    stream reads each time its run moves. The whole row cost about three times as much to
    read (its JSON columns parsed, its inbox verified), on the server's event loop."""

    status: RunStatus
    step: int
    error: str | None
    fencing_token: int
    input_waiting: bool
    """Input waits in the run's inbox (``RunRecord.inbox`` is not None)."""


@dataclasses.dataclass(frozen=True, slots=True)
class QueuedInput:
    """An input queued behind a busy run's current one (``QueueContract``): waiting while
    ``promoted_at`` is None; once moved to the run's inbox, the step it began after
    (``from_step``) and the run's status when it moved (``prior_status``: how the input
    before it ended)."""

    label: str
    seq: int
    created_at: float
    promoted_at: float | None
    from_step: int | None
    prior_status: str | None

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> QueuedInput:
        promoted, from_step, prior = row["promoted_at"], row["from_step"], row["prior_status"]
        return cls(
            label=str(row["label"]),
            seq=int(row["seq"]),
            created_at=float(row["created_at"]),
            promoted_at=None if promoted is None else float(promoted),
            from_step=None if from_step is None else int(from_step),
            prior_status=None if prior is None else str(prior),
        )


@dataclasses.dataclass(frozen=True, slots=True)
class MeterRow:
    """Bytes one commit wrote to one table for one channel at one step: the instrument."""

    step: int
    table: str
    channel: str
    bytes: int


@dataclasses.dataclass(frozen=True, slots=True)
class DeltaRecord:
    """One superstep's writes, in the grouping and order the fold applied them."""

    step: int
    payload: bytes
    channels: ChannelBytes = ()
    fencing_token: int | None = None
    """As read back: the token of the lease that wrote the step (the store sets it)."""

    def meter(self) -> list[MeterRow]:
        return _rows(self.step, "deltas", self.payload, self.channels)

    def sizes(self) -> str:
        """The meter breakdown stored in the delta's own row (JSON): every step writes one,
        so it is built straight from the pairs, not through ``MeterRow`` objects."""
        parts = [f"[{_quoted(ch)},{n}]" for ch, n in self.channels]
        framing = len(self.payload) - sum([n for _, n in self.channels])
        if framing or not parts:
            parts.append(f'["",{framing}]')
        return f"[{','.join(parts)}]"


@dataclasses.dataclass(frozen=True, slots=True)
class SnapshotRecord:
    """Channel values, append-log indexes and next tasks after ``step``; replay starts
    from the nearest one."""

    step: int
    payload: bytes
    channels: ChannelBytes = ()

    def meter(self) -> list[MeterRow]:
        return _rows(self.step, "snapshots", self.payload, self.channels)

    def sizes(self, segments: Iterable[SegmentRecord] = ()) -> str:
        """The meter rows of this snapshot's write, stored in its own row (JSON
        ``[table, channel, bytes]``): its bytes by channel and the ``segments`` that were new
        with it, so a snapshot writes no meter row. Never empty: a rewrite of the row
        appends its rows to these (``Q_PUT_SNAPSHOT``)."""
        rows = [*self.meter(), *(m for seg in segments for m in seg.meter())]
        return json.dumps([[m.table, m.channel, m.bytes] for m in rows], separators=(",", ":"))


@dataclasses.dataclass(frozen=True, slots=True)
class SegmentRecord:
    """An immutable run of an append-only channel's items, written once, shared by every
    later snapshot that covers it."""

    seg_id: str
    channel: str
    level: int
    first_step: int
    last_step: int
    payload: bytes
    step: int
    """The step whose snapshot wrote it (for the meter)."""

    def meter(self) -> list[MeterRow]:
        return [MeterRow(self.step, "segments", self.channel, len(self.payload))]


@dataclasses.dataclass(frozen=True, slots=True)
class BlobRecord:
    """A large value stored once per tenant under its content digest."""

    digest: str
    payload: bytes
    channel: str
    step: int

    def meter(self) -> list[MeterRow]:
        return [MeterRow(self.step, "blobs", self.channel, len(self.payload))]


@dataclasses.dataclass(frozen=True, slots=True)
class PendingWriteRecord:
    """The writes of a task that finished in a superstep that has not committed yet."""

    step: int
    task_id: str
    payload: bytes
    channels: ChannelBytes = ()

    def meter(self) -> list[MeterRow]:
        return _rows(self.step, "pending_writes", self.payload, self.channels)


TIMER = "wake"
"""``InterruptRecord.on_expire`` of a durable timer."""


@dataclasses.dataclass(frozen=True, slots=True)
class InterruptRecord:
    """A question asked by ``interrupt()``; ``resume`` holds the answer once given."""

    step: int
    task_id: str
    idx: int
    interrupt_id: str
    value: bytes
    resume: bytes | None = None
    digest: str | None = None
    """sha256 of the encoded proposal: a decision must name it to be accepted."""
    approvers: tuple[str, ...] | None = None
    """Actor ids or roles that may decide; None: anyone of the run's tenant."""
    expires_at: float | None = None
    cls: str = "default"
    """The data class of the question and its answer."""
    on_expire: str | None = None
    """What ``expires_at`` does when it passes: ``TIMER`` (a durable timer: the run wakes),
    a JSON declared path (``wayline.graph.wakeups``), None: nothing (it only refuses
    decisions after it)."""

    @property
    def timer(self) -> bool:
        """A durable timer (``sleep``), not a question: nobody answers it, its time does."""
        return self.on_expire == TIMER

    @property
    def governed(self) -> bool:
        """An approval: decided only through an authorized ``Wayline.resume``."""
        return not self.timer and (self.approvers is not None or self.expires_at is not None)

    def meter(self) -> list[MeterRow]:
        size = len(self.value) + len(self.resume or b"")
        return [MeterRow(self.step, "interrupts", "", size)]


@dataclasses.dataclass(frozen=True, slots=True)
class AuditRecord:
    """One line of the append-only audit log: an approval requested, a decision taken or
    refused (and why)."""

    tenant_id: str
    run_id: str
    actor: str
    action: str
    outcome: str
    digest: str | None = None
    detail: str | None = None
    at: float = 0.0


@dataclasses.dataclass(frozen=True, slots=True)
class EffectRecord:
    """The durable record of one side effect (or one recorded call, ``kind="record"``).

    Written with status EXECUTING before the effect is dispatched, and with its outcome
    before the node goes on; ``fencing_token`` is the token of the run holder that wrote it.
    """

    tenant_id: str
    key: str
    run_id: str
    kind: str
    node: str
    step: int
    name: str
    seq: int
    attempt: int
    request_digest: str
    status: EffectStatus
    fencing_token: int
    result: bytes | None = None
    error: str | None = None
    created_at: float = 0.0
    updated_at: float = 0.0
    cls: str = "default"
    """The data class of the result (``ctx.effect(..., classified=...)``)."""

    def meter(self) -> list[MeterRow]:
        return [MeterRow(self.step, "effects", self.name, len(self.result or b""))]


@dataclasses.dataclass(frozen=True, slots=True)
class EffectWrite:
    """An effect record to write if the stored one is still in status ``expect`` (None:
    absent); else the commit fails with ``EffectRecordChanged`` and writes nothing."""

    record: EffectRecord
    expect: EffectStatus | None


@dataclasses.dataclass(frozen=True, slots=True)
class RunUpdate:
    """The run row after a commit."""

    status: RunStatus
    step: int
    next_nodes: tuple[str, ...]
    error: str | None = None
    state_digest: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class Wake:
    """When a suspended run is due again (``at``; None: not by time). The claim query is its
    wake-up path: a pending run queued at ``at``, an interrupted one found by ``wake_at``."""

    at: float | None


@dataclasses.dataclass(frozen=True, slots=True)
class RunCreation:
    """A run row created by the commit of its first batch (its input step): the row and
    the input become durable together, in one transaction, and a process that dies before
    that commit leaves no row behind. Born claimed by ``owner`` (fencing token 1, a lease
    of ``lease_seconds``), so no claim of its own and no worker can take it first; if the
    run exists already the commit writes nothing and raises ``RunExistsError``."""

    graph_name: str
    graph_version: str
    durability: str
    owner: str
    lease_seconds: float
    schema_version: str = ""
    subject: str | None = None
    classes: Mapping[str, str] = dataclasses.field(default_factory=dict)
    incarnation: str = dataclasses.field(default_factory=lambda: uuid.uuid4().hex)
    fingerprint: str = ""
    shape: str | None = None

    def record(self, tenant_id: str, run_id: str, now: float) -> RunRecord:
        """The row as this creation will write it, before its first step commits."""
        return RunRecord(
            tenant_id,
            run_id,
            self.graph_name,
            self.graph_version,
            "pending",
            -1,
            (),
            self.durability,
            1,
            self.owner,
            now + self.lease_seconds,
            None,
            None,
            now,
            now,
            schema_version=self.schema_version,
            incarnation=self.incarnation,
            subject=self.subject,
            classes=dict(self.classes),
            fingerprint=self.fingerprint,
            shape=self.shape,
        )


@dataclasses.dataclass(slots=True)
class CommitBatch:
    """Everything one durable commit writes, in one transaction, under one fencing token.

    Several steps' batches merge into one (group commit) in async and exit durability.
    """

    deltas: list[DeltaRecord] = dataclasses.field(default_factory=list)
    snapshots: list[SnapshotRecord] = dataclasses.field(default_factory=list)
    segments: list[SegmentRecord] = dataclasses.field(default_factory=list)
    blobs: list[BlobRecord] = dataclasses.field(default_factory=list)
    pending: list[PendingWriteRecord] = dataclasses.field(default_factory=list)
    interrupts: list[InterruptRecord] = dataclasses.field(default_factory=list)
    clear_pending_through: int | None = None
    """Delete pending writes of steps <= this (their step committed); the questions asked
    there stay with their step (a past checkpoint shows them, as LangGraph's)."""
    run: RunUpdate | None = None
    take_inbox: bool = False
    """The run's inbox was applied by this batch: clear it in the same transaction."""
    audit: list[AuditRecord] = dataclasses.field(default_factory=list)
    versions: tuple[str, str, str, str | None] | None = None
    """(graph version, schema version, fingerprint, shape) the run moves to: a migration."""
    effects: list[EffectWrite] = dataclasses.field(default_factory=list)
    """Effect records (an intent before its dispatch, an outcome after): committed through
    the same path as steps, so a worker's runs share the fsync (``EffectLedger``)."""
    create: RunCreation | None = None
    """The run row this batch creates before its other rows (a new run's first batch)."""
    memory: list[MemoryWrite] = dataclasses.field(default_factory=list)
    """Long-term memory puts and deletes of the nodes whose writes this batch commits
    (``wayline.memory``): durable with their step or not at all, fenced by the same token."""
    wake: Wake | None = None
    """The run's wake time after this batch (None: left as it is)."""

    def merge(self, later: CommitBatch) -> None:
        self.create = self.create or later.create
        self.deltas.extend(later.deltas)
        self.snapshots.extend(later.snapshots)
        self.segments.extend(later.segments)
        self.blobs.extend(later.blobs)
        if later.clear_pending_through is not None:
            self.pending = [p for p in self.pending if p.step > later.clear_pending_through]
            self.clear_pending_through = later.clear_pending_through
        self.pending.extend(later.pending)
        self.interrupts.extend(later.interrupts)
        if later.run is not None:
            self.run = later.run
        self.take_inbox = self.take_inbox or later.take_inbox
        self.wake = later.wake or self.wake
        self.audit.extend(later.audit)
        self.versions = later.versions or self.versions
        self.effects.extend(later.effects)
        self.memory.extend(later.memory)

    def is_empty(self) -> bool:
        return not (
            self.create
            or self.deltas
            or self.snapshots
            or self.segments
            or self.blobs
            or self.pending
            or self.interrupts
            or self.run
            or self.take_inbox
            or self.audit
            or self.versions
            or self.effects
            or self.memory
            or self.wake
        )

    def plain(self) -> bool:
        """Whether the batch writes nothing but its deltas and its run row (created,
        fenced, its inbox taken): a plain step, most of a worker's commits, whose other rows
        a commit skips with this one test. A field added here that writes rows of its own
        belongs in this list (``tests/unit/test_commit_batch.py`` checks every field)."""
        return not (
            self.snapshots
            or self.segments
            or self.blobs
            or self.pending
            or self.interrupts
            or self.clear_pending_through is not None
            or self.audit
            or self.versions is not None
            or self.effects
            or self.memory
            or self.wake is not None
        )

    def meter(self) -> list[MeterRow]:
        """Meter rows for the records that get them: not deltas and snapshots (each of
        their rows carries its own breakdown, so a step commit writes no meter row), and
        not segments and blobs (written only if new, so the backend meters them when its
        insert takes effect)."""
        rows: list[MeterRow] = []
        for part in (self.pending, self.interrupts):
            for record in part:
                rows.extend(record.meter())
        return rows


@functools.lru_cache(maxsize=1024)
def _quoted(channel: str) -> str:
    """A channel name as a JSON string: a graph has a few, and every step writes them."""
    return json.dumps(channel)


def _rows(step: int, table: str, payload: bytes, channels: ChannelBytes) -> list[MeterRow]:
    if not channels:
        return [MeterRow(step, table, "", len(payload))]
    return [MeterRow(step, table, ch, n) for ch, n in _attribute(payload, channels)]
