"""Effects over SQL: the ledger's rows (an intent, then its outcome), each write conditional
on the status it expects, so two writers never both record one effect. The contract
(``EffectsContract``) and its SQL (``EffectsSQL``); a row maps to an ``EffectRecord`` by
column name (``key`` is stored as ``effect_key``)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from wayline.errors import EffectRecordChanged
from wayline.store.records import CommitBatch, EffectRecord, EffectStatus, EffectWrite
from wayline.store.sql_core import Executor, SQLCore

__all__ = ["EffectsContract", "EffectsSQL"]


class EffectsContract(Protocol):
    """The effect ledger's records, keyed by tenant and effect key."""

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


class EffectsSQL(SQLCore):
    """``EffectsContract`` over SQL (``SQLStore`` inherits it). A run's own effect writes
    are part of its commits (``StepsSQL._write`` calls ``_put_effect``)."""

    if TYPE_CHECKING:  # StepsSQL's: the commit as written here, whatever wraps ``commit``

        def _commit_fenced(
            self, tenant_id: str, run_id: str, token: int, batch: CommitBatch
        ) -> None: ...

    def _effect(self, row: Sequence[Any]) -> EffectRecord:
        """An effect record from its row, by column name; the result verified and opened."""
        r = dict(zip(self.q.EFFECT_COLUMN_NAMES, row, strict=True))
        t, key = r["tenant_id"], r.pop("effect_key")
        r["result"] = self.payloads.get_opt(
            ("effects", t, key), t, f"e|{key}", r["result"], r.pop("result_crc")
        )
        return EffectRecord(key=key, **r)

    def get_effect(self, tenant_id: str, key: str) -> EffectRecord | None:
        rows = self._read(self.q.Q_GET_EFFECT, (tenant_id, key), tenant=tenant_id)
        return self._effect(rows[0]) if rows else None

    def list_effects(self, tenant_id: str, run_id: str) -> list[EffectRecord]:
        return [
            self._effect(r)
            for r in self._read(self.q.Q_LIST_EFFECTS, (tenant_id, run_id), tenant=tenant_id)
        ]

    def put_effect(
        self,
        run_id: str,
        token: int | None,
        record: EffectRecord,
        *,
        expect: EffectStatus | None,
    ) -> bool:
        """Write ``record`` if it is still in status ``expect`` (None: absent). With a
        ``token``, only while it is ``run_id``'s current fencing token (else LeaseLost);
        without one it is an operator's resolution. False: someone else changed it first.
        (A run's own effect writes go through ``commit``, as a batch's ``effects``.)"""
        if token is not None:  # the run's own write: the same fenced path as its commits
            batch = CommitBatch(effects=[EffectWrite(record, expect)])
            try:  # not self.commit, which instrumentation may wrap: traced once, as an effect
                self._commit_fenced(record.tenant_id, run_id, token, batch)
            except EffectRecordChanged:
                return False
            return True
        with self._tx(record.tenant_id) as db:
            return self._put_effect(db, run_id, record, expect, time.time())

    def _put_effect(
        self,
        db: Executor,
        run_id: str,
        record: EffectRecord,
        expect: EffectStatus | None,
        now: float,
    ) -> bool:
        """The effect row, if the stored one is in status ``expect``; its result metered."""
        q = self.q
        t = record.tenant_id
        result, result_crc = self.payloads.put_opt(
            ("effects", t, record.key), t, f"e|{record.key}", record.result
        )
        if expect is None:
            row = {**_effect_row(record), "result": result, "result_crc": result_crc}
            row.update(created_at=now, updated_at=now)
            cur = db.execute(q.Q_INSERT_EFFECT, [row[c] for c in q.EFFECT_COLUMN_NAMES])
        else:
            cur = db.execute(
                q.Q_UPDATE_EFFECT,
                (
                    record.attempt,
                    record.status,
                    record.fencing_token,
                    result,
                    record.error,
                    now,
                    result_crc,
                    t,
                    record.key,
                    expect,
                ),
            )
        if cur.rowcount != 1:
            return False
        if result is not None:
            meter = dataclasses.replace(record, result=result).meter()[0]
            db.execute(
                q.Q_PUT_METER, (t, run_id, meter.step, meter.table, meter.channel, meter.bytes)
            )
        return True


def _effect_row(record: EffectRecord) -> dict[str, Any]:
    """An effect record by column name (``key`` is stored as ``effect_key``)."""
    row = {f.name: getattr(record, f.name) for f in dataclasses.fields(record)}
    row["effect_key"] = row.pop("key")
    return row
