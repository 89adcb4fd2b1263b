"""Erasure inside a run's rows: what SQLite and PostgreSQL share to redact a class of values.

An erasure must reach every row that holds a value (a delta, a pending write, a snapshot,
a segment, a blob, a queued input), not only the index to it. The store does the row work
here, in one transaction, through the same payload path as every write (open, rewrite,
seal, checksum), and leaves *what* to erase to a ``RowRewriter`` from the control plane,
which knows the run's classes. Rows whose bytes the rewriter returns unchanged are not
written, so the receipt counts only rows that held erased values.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from contextlib import AbstractContextManager
from types import SimpleNamespace
from typing import Any, Protocol

from wayline.errors import LeaseConflictError
from wayline.store.payloads import Payloads

__all__ = ["ErasureContract", "RewriteMixin", "RowRewriter"]

Q_INBOX = "SELECT inbox, inbox_crc FROM runs WHERE tenant_id = ? AND run_id = ?"
Q_LEASE = "SELECT lease_owner, lease_expires_at FROM runs WHERE tenant_id = ? AND run_id = ?"
Q_QUEUED = (
    "SELECT COUNT(*) FROM run_queue WHERE tenant_id = ? AND run_id = ? AND promoted_at IS NULL"
)
Q_DELTAS = "SELECT step, payload, crc FROM deltas WHERE tenant_id = ? AND run_id = ?"
Q_SNAPSHOTS = "SELECT step, payload, crc FROM snapshots WHERE tenant_id = ? AND run_id = ?"
Q_PENDING = (
    "SELECT step, task_id, payload, crc FROM pending_writes WHERE tenant_id = ? AND run_id = ?"
)
Q_SEGMENTS = "SELECT seg_id, channel FROM segments WHERE tenant_id = ? AND run_id = ?"
Q_REFS = "SELECT digest FROM blob_refs WHERE tenant_id = ? AND run_id = ?"
Q_INTERRUPTS = (
    "SELECT interrupt_id, value, crc, resume, resume_crc, cls FROM interrupts "
    "WHERE tenant_id = ? AND run_id = ? AND cls <> 'default'"
)
Q_SET_INTERRUPT = (
    "UPDATE interrupts SET value = ?, crc = ?, resume = ?, resume_crc = ? "
    "WHERE tenant_id = ? AND run_id = ? AND interrupt_id = ?"
)
Q_EFFECTS = (
    "SELECT effect_key, result, result_crc, cls FROM effects "
    "WHERE tenant_id = ? AND run_id = ? AND cls <> 'default' AND result IS NOT NULL"
)
Q_SET_EFFECT = (
    "UPDATE effects SET result = ?, result_crc = ? WHERE tenant_id = ? AND effect_key = ?"
)


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


class ErasureContract(Protocol):
    """Erasure of a class of values from a run's rows, and the lookups that find the runs."""

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


class RewriteMixin:
    """``rewrite_run``, ``runs_of_subject``, ``tenants``, ``run_ids`` and ``scrub`` for
    ``SQLStore``."""

    q: SimpleNamespace
    placeholder: str
    payloads: Payloads

    def _tx(self, tenant: str | None = None) -> AbstractContextManager[Any]:
        raise NotImplementedError

    def _read(self, query: str, params: Any, tenant: str | None = None) -> list[Any]:
        raise NotImplementedError

    def _ph(self, query: str) -> str:
        return query.replace("?", self.placeholder)

    def runs_of_subject(self, tenant_id: str, subject: str) -> list[str]:
        rows = self._read(self.q.Q_RUNS_OF_SUBJECT, (tenant_id, subject), tenant=tenant_id)
        return [r for (r,) in rows]

    def run_ids(self, tenant_id: str) -> list[str]:
        return [r for (r,) in self._read(self.q.Q_ALL_RUN_IDS, (tenant_id,), tenant=tenant_id)]

    def tenants(self) -> list[str]:
        return [t for (t,) in self._read(self.q.Q_TENANTS, ())]

    def scrub(self) -> dict[str, Any]:
        return {}

    def _rewrite_classed(
        self, db: Any, tenant_id: str, run_id: str, rewriter: RowRewriter, counts: dict[str, int]
    ) -> None:
        """Interrupts and effect results labelled with a class: whole payloads."""
        p, key = self.payloads, (tenant_id, run_id)
        aad = f"{run_id}|i"
        for iid, value, crc, resume, rcrc, cls in db.execute(
            self._ph(Q_INTERRUPTS), key
        ).fetchall():
            q_ident = ("interrupts", *key, iid, "value")
            a_ident = ("interrupts", *key, iid, "resume")
            old = p.get(q_ident, tenant_id, aad, value, crc)
            new = rewriter.erase_value(cls, old)
            if new == old:
                continue
            sealed, new_crc = p.put(q_ident, tenant_id, aad, new)
            answer, answer_crc = None, None
            if resume is not None:
                opened = p.get(a_ident, tenant_id, aad, resume, rcrc)
                answer, answer_crc = p.put(
                    a_ident, tenant_id, aad, rewriter.erase_value(cls, opened)
                )
            params = (sealed, new_crc, answer, answer_crc, *key, iid)
            db.execute(self._ph(Q_SET_INTERRUPT), params)
            counts["interrupts"] += 1
        for effect_key, result, crc, cls in db.execute(self._ph(Q_EFFECTS), key).fetchall():
            ident, e_aad = ("effects", tenant_id, effect_key), f"e|{effect_key}"
            old = p.get(ident, tenant_id, e_aad, result, crc)
            new = rewriter.erase_value(cls, old)
            if new != old:
                sealed, new_crc = p.put(ident, tenant_id, e_aad, new)
                db.execute(self._ph(Q_SET_EFFECT), (sealed, new_crc, tenant_id, effect_key))
                counts["effects"] += 1

    def rewrite_run(
        self, tenant_id: str, run_id: str, rewriter: RowRewriter, redacted: Mapping[str, float]
    ) -> dict[str, int]:
        key = (tenant_id, run_id)
        p, q = self.payloads, self.q
        counts = {"runs": 0, "deltas": 0, "snapshots": 0, "pending_writes": 0}
        counts.update(segments=0, blob_refs=0, blobs=0, interrupts=0, effects=0)
        with self._tx(tenant_id) as db:
            lease = db.execute(self._ph(Q_LEASE), key).fetchone()
            if lease is not None and lease[0] is not None and (lease[1] or 0) > time.time():
                raise LeaseConflictError(
                    f"run {run_id!r} is being executed by {lease[0]!r}: its worker holds the "
                    "values in memory and would write them again. Cancel the run (or wait "
                    "until it settles), then erase; nothing was changed"
                )
            (queued,) = db.execute(self._ph(Q_QUEUED), key).fetchone()
            if int(queued):  # inputs not applied yet: erasing past them would miss them
                raise LeaseConflictError(
                    f"run {run_id!r} has {int(queued)} input(s) queued behind its current one "
                    "(multitask_strategy enqueue): let them run or cancel them, then erase; "
                    "nothing was changed"
                )
            for inbox, crc in db.execute(self._ph(Q_INBOX), key).fetchall():
                if inbox is None:
                    continue
                ident, aad = ("runs", *key, "inbox"), f"{run_id}|n"
                new = rewriter.inbox(p.get(ident, tenant_id, aad, inbox, crc))
                if new is None:
                    db.execute(q.Q_REWRITE["runs"], (None, None, *key))
                    counts["runs"] += 1
            for table, query, aad, rewrite in (
                ("deltas", Q_DELTAS, "d", rewriter.results),
                ("snapshots", Q_SNAPSHOTS, "s", rewriter.snapshot),
                ("pending_writes", Q_PENDING, "p", rewriter.results),
            ):
                for *ids, stored, crc in db.execute(self._ph(query), key).fetchall():
                    ident = (table, *key, *ids)
                    old = p.get(ident, tenant_id, f"{run_id}|{aad}", stored, crc)
                    new = rewrite(old)
                    if new != old:
                        sealed, new_crc = p.put(ident, tenant_id, f"{run_id}|{aad}", new)
                        db.execute(q.Q_REWRITE[table], (sealed, new_crc, *key, *ids))
                        counts[table] += 1
            for seg_id, channel in db.execute(self._ph(Q_SEGMENTS), key).fetchall():
                if rewriter.drop_segment(channel):
                    counts["segments"] += db.execute(q.Q_DELETE_SEGMENT, (*key, seg_id)).rowcount
            self._rewrite_classed(db, tenant_id, run_id, rewriter, counts)
            kept = rewriter.referenced()
            for (digest,) in db.execute(self._ph(Q_REFS), key).fetchall():
                if digest in kept:
                    continue
                counts["blob_refs"] += db.execute(q.Q_DROP_BLOB_REF, (*key, digest)).rowcount
                params = (tenant_id, digest, tenant_id, digest)
                counts["blobs"] += db.execute(q.Q_DROP_BLOB_IF_ORPHAN, params).rowcount
            (current,) = db.execute(q.Q_REDACTED_OF, key).fetchone() or ("{}",)
            merged = {**json.loads(current or "{}"), **redacted}
            db.execute(q.Q_SET_REDACTED, (json.dumps(merged, sort_keys=True), *key))
        return counts
