"""Governance and audit over SQL: approvals (a run's interrupts and the decisions on them),
the audit trail, and what the control plane does to a run's rows as a whole (export, count,
verify, purge). The contract (``GovernanceContract``) and its SQL (``GovernanceSQL``),
written once for SQLite and PostgreSQL. Erasure of a class of values is beside it
(``wayline.store.sql_rewrite``), and so are subject keys (``wayline.store.sql_subject_keys``)."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any, Protocol

from wayline.errors import CodecError, CorruptionError
from wayline.store.lg_sql import lg_payload_columns
from wayline.store.payloads import checksum as crc
from wayline.store.payloads import json_column
from wayline.store.records import AuditRecord, InterruptRecord
from wayline.store.sql_core import SQLCore
from wayline.store.sql_runs import inbox_ident
from wayline.store.stream_sql import stream_event_ident

__all__ = ["GovernanceContract", "GovernanceSQL", "audit_row", "interrupt_row"]


class GovernanceContract(Protocol):
    """Approvals and their audit, and a run's rows as a whole (export, verify, purge)."""

    def load_interrupts(self, tenant_id: str, run_id: str, step: int) -> list[InterruptRecord]: ...

    def answer_interrupt(
        self, tenant_id: str, run_id: str, interrupt_id: str, resume: bytes, audit: AuditRecord
    ) -> bool:
        """Record a decision on an open interrupt with its audit line, atomically; False if
        the interrupt was answered already."""
        ...

    def append_audit(self, entry: AuditRecord) -> None: ...

    def load_audit(self, tenant_id: str, run_id: str) -> list[AuditRecord]: ...

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


class GovernanceSQL(SQLCore):
    """``GovernanceContract`` over SQL (``SQLStore`` inherits it). A step's interrupts and
    audit lines are written by its commit (``StepsSQL._write``, with ``interrupt_row`` and
    ``audit_row``)."""

    def load_interrupts(self, tenant_id: str, run_id: str, step: int) -> list[InterruptRecord]:
        rows = self._read(self.q.Q_LOAD_INTERRUPTS, (tenant_id, run_id, step), tenant=tenant_id)
        p, aad = self.payloads, f"{run_id}|i"
        return [
            InterruptRecord(
                step=s,
                task_id=t,
                idx=i,
                interrupt_id=iid,
                value=p.get(_question_ident(tenant_id, run_id, iid), tenant_id, aad, v, crc),
                resume=p.get_opt(_answer_ident(tenant_id, run_id, iid), tenant_id, aad, r, rcrc),
                digest=digest,
                approvers=_approvers(_question_ident(tenant_id, run_id, iid), approvers),
                expires_at=expires,
                cls=cls,
                on_expire=on_expire,
            )
            for s, t, i, iid, v, r, digest, approvers, expires, crc, rcrc, cls, on_expire in rows
        ]

    def answer_interrupt(
        self, tenant_id: str, run_id: str, interrupt_id: str, resume: bytes, audit: AuditRecord
    ) -> bool:
        """Record a decision on an open interrupt and its audit line, in one transaction.
        False (and nothing written) if it was answered already."""
        now = time.time()
        ident = _answer_ident(tenant_id, run_id, interrupt_id)
        stored, crc = self.payloads.put(ident, tenant_id, f"{run_id}|i", resume)
        with self._tx(tenant_id) as db:
            params = (stored, crc, tenant_id, run_id, interrupt_id)
            if db.execute(self.q.Q_ANSWER_INTERRUPT, params).rowcount != 1:
                return False
            db.execute(self.q.Q_APPEND_AUDIT, audit_row(audit, now))
            db.execute(self.q.Q_PUT_METER, (tenant_id, run_id, -1, "interrupts", "", len(stored)))
        return True

    def append_audit(self, entry: AuditRecord) -> None:
        with self._tx(entry.tenant_id) as db:
            db.execute(self.q.Q_APPEND_AUDIT, audit_row(entry, time.time()))

    def load_audit(self, tenant_id: str, run_id: str) -> list[AuditRecord]:
        return [
            AuditRecord(*row)
            for row in self._read(self.q.Q_LOAD_AUDIT, (tenant_id, run_id), tenant=tenant_id)
        ]

    def dump_run(self, tenant_id: str, run_id: str) -> dict[str, list[dict[str, Any]]]:
        """Every row the store holds for a run, table by table, as stored (payloads are
        codec bytes); blobs it references under ``blobs``. For export and for audits."""
        key = (tenant_id, run_id)
        out = {}
        for table in self.q.RUN_TABLES:
            rows = self._read_dicts(self.q.Q_DUMP.format(table=table), key, tenant=tenant_id)
            out[table] = [self._open_row(table, tenant_id, run_id, row) for row in rows]
        out["blobs"] = [
            {
                "digest": d,
                "payload": self.payloads.get(("blobs", tenant_id, d), tenant_id, f"b|{d}", p, crc),
            }
            for d, p, crc in self._read(self.q.Q_DUMP_BLOBS, key, tenant=tenant_id)
        ]
        return out

    def count_rows(self, tenant_id: str, run_id: str) -> dict[str, int]:
        key = (tenant_id, run_id)
        counts = {}
        for table in self.q.RUN_TABLES:
            query = self.q.Q_COUNT_ROWS.format(table=table)
            ((n,),) = self._read(query, key, tenant=tenant_id)
            counts[table] = int(n)
        counts["blobs"] = counts["blob_refs"]  # each reference names one blob of the tenant
        return counts

    def check_rows(self, tenant_id: str, run_id: str) -> tuple[int, list[CorruptionError]]:
        """Every payload row of a run verified (its checksum; opened, when sealed), its
        steps' deltas all present and its blobs all there: every problem found, not only
        the first. Returns (rows checked, problems). Writes nothing."""
        key = (tenant_id, run_id)
        problems: list[CorruptionError] = []
        checked = 0
        steps: list[int] = []
        last = -1
        for table in self.q.RUN_TABLES:
            rows = self._read_dicts(self.q.Q_DUMP.format(table=table), key, tenant=tenant_id)
            for row in rows:
                checked += 1
                if table == "deltas":
                    steps.append(int(row["step"]))
                elif table == "runs":
                    last = int(row["step"])
                for column, crc_column, ident, aad in _payload_columns(table, *key, row):
                    problems.extend(
                        self._check(ident, tenant_id, aad, row[column], row[crc_column])
                    )
        present = set(steps)
        problems.extend(
            CorruptionError.of(("deltas", *key, step), "the row is missing")
            for step in range(0, last + 1)
            if step not in present
        )
        found = set()
        for digest, payload, crc_ in self._read(self.q.Q_DUMP_BLOBS, key, tenant=tenant_id):
            checked += 1
            found.add(digest)
            problems.extend(
                self._check(("blobs", tenant_id, digest), tenant_id, f"b|{digest}", payload, crc_)
            )
        for (digest,) in self._read(self.q.Q_BLOBS_OF_RUN, key, tenant=tenant_id):
            if digest not in found:
                problems.append(
                    CorruptionError.of(("blobs", tenant_id, digest), "the row is missing")
                )
        return checked, problems

    def _check(
        self, ident: tuple[Any, ...], tenant_id: str, aad: str, stored: Any, crc_: int | None
    ) -> list[CorruptionError]:
        try:
            self.payloads.get_opt(ident, tenant_id, aad, stored, crc_)
        except CorruptionError as exc:
            return [exc]
        except CodecError as exc:  # sealed, but it does not open (key, tampering)
            return [CorruptionError.of(ident, str(exc))]
        return []

    def _open_row(
        self, table: str, tenant_id: str, run_id: str, row: dict[str, Any]
    ) -> dict[str, Any]:
        """A dumped row with its payload columns verified and opened (checksums dropped)."""
        out = {k: v for k, v in row.items() if not k.endswith("crc")}
        for column, crc_column, ident, aad in _payload_columns(table, tenant_id, run_id, row):
            out[column] = self.payloads.get_opt(ident, tenant_id, aad, row[column], row[crc_column])
        return out

    def runs_before(self, tenant_id: str, before: float, statuses: Sequence[str]) -> list[str]:
        """Ids of the tenant's runs in one of ``statuses`` last updated before ``before``."""
        marks = ", ".join([self.placeholder] * len(statuses))
        query = self.q.Q_RUNS_BEFORE.format(statuses=marks)
        return [r for (r,) in self._read(query, (tenant_id, before, *statuses), tenant=tenant_id)]

    def purge_run(self, tenant_id: str, run_id: str) -> int:
        """Delete every row of a run, and the blobs no other run of the tenant references,
        in one transaction. Returns the number of rows deleted."""
        key = (tenant_id, run_id)
        with self._tx(tenant_id) as db:
            digests = [d for (d,) in db.execute(self.q.Q_BLOBS_OF_RUN, key).fetchall()]
            deleted = sum(db.execute(query, key).rowcount for query in self.q.Q_PURGE)
            for i in range(0, len(digests), 500):
                chunk = digests[i : i + 500]
                marks = ", ".join([self.placeholder] * len(chunk))
                query = self.q.Q_PURGE_ORPHAN_BLOBS.format(marks=marks)
                deleted += db.execute(query, (tenant_id, *chunk)).rowcount
        return deleted


def _approvers(ident: tuple[str, ...], stored: str | None) -> tuple[str, ...] | None:
    """Who may decide a question (None: anyone of the tenant); a column that cannot be
    read is the question's corruption, never a guess at who may decide."""
    if stored is None:
        return None
    return json_column(ident, stored, "who may decide it", lambda v: tuple(str(w) for w in v))


def interrupt_row(key: tuple[str, str], i: InterruptRecord) -> tuple[Any, ...]:
    """An interrupt's row, its payloads as stored (sealed already) with their checksums."""
    t, r = key
    approvers = None if i.approvers is None else json.dumps(list(i.approvers))
    answer = None if i.resume is None else crc(_answer_ident(t, r, i.interrupt_id), i.resume)
    return (
        *key,
        i.step,
        i.task_id,
        i.idx,
        i.interrupt_id,
        i.value,
        i.resume,
        i.digest,
        approvers,
        i.expires_at,
        crc(_question_ident(t, r, i.interrupt_id), i.value),
        answer,
        i.cls,
        i.on_expire,
    )


def _question_ident(tenant_id: str, run_id: str, interrupt_id: str) -> tuple[str, ...]:
    return ("interrupts", tenant_id, run_id, interrupt_id, "value")


def _answer_ident(tenant_id: str, run_id: str, interrupt_id: str) -> tuple[str, ...]:
    return ("interrupts", tenant_id, run_id, interrupt_id, "resume")


def _payload_columns(
    table: str, t: str, r: str, row: dict[str, Any]
) -> list[tuple[str, str, tuple[Any, ...], str]]:
    """(column, checksum column, row identity, sealing context) of each payload column of a
    row of ``table``: the same identities the write path uses."""
    if table in ("runs", "run_queue"):  # a queued input moves to the inbox as it is
        return [("inbox", "inbox_crc", inbox_ident(t, r), f"{r}|n")]
    if table == "deltas":
        return [("payload", "crc", ("deltas", t, r, row["step"]), f"{r}|d")]
    if table == "snapshots":
        return [("payload", "crc", ("snapshots", t, r, row["step"]), f"{r}|s")]
    if table == "segments":
        return [("payload", "crc", ("segments", t, r, row["seg_id"]), f"{r}|g")]
    if table == "pending_writes":
        ident = ("pending_writes", t, r, row["step"], row["task_id"])
        return [("payload", "crc", ident, f"{r}|p")]
    if table == "interrupts":
        iid = row["interrupt_id"]
        return [
            ("value", "crc", _question_ident(t, r, iid), f"{r}|i"),
            ("resume", "resume_crc", _answer_ident(t, r, iid), f"{r}|i"),
        ]
    if table == "effects":
        key = row["effect_key"]
        return [("result", "result_crc", ("effects", t, key), f"e|{key}")]
    if table == "stream_events":
        return [("payload", "crc", stream_event_ident(t, r, row["seq"]), f"{r}|v")]
    return lg_payload_columns(table, t, r, row)


def audit_row(e: AuditRecord, now: float) -> tuple[Any, ...]:
    return (e.tenant_id, e.run_id, e.at or now, e.actor, e.action, e.digest, e.outcome, e.detail)
