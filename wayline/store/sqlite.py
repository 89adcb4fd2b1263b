"""SQLite backend: the embedded default. WAL mode; several processes on one machine.

``synchronous`` is the database's own durability layer under wayline's modes. FULL (the
default) survives a process kill and a power loss; NORMAL survives a process kill, not an
OS crash. Measured on the 2-vCPU dev machine (shared/ANCHORS.md): one-row WAL commits at
~3,300/s with FULL and ~27,000/s with NORMAL.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from typing import Any

from wayline.errors import LeaseConflictError, LeaseLost, RunNotFoundError, StoreError
from wayline.store.records import (
    CommitBatch,
    DeltaRecord,
    InterruptRecord,
    MeterRow,
    PendingWriteRecord,
    RunRecord,
    RunStatus,
    SnapshotRecord,
)

__all__ = ["SQLiteStore"]

SCHEMA_VERSION = 1
SYNCHRONOUS_LEVELS = ("OFF", "NORMAL", "FULL", "EXTRA")

_RUN_COLUMNS = (
    "tenant_id, run_id, graph_name, graph_version, status, step, next_nodes, durability, "
    "fencing_token, lease_owner, lease_expires_at, error, state_digest, created_at, updated_at"
)

Q_INSERT_RUN = f"""
INSERT INTO runs ({_RUN_COLUMNS})
VALUES (?, ?, ?, ?, 'pending', -1, '[]', ?, 0, NULL, NULL, NULL, NULL, ?, ?)
ON CONFLICT (tenant_id, run_id) DO NOTHING
"""
Q_GET_RUN = f"SELECT {_RUN_COLUMNS} FROM runs WHERE tenant_id = ? AND run_id = ?"
Q_LIST_RUNS = f"""
SELECT {_RUN_COLUMNS} FROM runs WHERE tenant_id = ? AND (? IS NULL OR status = ?)
ORDER BY updated_at DESC LIMIT ?
"""
Q_LEASE_OF = """
SELECT fencing_token, lease_owner, lease_expires_at FROM runs WHERE tenant_id = ? AND run_id = ?
"""
Q_TAKE_LEASE = """
UPDATE runs SET fencing_token = fencing_token + 1, lease_owner = ?, lease_expires_at = ?
WHERE tenant_id = ? AND run_id = ? RETURNING fencing_token
"""
Q_RELEASE = """
UPDATE runs SET lease_owner = NULL, lease_expires_at = NULL
WHERE tenant_id = ? AND run_id = ? AND fencing_token = ?
"""
Q_FENCE_TOUCH = """
UPDATE runs SET updated_at = ? WHERE tenant_id = ? AND run_id = ? AND fencing_token = ?
"""
Q_FENCE_UPDATE = """
UPDATE runs SET status = ?, step = ?, next_nodes = ?, error = ?,
    state_digest = COALESCE(?, state_digest), updated_at = ?
WHERE tenant_id = ? AND run_id = ? AND fencing_token = ?
"""
Q_INSERT_DELTA = "INSERT INTO deltas (tenant_id, run_id, step, payload) VALUES (?, ?, ?, ?)"
Q_PUT_SNAPSHOT = """
INSERT OR REPLACE INTO snapshots (tenant_id, run_id, step, payload) VALUES (?, ?, ?, ?)
"""
Q_CLEAR_PENDING = "DELETE FROM pending_writes WHERE tenant_id = ? AND run_id = ? AND step <= ?"
Q_CLEAR_INTERRUPTS = "DELETE FROM interrupts WHERE tenant_id = ? AND run_id = ? AND step <= ?"
Q_PUT_PENDING = """
INSERT OR REPLACE INTO pending_writes (tenant_id, run_id, step, task_id, payload)
VALUES (?, ?, ?, ?, ?)
"""
Q_PUT_INTERRUPT = """
INSERT OR REPLACE INTO interrupts
    (tenant_id, run_id, step, task_id, idx, interrupt_id, value, resume)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
"""
Q_PUT_SEGMENT = """
INSERT OR IGNORE INTO segments
    (tenant_id, run_id, seg_id, channel, level, first_step, last_step, payload)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
"""
Q_PUT_BLOB = "INSERT OR IGNORE INTO blobs (tenant_id, digest, payload) VALUES (?, ?, ?)"
Q_PUT_BLOB_REF = "INSERT OR IGNORE INTO blob_refs (tenant_id, run_id, digest) VALUES (?, ?, ?)"
Q_PUT_METER = """
INSERT INTO meter (tenant_id, run_id, step, tbl, channel, bytes) VALUES (?, ?, ?, ?, ?, ?)
"""
Q_LOAD_SEGMENT = "SELECT payload FROM segments WHERE tenant_id = ? AND run_id = ? AND seg_id = ?"
Q_LOAD_BLOB = "SELECT payload FROM blobs WHERE tenant_id = ? AND digest = ?"
Q_LOAD_METER = """
SELECT step, tbl, channel, bytes FROM meter WHERE tenant_id = ? AND run_id = ?
ORDER BY step, rowid
"""
Q_HELD_BYTES = """
SELECT 'deltas', COALESCE(SUM(LENGTH(payload)), 0) FROM deltas WHERE tenant_id = ?1 AND run_id = ?2
UNION ALL SELECT 'snapshots', COALESCE(SUM(LENGTH(payload)), 0) FROM snapshots
    WHERE tenant_id = ?1 AND run_id = ?2
UNION ALL SELECT 'segments', COALESCE(SUM(LENGTH(payload)), 0) FROM segments
    WHERE tenant_id = ?1 AND run_id = ?2
UNION ALL SELECT 'pending_writes', COALESCE(SUM(LENGTH(payload)), 0) FROM pending_writes
    WHERE tenant_id = ?1 AND run_id = ?2
UNION ALL SELECT 'interrupts', COALESCE(SUM(LENGTH(value) + COALESCE(LENGTH(resume), 0)), 0)
    FROM interrupts WHERE tenant_id = ?1 AND run_id = ?2
UNION ALL SELECT 'blobs', COALESCE(SUM(LENGTH(b.payload)), 0) FROM blobs b
    JOIN blob_refs r ON r.tenant_id = b.tenant_id AND r.digest = b.digest
    WHERE r.tenant_id = ?1 AND r.run_id = ?2
"""
Q_PURGE = [
    "DELETE FROM deltas WHERE tenant_id = ? AND run_id = ?",
    "DELETE FROM snapshots WHERE tenant_id = ? AND run_id = ?",
    "DELETE FROM segments WHERE tenant_id = ? AND run_id = ?",
    "DELETE FROM pending_writes WHERE tenant_id = ? AND run_id = ?",
    "DELETE FROM interrupts WHERE tenant_id = ? AND run_id = ?",
    "DELETE FROM meter WHERE tenant_id = ? AND run_id = ?",
    "DELETE FROM blob_refs WHERE tenant_id = ? AND run_id = ?",
    "DELETE FROM runs WHERE tenant_id = ? AND run_id = ?",
]
Q_PURGE_ORPHAN_BLOBS = """
DELETE FROM blobs WHERE tenant_id = ? AND digest IN ({marks}) AND NOT EXISTS (
    SELECT 1 FROM blob_refs r WHERE r.tenant_id = blobs.tenant_id AND r.digest = blobs.digest)
"""
Q_BLOBS_OF_RUN = "SELECT digest FROM blob_refs WHERE tenant_id = ? AND run_id = ?"
Q_TABLES = "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
Q_LOAD_SNAPSHOT = """
SELECT step, payload FROM snapshots WHERE tenant_id = ? AND run_id = ? AND step <= ?
ORDER BY step DESC LIMIT 1
"""
Q_LOAD_DELTAS = """
SELECT step, payload FROM deltas WHERE tenant_id = ? AND run_id = ? AND step > ? AND step <= ?
ORDER BY step
"""
Q_LOAD_PENDING = """
SELECT step, task_id, payload FROM pending_writes
WHERE tenant_id = ? AND run_id = ? AND step = ? ORDER BY task_id
"""
Q_LOAD_INTERRUPTS = """
SELECT step, task_id, idx, interrupt_id, value, resume FROM interrupts
WHERE tenant_id = ? AND run_id = ? AND step = ? ORDER BY task_id, idx
"""


class SQLiteStore:
    """The store on one SQLite file (or ``:memory:``), shared safely by threads."""

    def __init__(self, path: str, *, synchronous: str = "FULL", busy_timeout_ms: int = 10_000):
        level = synchronous.upper()
        if level not in SYNCHRONOUS_LEVELS:
            raise StoreError(
                f"synchronous={synchronous!r} is not a SQLite level; use one of "
                f"{', '.join(SYNCHRONOUS_LEVELS)}"
            )
        self.path = path
        self.synchronous = level
        self.url = f"sqlite:///{path}" + ("" if level == "FULL" else f"?synchronous={level}")
        self._lock = threading.RLock()
        try:
            self._db = sqlite3.connect(
                path, isolation_level=None, check_same_thread=False, timeout=busy_timeout_ms / 1000
            )
            self._db.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            if path != ":memory:":
                self._db.execute("PRAGMA journal_mode = WAL")
            self._db.execute(f"PRAGMA synchronous = {level}")
            self._create_schema()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open SQLite database {path!r}: {exc}") from exc

    def _create_schema(self) -> None:
        schema = resources.files("wayline.store.sql").joinpath("sqlite_schema.sql").read_text()
        with self._tx() as db:
            for statement in _statements(schema):
                db.execute(statement)
            db.execute(
                "INSERT OR IGNORE INTO wayline_meta (key, value) VALUES ('schema_version', ?)",
                (str(SCHEMA_VERSION),),
            )

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; BEGIN IMMEDIATE takes the write lock up front."""
        with self._lock:
            db = self._db
            try:
                db.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise StoreError(f"SQLite could not begin a transaction: {exc}") from exc
            try:
                yield db
            except sqlite3.Error as exc:
                db.execute("ROLLBACK")
                raise StoreError(f"SQLite write failed and was rolled back: {exc}") from exc
            except BaseException:
                db.execute("ROLLBACK")
                raise
            else:
                try:
                    db.execute("COMMIT")
                except sqlite3.Error as exc:
                    db.execute("ROLLBACK")
                    raise StoreError(f"SQLite commit failed: {exc}") from exc

    def _read(self, query: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        with self._lock:
            try:
                return self._db.execute(query, params).fetchall()
            except sqlite3.Error as exc:
                raise StoreError(f"SQLite read failed: {exc}") from exc

    # -- runs -------------------------------------------------------------------------

    def create_run(
        self,
        tenant_id: str,
        run_id: str,
        *,
        graph_name: str,
        graph_version: str,
        durability: str,
    ) -> RunRecord:
        now = time.time()
        with self._tx() as db:
            db.execute(
                Q_INSERT_RUN, (tenant_id, run_id, graph_name, graph_version, durability, now, now)
            )
        run = self.get_run(tenant_id, run_id)
        assert run is not None
        return run

    def get_run(self, tenant_id: str, run_id: str) -> RunRecord | None:
        rows = self._read(Q_GET_RUN, (tenant_id, run_id))
        return _run(rows[0]) if rows else None

    def list_runs(
        self, tenant_id: str, *, status: RunStatus | None = None, limit: int = 100
    ) -> list[RunRecord]:
        return [_run(r) for r in self._read(Q_LIST_RUNS, (tenant_id, status, status, limit))]

    # -- leases -----------------------------------------------------------------------

    def claim(
        self, tenant_id: str, run_id: str, *, owner: str, lease_seconds: float, steal: bool = False
    ) -> int:
        now = time.time()
        with self._tx() as db:
            row = db.execute(Q_LEASE_OF, (tenant_id, run_id)).fetchone()
            if row is None:
                raise RunNotFoundError(f"no run {run_id!r} for tenant {tenant_id!r}")
            _, holder, expires = row
            if not steal and holder not in (None, owner) and expires is not None and expires > now:
                raise LeaseConflictError(
                    f"run {run_id!r} is leased to {holder!r} for another {expires - now:.1f}s; "
                    "wait for the lease to expire or stop that worker"
                )
            (token,) = db.execute(
                Q_TAKE_LEASE, (owner, now + lease_seconds, tenant_id, run_id)
            ).fetchone()
        return int(token)

    def release(self, tenant_id: str, run_id: str, token: int) -> None:
        with self._tx() as db:
            db.execute(Q_RELEASE, (tenant_id, run_id, token))

    # -- commits ----------------------------------------------------------------------

    def commit(self, tenant_id: str, run_id: str, token: int, batch: CommitBatch) -> None:
        now = time.time()
        key = (tenant_id, run_id)
        with self._tx() as db:
            run = batch.run
            if run is None:
                cur = db.execute(Q_FENCE_TOUCH, (now, *key, token))
            else:
                cur = db.execute(
                    Q_FENCE_UPDATE,
                    (
                        run.status,
                        run.step,
                        json.dumps(list(run.next_nodes)),
                        run.error,
                        run.state_digest,
                        now,
                        *key,
                        token,
                    ),
                )
            if cur.rowcount != 1:
                raise LeaseLost(run_id, token)
            if batch.deltas:
                db.executemany(Q_INSERT_DELTA, [(*key, d.step, d.payload) for d in batch.deltas])
            if batch.snapshots:
                db.executemany(Q_PUT_SNAPSHOT, [(*key, s.step, s.payload) for s in batch.snapshots])
            if batch.clear_pending_through is not None:
                db.execute(Q_CLEAR_PENDING, (*key, batch.clear_pending_through))
                db.execute(Q_CLEAR_INTERRUPTS, (*key, batch.clear_pending_through))
            if batch.pending:
                db.executemany(
                    Q_PUT_PENDING, [(*key, p.step, p.task_id, p.payload) for p in batch.pending]
                )
            if batch.interrupts:
                db.executemany(
                    Q_PUT_INTERRUPT,
                    [
                        (*key, i.step, i.task_id, i.idx, i.interrupt_id, i.value, i.resume)
                        for i in batch.interrupts
                    ],
                )
            meter = batch.meter()
            for seg in batch.segments:  # immutable and deterministic: written at most once
                row = (*key, seg.seg_id, seg.channel, seg.level, seg.first_step, seg.last_step)
                if db.execute(Q_PUT_SEGMENT, (*row, seg.payload)).rowcount == 1:
                    meter.extend(seg.meter())
            for blob in batch.blobs:
                if db.execute(Q_PUT_BLOB, (tenant_id, blob.digest, blob.payload)).rowcount == 1:
                    meter.extend(blob.meter())
                db.execute(Q_PUT_BLOB_REF, (*key, blob.digest))
            db.executemany(
                Q_PUT_METER, [(*key, m.step, m.table, m.channel, m.bytes) for m in meter]
            )

    # -- reads ------------------------------------------------------------------------

    def load_snapshot(
        self, tenant_id: str, run_id: str, at_or_before: int
    ) -> SnapshotRecord | None:
        rows = self._read(Q_LOAD_SNAPSHOT, (tenant_id, run_id, at_or_before))
        return SnapshotRecord(rows[0][0], bytes(rows[0][1])) if rows else None

    def load_deltas(
        self, tenant_id: str, run_id: str, after: int, through: int
    ) -> list[DeltaRecord]:
        rows = self._read(Q_LOAD_DELTAS, (tenant_id, run_id, after, through))
        return [DeltaRecord(step, bytes(payload)) for step, payload in rows]

    def load_pending(self, tenant_id: str, run_id: str, step: int) -> list[PendingWriteRecord]:
        rows = self._read(Q_LOAD_PENDING, (tenant_id, run_id, step))
        return [PendingWriteRecord(s, t, bytes(p)) for s, t, p in rows]

    def load_interrupts(self, tenant_id: str, run_id: str, step: int) -> list[InterruptRecord]:
        rows = self._read(Q_LOAD_INTERRUPTS, (tenant_id, run_id, step))
        return [
            InterruptRecord(s, t, i, iid, bytes(v), None if r is None else bytes(r))
            for s, t, i, iid, v, r in rows
        ]

    def load_segments(self, tenant_id: str, run_id: str, seg_ids: list[str]) -> list[bytes]:
        out = []
        for seg_id in seg_ids:
            rows = self._read(Q_LOAD_SEGMENT, (tenant_id, run_id, seg_id))
            if not rows:
                raise StoreError(f"segment {seg_id} of run {run_id!r} is missing from the store")
            out.append(bytes(rows[0][0]))
        return out

    def load_blob(self, tenant_id: str, digest: str) -> bytes:
        rows = self._read(Q_LOAD_BLOB, (tenant_id, digest))
        if not rows:
            raise StoreError(f"blob {digest} is missing for tenant {tenant_id!r}")
        return bytes(rows[0][0])

    def load_meter(self, tenant_id: str, run_id: str) -> list[MeterRow]:
        rows = self._read(Q_LOAD_METER, (tenant_id, run_id))
        return [MeterRow(step, tbl, ch, n) for step, tbl, ch, n in rows]

    def held_bytes(self, tenant_id: str, run_id: str) -> dict[str, int]:
        """Payload bytes the run's rows hold now, per metered table (an audit of the meter:
        equal to what the meter counted for tables whose rows were never replaced)."""
        return {t: int(n) for t, n in self._read(Q_HELD_BYTES, (tenant_id, run_id))}

    def purge_run(self, tenant_id: str, run_id: str) -> int:
        """Delete every row of a run, and the blobs no other run of the tenant references,
        in one transaction. Returns the number of rows deleted."""
        key = (tenant_id, run_id)
        with self._tx() as db:
            digests = [d for (d,) in db.execute(Q_BLOBS_OF_RUN, key).fetchall()]
            deleted = sum(db.execute(q, key).rowcount for q in Q_PURGE)
            for i in range(0, len(digests), 500):
                chunk = digests[i : i + 500]
                query = Q_PURGE_ORPHAN_BLOBS.format(marks=", ".join("?" * len(chunk)))
                deleted += db.execute(query, (tenant_id, *chunk)).rowcount
        return deleted

    def table_names(self) -> list[str]:
        return [name for (name,) in self._read(Q_TABLES, ())]

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _statements(script: str) -> list[str]:
    lines = [ln for ln in script.splitlines() if not ln.lstrip().startswith("--")]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]


def _run(row: tuple[Any, ...]) -> RunRecord:
    return RunRecord(
        tenant_id=row[0],
        run_id=row[1],
        graph_name=row[2],
        graph_version=row[3],
        status=row[4],
        step=row[5],
        next_nodes=tuple(json.loads(row[6])),
        durability=row[7],
        fencing_token=row[8],
        lease_owner=row[9],
        lease_expires_at=row[10],
        error=row[11],
        state_digest=row[12],
        created_at=row[13],
        updated_at=row[14],
    )
