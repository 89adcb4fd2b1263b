"""The store interface: every durable byte of a run passes through one of these methods.

Every method takes the tenant id, and every backend puts it in every key and every query,
so no call can reach another tenant's rows. Every write of a run is conditional on the
run's fencing token in the same transaction (``LeaseLost`` otherwise).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol, runtime_checkable

from wayline.errors import CorruptionError
from wayline.store.lg_records import LgCheckpoint, LgFence, LgThreadRows, LgValue, LgWrite
from wayline.store.memory_records import MemoryRow, MemoryWrite
from wayline.store.records import (
    AuditRecord,
    CommitBatch,
    DeltaRecord,
    EffectRecord,
    EffectStatus,
    InterruptRecord,
    MeterRow,
    PendingWriteRecord,
    RunRecord,
    RunStatus,
    SnapshotRecord,
)
from wayline.store.stream_sql import StreamEvent

__all__ = ["RowRewriter", "Store"]


class RowRewriter(Protocol):
    """What an erasure does to each payload of a run (``wayline.control.erasure``): each
    method gets the opened payload and returns it unchanged (same bytes: nothing written),
    rewritten, or None (runs' inbox only: dropped)."""

    def inbox(self, data: bytes) -> bytes | None: ...

    def results(self, data: bytes) -> bytes: ...

    def snapshot(self, data: bytes) -> bytes: ...

    def drop_segment(self, channel: str) -> bool: ...

    def erase_value(self, cls: str, data: bytes) -> bytes:
        """A whole payload of class ``cls`` (an interrupt's question or answer, an effect's
        result): its tombstone when the class is erased, else the same bytes."""
        ...

    def referenced(self) -> set[str]:
        """Blob digests the rewritten rows still refer to (the others are dropped)."""
        ...


@runtime_checkable
class Store(Protocol):
    """One interface, one contract suite (``tests/store``), every backend."""

    url: str

    def create_run(
        self,
        tenant_id: str,
        run_id: str,
        *,
        graph_name: str,
        graph_version: str,
        durability: str,
        schema_version: str = "",
        subject: str | None = None,
        classes: Mapping[str, str] | None = None,
        incarnation: str | None = None,
        fingerprint: str = "",
        shape: str | None = None,
    ) -> RunRecord:
        """Create the run row, or return the existing one: creating twice is not an error.
        ``incarnation``: the new run's (default: random). (A run that ``invoke`` starts is
        created by the commit of its input step instead: ``CommitBatch.create``.)"""
        ...

    def get_run(self, tenant_id: str, run_id: str) -> RunRecord | None: ...

    def list_runs(
        self,
        tenant_id: str,
        *,
        status: RunStatus | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[RunRecord]:
        """The tenant's runs (of ``status``), most recently updated first, a page at a time."""
        ...

    def run_ids_with_prefix(self, tenant_id: str, prefix: str, *, limit: int = 10) -> list[str]:
        """The tenant's run ids that start with ``prefix`` (sorted, at most ``limit``): how
        the command line accepts a unique prefix of a run id."""
        ...

    def enqueue(
        self,
        tenant_id: str,
        run_id: str,
        inbox: bytes,
        *,
        graph_name: str,
        graph_version: str,
        durability: str,
        schema_version: str = "",
        subject: str | None = None,
        classes: Mapping[str, str] | None = None,
        fingerprint: str = "",
        shape: str | None = None,
        engine: str = "wayline",
    ) -> RunRecord:
        """Give a run input for a worker to apply (creating the run if needed); wakes workers.
        ``engine``: which engine executes it (``RunRecord.engine``)."""
        ...

    def claim_next(
        self,
        *,
        owner: str,
        lease_seconds: float,
        graphs: Sequence[tuple[str, str, str]],
        tenant_id: str | None = None,
    ) -> tuple[RunRecord, int] | None:
        """Claim the oldest claimable run of these (graph name, version, fingerprint) triples
        (a run recorded before fingerprints has '': serve it with that triple too) (new,
        resumable, due for a retry, or whose holder's lease expired); returns it with its
        new fencing token."""
        ...

    def next_expiry(
        self, *, graphs: Sequence[tuple[str, str, str]], tenant_id: str | None = None
    ) -> float | None:
        """When the first lease held on a run of these graphs expires, or the first timer or
        approval expiry of one falls due (None: neither)."""
        ...

    def heartbeat(
        self, tenant_id: str, run_id: str, *, token: int, owner: str, lease_seconds: float
    ) -> tuple[bool, bool]:
        """Extend a lease; returns (still held, cancellation requested)."""
        ...

    def request_cancel(self, tenant_id: str, run_id: str) -> bool: ...

    def schedule_retry(
        self, tenant_id: str, run_id: str, *, token: int, wake_at: float, error: str
    ) -> None: ...

    def note_error(
        self,
        tenant_id: str,
        run_id: str,
        *,
        token: int,
        error: str,
        status: RunStatus | None = None,
    ) -> None:
        """Record an error beside the run, fenced, without touching its committed step (a
        failed read must never rewind a run); ``status`` moves it to a visible state."""
        ...

    def requeue(self, tenant_id: str, run_id: str) -> bool: ...

    def wait_for_work(self, timeout: float) -> None:
        """Block until work may have arrived (a notification) or ``timeout`` passes."""
        ...

    def claim(
        self, tenant_id: str, run_id: str, *, owner: str, lease_seconds: float, steal: bool = False
    ) -> int:
        """Take the run's lease and return a new fencing token.

        Raises ``LeaseConflictError`` if another owner's lease is live, unless ``steal``: a
        stolen lease leaves the old holder with a stale token, so it can no longer write.
        """
        ...

    def release(self, tenant_id: str, run_id: str, token: int) -> None:
        """Give the lease up (no-op when ``token`` is stale)."""
        ...

    def commit(self, tenant_id: str, run_id: str, token: int, batch: CommitBatch) -> None:
        """Apply ``batch`` in one transaction if ``token`` is current, else raise LeaseLost.
        A batch that creates its run (``batch.create``) inserts the row first, born claimed
        with token 1; if the run exists it writes nothing and raises RunExistsError."""
        ...

    def commit_many(
        self, items: Sequence[tuple[str, str, int, CommitBatch]]
    ) -> list[BaseException | None]:
        """Group commit: apply several runs' ``(tenant_id, run_id, token, batch)`` in one
        transaction, each fenced and isolated on its own (a savepoint); returns each run's
        error (None: committed). Raises only when the transaction itself fails."""
        ...

    def write_turn(self) -> AbstractContextManager[None]:
        """Hold this handle's turn among the database's writers (re-entrant: commits inside
        it take no second turn). A group commit collects its group once it holds the turn,
        so the commits that arrive while it waits for another process's transaction join
        it. A no-op where writers do not take turns (PostgreSQL)."""
        ...

    def answer_interrupt(
        self, tenant_id: str, run_id: str, interrupt_id: str, resume: bytes, audit: AuditRecord
    ) -> bool:
        """Record a decision on an open interrupt with its audit line, atomically; False if
        the interrupt was answered already."""
        ...

    def append_audit(self, entry: AuditRecord) -> None: ...

    def load_audit(self, tenant_id: str, run_id: str) -> list[AuditRecord]: ...

    def get_effect(self, tenant_id: str, key: str) -> EffectRecord | None: ...

    def list_effects(self, tenant_id: str, run_id: str) -> list[EffectRecord]: ...

    def put_effect(
        self,
        run_id: str,
        token: int | None,
        record: EffectRecord,
        *,
        expect: EffectStatus | None,
    ) -> bool:
        """Write an effect record in one transaction: conditional on the run's fencing token
        (when given) and on the record still being in status ``expect`` (None: absent).
        Returns False when the record changed underneath; raises LeaseLost on a stale token."""
        ...

    def load_snapshot(
        self, tenant_id: str, run_id: str, at_or_before: int
    ) -> SnapshotRecord | None: ...

    def load_deltas(
        self, tenant_id: str, run_id: str, after: int, through: int
    ) -> list[DeltaRecord]:
        """Deltas of steps in ``(after, through]``, ascending."""
        ...

    def load_pending(self, tenant_id: str, run_id: str, step: int) -> list[PendingWriteRecord]: ...

    def load_interrupts(self, tenant_id: str, run_id: str, step: int) -> list[InterruptRecord]: ...

    def load_segments(self, tenant_id: str, run_id: str, seg_ids: list[str]) -> list[bytes]:
        """Payloads of the given segments, in the order asked."""
        ...

    def load_blob(self, tenant_id: str, digest: str) -> bytes: ...

    def load_meter(self, tenant_id: str, run_id: str) -> list[MeterRow]:
        """Every meter row of a run, in write order: per step, table and channel."""
        ...

    def held_bytes(self, tenant_id: str, run_id: str) -> dict[str, int]:
        """Payload bytes a run's rows hold now, per metered table (audits the meter)."""
        ...

    def purge_run(self, tenant_id: str, run_id: str) -> int:
        """Delete every row of a run and the blobs only it referenced, atomically."""
        ...

    def check_rows(self, tenant_id: str, run_id: str) -> tuple[int, list[CorruptionError]]:
        """Verify every payload row of a run (checksum, and opening when sealed), that each
        committed step has its delta and each referenced blob exists; (rows, problems)."""
        ...

    def dump_run(self, tenant_id: str, run_id: str) -> dict[str, list[dict[str, Any]]]:
        """Every row held for a run, by table, as stored (the basis of export)."""
        ...

    def count_rows(self, tenant_id: str, run_id: str) -> dict[str, int]:
        """Rows held for a run, by table (``blobs``: those it references), read without
        opening a payload: what a purge will delete, even of a run with a damaged row."""
        ...

    def runs_before(self, tenant_id: str, before: float, statuses: Sequence[str]) -> list[str]:
        """Ids of the tenant's runs in ``statuses`` last updated before ``before``."""
        ...

    def runs_of_subject(self, tenant_id: str, subject: str) -> list[str]:
        """Ids of the tenant's runs about this data subject, oldest first."""
        ...

    def tenants(self) -> list[str]:
        """Every tenant that has runs (for store-wide reports and policies)."""
        ...

    def run_ids(self, tenant_id: str) -> list[str]:
        """Every run id of a tenant, oldest first."""
        ...

    def rewrite_run(
        self, tenant_id: str, run_id: str, rewriter: RowRewriter, redacted: Mapping[str, float]
    ) -> dict[str, int]:
        """Rewrite a run's payload rows through ``rewriter`` in one transaction (each row
        opened, rewritten, sealed and checksummed again), drop the segments it names and
        the blobs no kept value refers to, and record ``redacted`` on the run. Returns the
        rows changed per table (the erasure's receipt)."""
        ...

    def scrub(self) -> dict[str, Any]:
        """Make erased bytes unrecoverable from the database files where the backend can
        (SQLite: secure_delete is on, and the WAL is checkpointed and truncated)."""
        ...

    def subject_key(self, tenant_id: str, subject: str, cls: str) -> tuple[str, bytes] | None:
        """(key id, data key) of a subject's class, made on first use; None on a plaintext
        store or once erased (``wayline.store.subject_keys``)."""
        ...

    def data_key(self, tenant_id: str, key_id: str) -> bytes | float | None:
        """A data key by id; the time it was erased (float); None if unknown."""
        ...

    def destroy_subject_keys(
        self, tenant_id: str, subject: str, classes: Collection[str] | None = None
    ) -> int:
        """Destroy a subject's data keys (of ``classes`` or all); returns how many."""
        ...

    def table_names(self) -> list[str]:
        """Every table of the schema (a new table must be metered or declared exempt)."""
        ...

    def schema_version(self) -> int:
        """The schema version of the database (0 when it has none)."""
        ...

    def upgrade(self) -> list[str]:
        """Apply missing migrations; return their names."""
        ...

    # -- node-emitted stream events (custom, messages) for the server's streams -----------

    def append_stream_events(
        self, tenant_id: str, run_id: str, token: int, events: Sequence[StreamEvent]
    ) -> int:
        """Append a step's events after the run's last, fenced by the lease ``token``;
        returns how many were stored (0: the lease is gone)."""
        ...

    def load_stream_events(
        self, tenant_id: str, run_id: str, *, after_seq: int, after_step: int, to_step: int
    ) -> list[StreamEvent]:
        """Events numbered after ``after_seq``, of steps in (``after_step``, ``to_step``]."""
        ...

    def last_stream_event(self, tenant_id: str, run_id: str, mode: str) -> StreamEvent | None:
        """The run's last event of ``mode`` (None: none)."""
        ...

    # -- LangGraph threads (wayline.langgraph.WaylineSaver; a thread is a run) -----------

    def lg_put(
        self,
        tenant_id: str,
        thread_id: str,
        checkpoint: LgCheckpoint,
        values: Sequence[LgValue],
        writes: Sequence[LgWrite] = (),
        *,
        fence: LgFence | None = None,
    ) -> None:
        """A checkpoint, the channel versions it introduced, and the parent's writes those
        refer to (unless stored already), in one transaction; with ``fence`` (a worker
        running the thread under a lease) only while its token is current, else
        ``LeaseLost`` and nothing written."""
        ...

    def lg_put_writes(
        self,
        tenant_id: str,
        thread_id: str,
        writes: Sequence[LgWrite],
        *,
        replace: bool,
        fence: LgFence | None = None,
    ) -> None: ...

    def lg_get_checkpoint(
        self, tenant_id: str, thread_id: str, checkpoint_ns: str, checkpoint_id: str | None
    ) -> LgCheckpoint | None: ...

    def lg_list_checkpoints(
        self,
        tenant_id: str,
        *,
        thread_id: str | None,
        checkpoint_ns: str | None,
        before_id: str | None,
        limit: int | None,
    ) -> list[tuple[str, LgCheckpoint]]: ...

    def lg_load_value(
        self, tenant_id: str, thread_id: str, checkpoint_ns: str, channel: str, version: str
    ) -> LgValue | None: ...

    def lg_load_chain(
        self, tenant_id: str, thread_id: str, checkpoint_ns: str, channel: str, root: str
    ) -> list[LgValue]: ...

    def lg_load_writes(
        self, tenant_id: str, thread_id: str, checkpoint_ns: str, checkpoint_id: str
    ) -> list[LgWrite]: ...

    def lg_load_channel_writes(
        self,
        tenant_id: str,
        thread_id: str,
        checkpoint_ns: str,
        channel: str,
        checkpoint_ids: Sequence[str],
    ) -> list[LgWrite]: ...

    def lg_delete_runs(self, tenant_id: str, lg_run_ids: Sequence[str]) -> int: ...

    def lg_checkpoints_of_runs(
        self, tenant_id: str, lg_run_ids: Sequence[str]
    ) -> list[tuple[str, str, str]]: ...

    def lg_values_over_writes(
        self, tenant_id: str, thread_id: str, checkpoint_ns: str, checkpoint_ids: Sequence[str]
    ) -> list[LgValue]: ...

    def lg_inline_value(self, tenant_id: str, thread_id: str, value: LgValue) -> None: ...

    def lg_thread_rows(self, tenant_id: str, thread_id: str) -> LgThreadRows: ...

    def lg_replace_thread(self, tenant_id: str, thread_id: str, rows: LgThreadRows) -> None: ...

    # -- long-term memory (wayline.memory; wayline.store.memory_sql) -------------------

    def memory_put(
        self, tenant_id: str, writes: Sequence[MemoryWrite], *, run_id: str | None = None
    ) -> None:
        """Puts and deletes of a caller outside a run, in one transaction of their own (a
        node's go into its step's ``CommitBatch.memory``)."""
        ...

    def memory_get(
        self, tenant_id: str, namespace: tuple[str, ...], key: str
    ) -> MemoryRow | None: ...

    def memory_scan(
        self,
        tenant_id: str,
        prefix: tuple[str, ...],
        *,
        include_invalidated: bool = False,
        where: Callable[[dict[str, Any]], bool] | None = None,
        limit: int | None = None,
    ) -> list[MemoryRow]: ...

    def memory_nearest(
        self,
        tenant_id: str,
        prefix: tuple[str, ...],
        query: Sequence[float],
        *,
        limit: int,
        offset: int,
    ) -> list[tuple[MemoryRow, float]] | None:
        """Items nearest ``query`` ranked by the database (pgvector), or None: scan."""
        ...

    def memory_vectors(
        self, tenant_id: str, prefix: tuple[str, ...]
    ) -> dict[tuple[str, str], list[list[float]]]: ...

    def memory_namespaces(self, tenant_id: str) -> list[tuple[str, ...]]: ...

    def memory_refresh(
        self, tenant_id: str, keys: Sequence[tuple[tuple[str, ...], str]]
    ) -> None: ...

    def memory_history(
        self, tenant_id: str, namespace: tuple[str, ...], key: str
    ) -> list[MemoryRow]: ...

    def memory_invalidate(
        self, tenant_id: str, namespace: tuple[str, ...], key: str, reason: str
    ) -> bool: ...

    def memory_sweep(self, now: float | None = None) -> int:
        """Delete every expired item; how many (workers call it)."""
        ...

    def memory_of_subject(self, tenant_id: str, subject: str) -> list[dict[str, Any]]: ...

    def memory_erase_subject(
        self, tenant_id: str, subject: str, classes: Collection[str] | None = None
    ) -> int:
        """Delete a subject's items, kept versions and embeddings (of ``classes`` or all)."""
        ...

    def memory_bytes(self, tenant_id: str) -> dict[str, int]: ...

    def memory_classes(self, tenant_id: str) -> list[tuple[str, int, int, float]]:
        """(class, items, value bytes, oldest last write) per data class of live items."""
        ...

    def memory_purge_class(
        self, tenant_id: str, cls: str, before: float, *, dry_run: bool = False
    ) -> dict[str, int]:
        """Delete a class's items last written before ``before`` (and its versions ended
        before it); rows per table."""
        ...

    def close(self) -> None: ...
