"""The Store methods of LangGraph threads over SQL (``wayline.langgraph.WaylineSaver``),
written once for SQLite and PostgreSQL over the named queries in ``sql/lg_queries.py``.

Kept apart from ``sql_store`` so the LangGraph tables stay self-contained: ``SQLStore``
inherits these methods; they use only its ``_tx``, ``_read``, ``q``, ``placeholder`` and
``payloads``. Every payload goes through ``payloads`` (sealed when the store is encrypted,
checksummed over its identity always), and every write meters the bytes it stored in the
same transaction (``meter`` rows, run = thread).
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from wayline.errors import LeaseLost
from wayline.ids import unique_hex
from wayline.store import observe
from wayline.store.lg_records import (
    LgCheckpoint,
    LgFence,
    LgOp,
    LgPut,
    LgPutWrites,
    LgThreadRows,
    LgValue,
    LgWrite,
)
from wayline.store.payloads import Payloads
from wayline.store.records import MeterRow

__all__ = ["LangGraphSQL", "lg_payload_columns"]

LgRecord = LgCheckpoint | LgValue | LgWrite


class LangGraphSQL:
    q: SimpleNamespace
    placeholder: str
    payloads: Payloads

    def _tx(self, tenant: str | None = None) -> AbstractContextManager[Any]:
        raise NotImplementedError

    if TYPE_CHECKING:  # SQLCore's: other processes hear of the checkpoint with the commit

        def _announce(self, db: Any, runs: Sequence[tuple[str, str]]) -> None: ...

    def _read(self, query: str, params: Sequence[Any], tenant: str | None = None) -> list[Any]:
        raise NotImplementedError

    # -- the payload seam -------------------------------------------------------------

    def _lg_stored(self, t: str, thread: str, rec: Any) -> tuple[Any, int]:
        """The record with its payload as stored (sealed when encrypted), and its checksum."""
        ident, aad = _identity(t, thread, rec)
        stored, check = self.payloads.put(ident, t, aad, rec.payload)
        return dataclasses.replace(rec, payload=stored), check

    def _lg_sealed(self, t: str, thread: str, rec: Any) -> tuple[Any, int]:
        """``_lg_stored`` without a copy of the record when nothing is sealed."""
        ident, aad = _identity(t, thread, rec)
        stored, check = self.payloads.put(ident, t, aad, rec.payload)
        if stored is rec.payload:
            return rec, check
        return dataclasses.replace(rec, payload=stored), check

    def _lg_opened(self, t: str, thread: str, rec: Any, check: int | None) -> Any:
        """The record as written: its checksum verified, its payload opened (the record
        itself when nothing was sealed: no copy a row of a long chain's read)."""
        ident, aad = _identity(t, thread, rec)
        opened = self.payloads.get(ident, t, aad, rec.payload, check)
        if opened is rec.payload:
            return rec
        return dataclasses.replace(rec, payload=opened)

    def _lg_ensure_run(
        self, db: Any, key: tuple[str, str], now: float, fence: LgFence | None = None
    ) -> None:
        """Create the thread's run row on its first write; under a worker's ``fence``, the
        run exists and the write goes on only while the fence's token is the run's fencing
        token (else ``LeaseLost``, and the transaction writes nothing)."""
        if fence is None:
            db.execute(self.q.Q_LG_ENSURE_RUN, (*key, now, now, unique_hex(32)))
            return
        params = (now, fence.step, int(fence.take_inbox), *key, fence.token)
        if db.execute(self.q.Q_LG_FENCE, params).rowcount != 1:
            raise LeaseLost(key[1], fence.token)

    def _lg_check_run(
        self, db: Any, key: tuple[str, str], now: float, fence: LgFence | None
    ) -> Any:
        """``_lg_ensure_run`` as a statement whose row count the caller checks (1: the
        fence holds) once the pipeline's results are in."""
        if fence is None:
            return db.execute(self.q.Q_LG_ENSURE_RUN, (*key, now, now, unique_hex(32)))
        params = (now, fence.step, int(fence.take_inbox), *key, fence.token)
        return db.execute(self.q.Q_LG_FENCE, params)

    def _lg_metered(self) -> dict[str, str]:
        """Per insert that keeps the first row (``ON CONFLICT DO NOTHING``), the statement
        that also meters the row only if it inserted it, where the database can say so in
        one statement (PostgreSQL: a data-modifying ``WITH``); else none, and the meter
        waits for the row counts."""
        return {}

    def _lg_pipeline(self, db: Any) -> AbstractContextManager[Any]:
        """Where the driver can send a transaction's statements without waiting for each
        result (psycopg's pipeline mode), the context that does; else nothing."""
        return contextlib.nullcontext()

    # -- writes -----------------------------------------------------------------------

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
        """Store a checkpoint and the channel versions it introduced, in one transaction
        (creating the thread's run row on its first checkpoint). ``writes``: pending writes
        of the parent that values refer to, stored here too unless already stored, so a
        value is never durable without the writes it is made of. ``fence``: a worker's
        lease (``LeaseLost`` when it is stale)."""
        self.lg_write_batch(tenant_id, thread_id, [LgPut(checkpoint, values, writes, fence)])

    def lg_put_writes(
        self,
        tenant_id: str,
        thread_id: str,
        writes: Sequence[LgWrite],
        *,
        replace: bool,
        fence: LgFence | None = None,
    ) -> None:
        """Store a task's pending writes; ``replace``: special writes, which overwrite the
        task's earlier ones at the same index (regular writes keep the first)."""
        if writes:
            self.lg_write_batch(tenant_id, thread_id, [LgPutWrites(writes, replace, fence)])

    def lg_write_batch(self, tenant_id: str, thread_id: str, ops: Sequence[LgOp]) -> None:
        """Several writes of one thread (checkpoints and pending writes, in order) in one
        transaction: one commit (one fsync on SQLite at ``synchronous=FULL``) for a step's
        task writes and its checkpoint. The run row is ensured, or the fence checked, once
        per distinct token (the fences of one token merge: the last step, and the inbox
        taken if any took it); any stale fence fails the whole batch (``LeaseLost``)."""
        q = self.q
        now = time.time()
        key = (tenant_id, thread_id)
        rows: list[tuple[str, tuple[Any, ...], LgRecord]] = []
        fences: dict[int | None, LgFence | None] = {}
        batched: set[tuple[str, str, str, int]] = set()
        """Regular writes already in this batch: a checkpoint's references to its parent's
        writes are the task writes committed beside it, and need no second statement."""
        for op in ops:
            token = None if op.fence is None else op.fence.token
            fences[token] = _merged(fences.get(token), op.fence)
            if isinstance(op, LgPut):
                c, crc = self._lg_sealed(tenant_id, thread_id, op.checkpoint)
                rows.append((q.Q_LG_PUT_CHECKPOINT, (*key, *_checkpoint_row(c, crc, now)), c))
                for v in op.values:
                    v, crc = self._lg_sealed(tenant_id, thread_id, v)
                    rows.append((q.Q_LG_PUT_VALUE, (*key, *_value_row(v, crc)), v))
                query = q.Q_LG_PUT_WRITE
            else:
                query = q.Q_LG_REPLACE_WRITE if op.replace else q.Q_LG_PUT_WRITE
            for w in op.writes:
                ident = (w.checkpoint_ns, w.checkpoint_id, w.task_id, w.idx)
                if query is q.Q_LG_PUT_WRITE:
                    if ident in batched:
                        continue  # kept first either way (ON CONFLICT DO NOTHING)
                    batched.add(ident)
                w, crc = self._lg_sealed(tenant_id, thread_id, w)
                rows.append((query, (*key, *_write_row(w, crc)), w))
        meter: list[MeterRow] = []
        put = any(isinstance(op, LgPut) for op in ops)  # a checkpoint: its streams hear of it
        metered = self._lg_metered()
        done: list[tuple[Any, LgRecord]] = []
        with self._tx(tenant_id) as db:
            with self._lg_pipeline(db):  # PostgreSQL: the statements in one round trip
                checks = [(self._lg_check_run(db, key, now, f), f) for f in fences.values()]
                for query, params, rec in rows:
                    inline = metered.get(query)
                    if inline is None:
                        done.append((db.execute(query, params), rec))
                        continue
                    (m,) = rec.meter()
                    db.execute(inline, (*params, *key, m.step, m.table, m.channel, m.bytes))
                if metered:  # the rest is metered whatever it found: no wait for counts
                    for _, rec in done:
                        for m in rec.meter():
                            db.execute(q.Q_PUT_METER, (*key, m.step, m.table, m.channel, m.bytes))
                    done = []
                    if put:
                        self._announce(db, (key,))
            for cur, fence in checks:
                if fence is not None and cur.rowcount != 1:
                    raise LeaseLost(key[1], fence.token)
            for cur, rec in done:
                # a checkpoint is always metered (an upsert); a value or write only when new
                if cur.rowcount == 1 or isinstance(rec, LgCheckpoint):
                    meter.extend(rec.meter())
            _meter(db, q, key, meter)
            if put and not metered:
                self._announce(db, (key,))
        if put:
            observe.moved((key,))  # the thread's streams wake (wayline.server.bell)

    def lg_checkpoints_of_runs(
        self, tenant_id: str, lg_run_ids: Sequence[str]
    ) -> list[tuple[str, str, str]]:
        """(thread, namespace, checkpoint id) of every checkpoint these LangGraph runs made."""
        if not lg_run_ids:
            return []
        marks = ", ".join([self.placeholder] * len(lg_run_ids))
        query = self.q.Q_LG_CHECKPOINTS_OF_RUNS.format(marks=marks)
        rows = self._read(query, (tenant_id, *lg_run_ids), tenant=tenant_id)
        return [(r[0], r[1], r[2]) for r in rows]

    def lg_delete_runs(self, tenant_id: str, lg_run_ids: Sequence[str]) -> int:
        """Delete the checkpoints (and their writes) LangGraph runs made, in every thread
        and namespace of the tenant. Returns the checkpoints deleted."""
        if not lg_run_ids:
            return 0
        marks = ", ".join([self.placeholder] * len(lg_run_ids))
        found = self.q.Q_LG_CHECKPOINTS_OF_RUNS.format(marks=marks)
        with self._tx(tenant_id) as db:
            rows = db.execute(found, (tenant_id, *lg_run_ids)).fetchall()
            for thread, ns, cp_id in rows:
                db.execute(self.q.Q_LG_DELETE_CHECKPOINT_WRITES, (tenant_id, thread, ns, cp_id))
                db.execute(self.q.Q_LG_DELETE_CHECKPOINT, (tenant_id, thread, ns, cp_id))
        return len(rows)

    def lg_values_over_writes(
        self, tenant_id: str, thread_id: str, checkpoint_ns: str, checkpoint_ids: Sequence[str]
    ) -> list[LgValue]:
        """Values stored by reference to the writes of these checkpoints."""
        if not checkpoint_ids:
            return []
        marks = ", ".join([self.placeholder] * len(checkpoint_ids))
        query = self.q.Q_LG_VALUES_OVER_WRITES.format(marks=marks)
        params = (tenant_id, thread_id, checkpoint_ns, *checkpoint_ids)
        return [
            self._lg_value(tenant_id, thread_id, r) for r in self._read(query, params, tenant_id)
        ]

    def lg_inline_value(self, tenant_id: str, thread_id: str, value: LgValue) -> None:
        """Store a value's items in its own row (``value.payload``) instead of by reference
        to writes: the same value, before those writes are deleted."""
        key = (tenant_id, thread_id)
        v, v_crc = self._lg_stored(tenant_id, thread_id, value)
        with self._tx(tenant_id) as db:
            params = (v.payload, v_crc, *key, v.checkpoint_ns, v.channel, v.version)
            db.execute(self.q.Q_LG_REWRITE_VALUE, params)
            _meter(db, self.q, key, v.meter())

    def lg_replace_thread(self, tenant_id: str, thread_id: str, rows: LgThreadRows) -> None:
        """Make ``rows`` the thread's whole LangGraph content, atomically (copy_thread into
        it, prune it). Payloads are sealed and checksummed for this thread."""
        q = self.q
        now = time.time()
        key = (tenant_id, thread_id)
        t, r = key
        checkpoints = [self._lg_stored(t, r, c) for c in rows.checkpoints]
        values = [self._lg_stored(t, r, v) for v in rows.values]
        writes = [self._lg_stored(t, r, w) for w in rows.writes]
        meter: list[MeterRow] = []
        with self._tx(tenant_id) as db:
            for query in q.Q_LG_DELETE_THREAD:
                db.execute(query, key)
            if not checkpoints:
                return
            self._lg_ensure_run(db, key, now)
            for c, c_crc in checkpoints:
                db.execute(q.Q_LG_PUT_CHECKPOINT, (*key, *_checkpoint_row(c, c_crc, c.created_at)))
                meter.extend(c.meter())
            for v, v_crc in values:
                db.execute(q.Q_LG_PUT_VALUE, (*key, *_value_row(v, v_crc)))
                meter.extend(v.meter())
            for w, w_crc in writes:
                db.execute(q.Q_LG_REPLACE_WRITE, (*key, *_write_row(w, w_crc)))
                meter.extend(w.meter())
            _meter(db, q, key, meter)

    # -- reads ------------------------------------------------------------------------

    def lg_get_checkpoint(
        self, tenant_id: str, thread_id: str, checkpoint_ns: str, checkpoint_id: str | None
    ) -> LgCheckpoint | None:
        """The checkpoint with this id, or the namespace's latest (``checkpoint_id`` None)."""
        if checkpoint_id is None:
            params: tuple[Any, ...] = (tenant_id, thread_id, checkpoint_ns)
            rows = self._read(self.q.Q_LG_LATEST_CHECKPOINT, params, tenant=tenant_id)
        else:
            params = (tenant_id, thread_id, checkpoint_ns, checkpoint_id)
            rows = self._read(self.q.Q_LG_GET_CHECKPOINT, params, tenant=tenant_id)
        return self._lg_checkpoint(tenant_id, thread_id, rows[0]) if rows else None

    def lg_list_checkpoints(
        self,
        tenant_id: str,
        *,
        thread_id: str | None,
        checkpoint_ns: str | None,
        before_id: str | None,
        limit: int | None,
    ) -> list[tuple[str, LgCheckpoint]]:
        """(thread, checkpoint), newest first, of a thread (or every thread of the tenant),
        of a namespace (or all), older than ``before_id``, at most ``limit``."""
        params = (
            tenant_id,
            thread_id,
            thread_id,
            checkpoint_ns,
            checkpoint_ns,
            before_id,
            before_id,
            limit if limit is not None else 2**62,
        )
        rows = self._read(self.q.Q_LG_LIST, params, tenant=tenant_id)
        return [(r[0], self._lg_checkpoint(tenant_id, r[0], r[1:])) for r in rows]

    def lg_load_value(
        self, tenant_id: str, thread_id: str, checkpoint_ns: str, channel: str, version: str
    ) -> LgValue | None:
        params = (tenant_id, thread_id, checkpoint_ns, channel, version)
        rows = self._read(self.q.Q_LG_LOAD_VALUE, params, tenant=tenant_id)
        return self._lg_value(tenant_id, thread_id, rows[0]) if rows else None

    def lg_load_value_run(
        self,
        tenant_id: str,
        thread_id: str,
        checkpoint_ns: str,
        channel: str,
        version: str,
        limit: int,
    ) -> list[LgValue]:
        """A version (first; none when it is not stored) and the newest rows of its chain
        below it, at most ``limit`` rows, newest first: the version and the one-version
        deltas under it in one read, where they took two (a round trip each on PostgreSQL)."""
        key = (tenant_id, thread_id, checkpoint_ns, channel)
        params = (*key, *key, version, version, limit)
        rows = self._read(self.q.Q_LG_VALUE_RUN, params, tenant=tenant_id)
        return [self._lg_value(tenant_id, thread_id, r) for r in rows]

    def lg_load_chain(
        self, tenant_id: str, thread_id: str, checkpoint_ns: str, channel: str, root: str
    ) -> list[LgValue]:
        """Every stored version of a channel whose chain starts at the full copy ``root``:
        one range read of the primary key, whatever the chain's length (bounded by the
        saver's full-copy rule)."""
        params = (tenant_id, thread_id, checkpoint_ns, channel, root)
        rows = self._read(self.q.Q_LG_LOAD_CHAIN, params, tenant=tenant_id)
        return [self._lg_value(tenant_id, thread_id, r) for r in rows]

    def lg_load_chain_below(
        self,
        tenant_id: str,
        thread_id: str,
        checkpoint_ns: str,
        channel: str,
        root: str,
        version: str,
        limit: int,
    ) -> list[LgValue]:
        """The newest ``limit`` versions of the chain from the full copy ``root`` at or
        below ``version``, newest first: a level of a value's path in one read, where
        walking its bases read one row a query (a round trip each on PostgreSQL)."""
        params = (tenant_id, thread_id, checkpoint_ns, channel, root, version, limit)
        rows = self._read(self.q.Q_LG_CHAIN_BELOW, params, tenant=tenant_id)
        return [self._lg_value(tenant_id, thread_id, r) for r in rows]

    def lg_load_chain_at(
        self,
        tenant_id: str,
        thread_id: str,
        checkpoint_ns: str,
        channel: str,
        root: str,
        counters: Sequence[str],
    ) -> list[LgValue]:
        """The versions of the chain from ``root`` whose 10-digit counters (the version's
        prefix, ``WaylineSaver.get_next_version``) are ``counters``: one read a hundred."""
        out: list[LgValue] = []
        wanted = sorted(set(counters))
        for i in range(0, len(wanted), 100):
            chunk = wanted[i : i + 100]
            marks = ", ".join([self.placeholder] * len(chunk))
            query = self.q.Q_LG_CHAIN_AT.format(marks=marks)
            low, high = chunk[0], f"{int(chunk[-1]) + 1:010d}"  # digits: any collation
            params = (tenant_id, thread_id, checkpoint_ns, channel, root, low, high, *chunk)
            rows = self._read(query, params, tenant=tenant_id)
            out += [self._lg_value(tenant_id, thread_id, r) for r in rows]
        return out

    def lg_load_writes(
        self, tenant_id: str, thread_id: str, checkpoint_ns: str, checkpoint_id: str
    ) -> list[LgWrite]:
        """A checkpoint's pending writes in LangGraph's ``writes_sort_key`` order."""
        params = (tenant_id, thread_id, checkpoint_ns, checkpoint_id)
        rows = self._read(self.q.Q_LG_LOAD_WRITES, params, tenant=tenant_id)
        return [self._lg_write(tenant_id, thread_id, r) for r in rows]

    def lg_load_channel_writes(
        self,
        tenant_id: str,
        thread_id: str,
        checkpoint_ns: str,
        channel: str,
        checkpoint_ids: Sequence[str],
    ) -> list[LgWrite]:
        """One channel's pending writes of these checkpoints, by checkpoint in LangGraph's
        order: one range read (checkpoint ids grow with time), rows outside the set skipped."""
        wanted = set(checkpoint_ids)
        if not wanted:
            return []
        params = (tenant_id, thread_id, checkpoint_ns, min(wanted), max(wanted), channel)
        rows = self._read(self.q.Q_LG_CHANNEL_WRITES, params, tenant=tenant_id)
        return [self._lg_write(tenant_id, thread_id, r) for r in rows if r[1] in wanted]

    def lg_thread_rows(self, tenant_id: str, thread_id: str) -> LgThreadRows:
        """Every LangGraph row of a thread, opened (copy_thread, prune)."""
        t, r = tenant_id, thread_id
        key = (t, r)
        return LgThreadRows(
            checkpoints=[
                self._lg_checkpoint(t, r, row)
                for row in self._read(self.q.Q_LG_THREAD_CHECKPOINTS, key, tenant=t)
            ],
            values=[
                self._lg_value(t, r, row)
                for row in self._read(self.q.Q_LG_THREAD_VALUES, key, tenant=t)
            ],
            writes=[
                self._lg_write(t, r, row)
                for row in self._read(self.q.Q_LG_THREAD_WRITES, key, tenant=t)
            ],
        )

    # -- rows -------------------------------------------------------------------------

    def _lg_checkpoint(self, t: str, thread: str, r: Sequence[Any]) -> LgCheckpoint:
        ns, cp_id, parent, lg_run, step, payload, check, created = r
        rec = LgCheckpoint(ns, cp_id, parent, lg_run, int(step), bytes(payload), float(created))
        opened: LgCheckpoint = self._lg_opened(t, thread, rec, check)
        return opened

    def _lg_value(self, t: str, thread: str, r: Sequence[Any]) -> LgValue:
        ns, channel, version, base, root, writes_of, payload, check = r
        rec = LgValue(ns, channel, version, base, root, writes_of, bytes(payload))
        opened: LgValue = self._lg_opened(t, thread, rec, check)
        return opened

    def _lg_write(self, t: str, thread: str, r: Sequence[Any]) -> LgWrite:
        ns, cp_id, task_id, idx, channel, path, payload, check = r
        rec = LgWrite(ns, cp_id, task_id, int(idx), channel, path, bytes(payload))
        opened: LgWrite = self._lg_opened(t, thread, rec, check)
        return opened


def _identity(t: str, thread: str, rec: LgRecord) -> tuple[tuple[Any, ...], str]:
    """A row's identity (table first; its checksum covers it) and sealing context (a
    ciphertext moved to another thread, namespace, version or checkpoint does not open)."""
    parts: tuple[Any, ...]
    if isinstance(rec, LgCheckpoint):
        table, tag, parts = "lg_checkpoints", "lgc", (rec.checkpoint_ns, rec.checkpoint_id)
    elif isinstance(rec, LgValue):
        table, tag = "lg_values", "lgv"
        parts = (rec.checkpoint_ns, rec.channel, rec.version)
    else:
        table, tag = "lg_writes", "lgw"
        parts = (rec.checkpoint_ns, rec.checkpoint_id, rec.task_id, rec.idx)
    return (table, t, thread, *parts), "|".join(map(str, (thread, tag, *parts)))


def lg_payload_columns(
    table: str, t: str, r: str, row: dict[str, Any]
) -> list[tuple[str, str, tuple[Any, ...], str]]:
    """(column, checksum column, identity, sealing context) of a dumped LangGraph row, for
    export and ``check_rows``: the same identities the write path uses."""
    rec: LgRecord
    if table == "lg_checkpoints":
        rec = LgCheckpoint(row["checkpoint_ns"], row["checkpoint_id"], None, None, 0, b"")
    elif table == "lg_values":
        rec = LgValue(row["checkpoint_ns"], row["channel"], row["version"], None, "", None, b"")
    elif table == "lg_writes":
        ns, cp, task, idx = row["checkpoint_ns"], row["checkpoint_id"], row["task_id"], row["idx"]
        rec = LgWrite(ns, cp, task, int(idx), "", "", b"")
    else:
        return []
    ident, aad = _identity(t, r, rec)
    return [("payload", "crc", ident, aad)]


def _merged(a: LgFence | None, b: LgFence | None) -> LgFence | None:
    """Two fences of one token as one check: the later step, and the inbox taken if either
    took it."""
    if a is None or b is None:
        return b if a is None else a
    step = a.step if b.step is None else b.step
    return LgFence(a.token, step, a.take_inbox or b.take_inbox)


def _meter(db: Any, q: SimpleNamespace, key: tuple[str, str], meter: list[MeterRow]) -> None:
    if meter:
        rows = [(*key, m.step, m.table, m.channel, m.bytes) for m in meter]
        db.executemany(q.Q_PUT_METER, rows)


def _checkpoint_row(c: LgCheckpoint, check: int, now: float) -> tuple[Any, ...]:
    return (
        c.checkpoint_ns,
        c.checkpoint_id,
        c.parent_id,
        c.lg_run_id,
        c.step,
        c.payload,
        check,
        now,
    )


def _value_row(v: LgValue, check: int) -> tuple[Any, ...]:
    return (v.checkpoint_ns, v.channel, v.version, v.base, v.root, v.writes_of, v.payload, check)


def _write_row(w: LgWrite, check: int) -> tuple[Any, ...]:
    return (
        w.checkpoint_ns,
        w.checkpoint_id,
        w.task_id,
        w.idx,
        w.channel,
        w.task_path,
        w.payload,
        check,
    )
