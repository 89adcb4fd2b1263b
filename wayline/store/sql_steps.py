"""Steps and snapshots over SQL: a run's commits (its fenced run row, its deltas, pending
writes, snapshots, segments, blobs and meter rows in one transaction; a group of runs'
commits in one, ``wayline.store.sql_group``) and the reads that rebuild its state from them.
The contract (``StepsContract``) and its SQL (``StepsSQL``), written once for SQLite and
PostgreSQL (which overrides the bulk inserts and the one-statement paths)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

from wayline.errors import (
    CorruptionError,
    EffectRecordChanged,
    LeaseLost,
    RunExistsError,
    TenantMismatchError,
)
from wayline.store import observe
from wayline.store.payloads import checksum as crc
from wayline.store.payloads import json_column
from wayline.store.records import (
    CommitBatch,
    DeltaRecord,
    MeterRow,
    PendingWriteRecord,
    SegmentRecord,
    SnapshotRecord,
)
from wayline.store.sql_core import Executor
from wayline.store.sql_effects import EffectsSQL
from wayline.store.sql_fence import fence_params, first_fence
from wayline.store.sql_governance import audit_row, interrupt_row
from wayline.store.sql_group import commit_group
from wayline.store.sql_runs import RunsSQL

if TYPE_CHECKING:
    from wayline.store.memory_records import MemoryWrite

__all__ = ["StepsContract", "StepsSQL"]


class StepsContract(Protocol):
    """A run's steps: committed under its lease (one run, or a group), and read back."""

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

    def load_snapshot(
        self, tenant_id: str, run_id: str, at_or_before: int
    ) -> SnapshotRecord | None: ...

    def load_deltas(
        self, tenant_id: str, run_id: str, after: int, through: int
    ) -> list[DeltaRecord]:
        """Deltas of steps in ``(after, through]``, ascending."""
        ...

    def step_times(self, tenant_id: str, run_id: str, after: int, through: int) -> dict[int, float]:
        """When each step in ``(after, through]`` was committed (seconds since the epoch; a
        step written before the store kept the time is absent)."""
        ...

    def load_pending(self, tenant_id: str, run_id: str, step: int) -> list[PendingWriteRecord]: ...

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


class StepsSQL(RunsSQL, EffectsSQL):
    """``StepsContract`` over SQL (``SQLStore`` inherits it). A commit creates its run's
    row (``RunsSQL``) and writes its effects (``EffectsSQL``) in the same transaction."""

    if TYPE_CHECKING:  # MemorySQL's: a node's memory writes commit with its step

        def _memory_write(
            self,
            db: Any,
            tenant_id: str,
            run_id: str | None,
            writes: Iterable[MemoryWrite],
            now: float,
        ) -> None: ...

    def commit(self, tenant_id: str, run_id: str, token: int, batch: CommitBatch) -> None:
        started = time.perf_counter()
        batch = self._sealed(tenant_id, run_id, batch)  # the meter counts what is stored
        with self._tx(tenant_id) as db:
            now = time.time()
            self._create(db, tenant_id, run_id, batch)
            self._fence(db, tenant_id, run_id, token, batch, now)
            self._write(db, [((tenant_id, run_id), token, batch)], now)
        observe.committed((tenant_id,), started)  # wayline.commit.duration
        observe.moved(((tenant_id, run_id),))  # the run's streams wake (wayline.server.bell)

    _commit_fenced = commit
    """``commit`` as written here, whatever wraps or overrides it (``EffectsSQL.put_effect``)."""

    def commit_many(
        self, items: Sequence[tuple[str, str, int, CommitBatch]]
    ) -> list[BaseException | None]:
        """Several runs' batches in one transaction: one fsync (``wayline.store.sql_group``)."""
        started = time.perf_counter()
        errors = commit_group(self, [(t, r, tok, self._sealed(t, r, b)) for t, r, tok, b in items])
        done = [i for i, e in zip(items, errors, strict=True) if e is None]
        observe.committed([i[0] for i in done], started)
        observe.moved([(i[0], i[1]) for i in done])
        return errors

    def _create(self, db: Executor, tenant_id: str, run_id: str, batch: CommitBatch) -> None:
        """Insert the run row a batch creates (born claimed, token 1), or RunExistsError."""
        new = batch.create
        if new is None:
            return
        row = self._insert_run(
            db,
            tenant_id,
            run_id,
            new.graph_name,
            new.graph_version,
            new.durability,
            new.schema_version,
            subject=new.subject,
            classes=new.classes,
            incarnation=new.incarnation,
            lease=(new.owner, new.lease_seconds),
            identity=(new.fingerprint, new.shape),
        )
        if row is None:
            raise RunExistsError(run_id)

    def _fence(
        self, db: Executor, tenant_id: str, run_id: str, token: int, batch: CommitBatch, now: float
    ) -> None:
        """Update the run row if ``token`` is still the run's fencing token, else LeaseLost."""
        query, params = first_fence(self.q, (tenant_id, run_id), token, batch, now)
        cur = db.execute(query, params)
        if cur.rowcount != 1 and query is self.q.Q_FENCE_STEP:  # the status changes, or
            query, params = fence_params(self.q, (tenant_id, run_id), token, batch, now, "")
            cur = db.execute(query, params)  # the lease is gone
        if cur.rowcount != 1:
            raise LeaseLost(run_id, token)

    def _write(
        self, db: Executor, fenced: Sequence[tuple[tuple[str, str], int, CommitBatch]], now: float
    ) -> None:
        """The rows of fenced, sealed batches (one run's, or a group's: one statement per
        kind of row for the whole group where the rows allow it)."""
        q = self.q
        rows: list[tuple[Any, ...]]
        rows = [
            (*key, d.step, d.payload, token, d.sizes(), crc(("deltas", *key, d.step), d.payload))
            for key, token, batch in fenced
            for d in batch.deltas
        ]
        if rows:
            self._put_deltas(db, rows)
        self._announce(db, [key for key, _, _ in fenced])
        snapshots: list[tuple[Any, ...]] = []
        meter: list[tuple[Any, ...]] = []
        for key, token, batch in fenced:
            if batch.plain():
                continue  # its delta and run row are written: most of a worker's commits
            tenant_id = key[0]
            if batch.clear_pending_through is not None:
                db.execute(q.Q_CLEAR_PENDING, (*key, batch.clear_pending_through))
            if batch.pending:
                rows = [
                    (
                        *key,
                        p.step,
                        p.task_id,
                        p.payload,
                        crc(("pending_writes", *key, p.step, p.task_id), p.payload),
                    )
                    for p in batch.pending
                ]
                db.executemany(q.Q_PUT_PENDING, rows)
            if batch.interrupts:
                rows = [interrupt_row(key, i) for i in batch.interrupts]
                db.executemany(q.Q_PUT_INTERRUPT, rows)
            for entry in batch.audit:
                db.execute(q.Q_APPEND_AUDIT, audit_row(entry, now))
            if batch.versions is not None:
                db.execute(q.Q_SET_VERSIONS, (*batch.versions, *key, token))
            if batch.wake is not None:
                db.execute(q.Q_SET_WAKE, (batch.wake.at, batch.wake.at, *key, token))
            metered = batch.meter()
            new = self._new_segments(db, key, batch.segments) if batch.segments else []
            steps = {s.step for s in batch.snapshots}
            metered.extend(m for seg in new if seg.step not in steps for m in seg.meter())
            snapshots.extend(
                (
                    *key,
                    s.step,
                    s.payload,
                    s.sizes(seg for seg in new if seg.step == s.step),
                    crc(("snapshots", *key, s.step), s.payload),
                )
                for s in batch.snapshots
            )
            for blob in batch.blobs:
                check = crc(("blobs", tenant_id, blob.digest), blob.payload)
                params = (tenant_id, blob.digest, blob.payload, check)
                if db.execute(q.Q_PUT_BLOB, params).rowcount == 1:
                    metered.extend(blob.meter())
                db.execute(q.Q_PUT_BLOB_REF, (*key, blob.digest))
            meter.extend((*key, m.step, m.table, m.channel, m.bytes) for m in metered)
            for w in batch.effects:  # an intent or an outcome, conditional on the status
                if w.record.tenant_id != tenant_id:
                    raise TenantMismatchError(
                        f"run {key[1]!r} of tenant {tenant_id!r} cannot write effect "
                        f"{w.record.key!r} of tenant {w.record.tenant_id!r}"
                    )
                if not self._put_effect(db, key[1], w.record, w.expect, now):
                    raise EffectRecordChanged(w.record.key, w.expect)
            if batch.memory:  # a node's long-term memory writes commit with its step
                self._memory_write(db, tenant_id, key[1], batch.memory, now)
        if snapshots:
            db.executemany(q.Q_PUT_SNAPSHOT, snapshots)
        if meter:
            self._put_meter(db, meter)

    def _new_segments(
        self, db: Executor, key: tuple[str, str], segments: Sequence[SegmentRecord]
    ) -> list[SegmentRecord]:
        """Insert segments (immutable and deterministic: written at most once); those that
        were not there yet, each once, to be metered as they were inserted once."""
        rows = [
            (
                *key,
                seg.seg_id,
                seg.channel,
                seg.level,
                seg.first_step,
                seg.last_step,
                seg.payload,
                crc(("segments", *key, seg.seg_id), seg.payload),
            )
            for seg in segments
        ]
        inserted = self._put_segments(db, rows)
        new = []
        for seg in segments:
            if seg.seg_id in inserted:
                inserted.discard(seg.seg_id)
                new.append(seg)
        return new

    def _put_deltas(self, db: Executor, rows: Sequence[tuple[Any, ...]]) -> None:
        """Insert delta rows (PostgreSQL sends several as one statement)."""
        db.executemany(self.q.Q_INSERT_DELTA, rows)

    def _put_meter(self, db: Executor, rows: Sequence[tuple[Any, ...]]) -> None:
        db.executemany(self.q.Q_PUT_METER, rows)

    def _put_segments(self, db: Executor, rows: Sequence[tuple[Any, ...]]) -> set[str]:
        """Insert segment rows that are not there yet; the ids of those inserted (metered)."""
        return {row[2] for row in rows if db.execute(self.q.Q_PUT_SEGMENT, row).rowcount == 1}

    def _sealed(self, t: str, r: str, batch: CommitBatch) -> CommitBatch:
        """The batch with every payload as it will be stored (sealed, when encrypted)."""
        if not self.encrypted:
            return batch
        seal = self.payloads.sealer.seal
        return dataclasses.replace(
            batch,
            deltas=[_re(d, payload=seal(t, f"{r}|d", d.payload)) for d in batch.deltas],
            snapshots=[_re(s, payload=seal(t, f"{r}|s", s.payload)) for s in batch.snapshots],
            segments=[_re(s, payload=seal(t, f"{r}|g", s.payload)) for s in batch.segments],
            blobs=[_re(b, payload=seal(t, f"b|{b.digest}", b.payload)) for b in batch.blobs],
            pending=[_re(p, payload=seal(t, f"{r}|p", p.payload)) for p in batch.pending],
            interrupts=[
                _re(
                    i,
                    value=seal(t, f"{r}|i", i.value),
                    resume=None if i.resume is None else seal(t, f"{r}|i", i.resume),
                )
                for i in batch.interrupts
            ],
        )

    def load_snapshot(
        self, tenant_id: str, run_id: str, at_or_before: int
    ) -> SnapshotRecord | None:
        rows = self._read(
            self.q.Q_LOAD_SNAPSHOT, (tenant_id, run_id, at_or_before), tenant=tenant_id
        )
        if not rows:
            return None
        step, stored, crc = rows[0]
        ident = ("snapshots", tenant_id, run_id, step)
        return SnapshotRecord(step, self.payloads.get(ident, tenant_id, f"{run_id}|s", stored, crc))

    def load_deltas(
        self, tenant_id: str, run_id: str, after: int, through: int
    ) -> list[DeltaRecord]:
        rows = self._read(
            self.q.Q_LOAD_DELTAS, (tenant_id, run_id, after, through), tenant=tenant_id
        )
        get, aad = self.payloads.get, f"{run_id}|d"
        return [
            DeltaRecord(
                step,
                get(("deltas", tenant_id, run_id, step), tenant_id, aad, data, crc),
                fencing_token=tok,
            )
            for step, data, tok, crc in rows
        ]

    def step_times(self, tenant_id: str, run_id: str, after: int, through: int) -> dict[int, float]:
        params = (tenant_id, run_id, after, through)
        return {s: t for s, t in self._read(self.q.Q_STEP_TIMES, params, tenant=tenant_id)}

    def load_pending(self, tenant_id: str, run_id: str, step: int) -> list[PendingWriteRecord]:
        rows = self._read(self.q.Q_LOAD_PENDING, (tenant_id, run_id, step), tenant=tenant_id)
        get, aad = self.payloads.get, f"{run_id}|p"
        return [
            PendingWriteRecord(
                s, t, get(("pending_writes", tenant_id, run_id, s, t), tenant_id, aad, p, crc)
            )
            for s, t, p, crc in rows
        ]

    def load_segments(self, tenant_id: str, run_id: str, seg_ids: list[str]) -> list[bytes]:
        found: dict[str, tuple[Any, Any]] = {}
        for i in range(0, len(seg_ids), 500):  # one round trip per 500 segments
            chunk = seg_ids[i : i + 500]
            query = self.q.Q_LOAD_SEGMENTS.format(marks=", ".join([self.placeholder] * len(chunk)))
            for seg_id, stored, check in self._read(query, (tenant_id, run_id, *chunk), tenant_id):
                found[seg_id] = (stored, check)
        out = []
        for seg_id in seg_ids:
            ident = ("segments", tenant_id, run_id, seg_id)
            if seg_id not in found:
                raise CorruptionError.of(ident, "the segment a snapshot refers to is missing")
            stored, crc = found[seg_id]
            out.append(self.payloads.get(ident, tenant_id, f"{run_id}|g", stored, crc))
        return out

    def load_blob(self, tenant_id: str, digest: str) -> bytes:
        rows = self._read(self.q.Q_LOAD_BLOB, (tenant_id, digest), tenant=tenant_id)
        ident = ("blobs", tenant_id, digest)
        if not rows:
            raise CorruptionError.of(ident, "a value refers to this blob, which is missing")
        stored, crc = rows[0]
        return self.payloads.get(ident, tenant_id, f"b|{digest}", stored, crc)

    def load_meter(self, tenant_id: str, run_id: str) -> list[MeterRow]:
        rows = self._read(self.q.Q_LOAD_METER, (tenant_id, run_id), tenant=tenant_id)
        meter = [MeterRow(step, tbl, ch, n) for step, tbl, ch, n in rows]
        for table, query in (
            ("deltas", self.q.Q_LOAD_DELTA_SIZES),
            ("snapshots", self.q.Q_LOAD_SNAPSHOT_SIZES),
        ):
            for step, sizes in self._read(query, (tenant_id, run_id), tenant=tenant_id):
                meter.extend(_carried_meter((table, tenant_id, run_id, step), sizes))
        return sorted(meter, key=lambda m: m.step)  # stable: write order within a step

    def held_bytes(self, tenant_id: str, run_id: str) -> dict[str, int]:
        """Payload bytes the run's rows hold now, per metered table (an audit of the meter:
        equal to what the meter counted for tables whose rows were never replaced)."""
        params = (tenant_id, run_id) * self.q.HELD_BYTES_PARAMS
        return {t: int(n) for t, n in self._read(self.q.Q_HELD_BYTES, params, tenant=tenant_id)}


def _carried_meter(ident: tuple[str, str, str, int], sizes: str) -> list[MeterRow]:
    """The meter rows a delta row (``[channel, bytes]`` items) or a snapshot row (``[table,
    channel, bytes]``) carries in its ``sizes``."""
    table, step = ident[0], ident[3]

    def rows(items: Any) -> list[MeterRow]:
        if table == "deltas":
            return [MeterRow(step, table, str(ch), int(n)) for ch, n in items]
        return [MeterRow(step, str(tbl), str(ch), int(n)) for tbl, ch, n in items]

    return json_column(ident, sizes, "its byte counts (sizes)", rows)


def _re(record: Any, **changes: Any) -> Any:
    return dataclasses.replace(record, **changes)
