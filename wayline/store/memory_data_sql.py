"""Long-term memory by data subject and data class (``wayline.memory``): export and
erasure by subject, retention by class, the bytes held. Over the item tables of
``memory_sql``, whose ``MemorySQL`` it extends (it reads rows through its ``_row``)."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, Protocol

from wayline.store.memory_sql import HISTORY_COLUMNS, ITEM_COLUMNS, MemorySQL

__all__ = ["MemoryDataContract", "MemoryDataSQL"]

Q_SUBJECT_ITEMS = f"SELECT {ITEM_COLUMNS} FROM memory_items WHERE tenant_id = ? AND subject = ?"
Q_SUBJECT_HISTORY = (
    f"SELECT {HISTORY_COLUMNS} FROM memory_history WHERE tenant_id = ? AND subject = ?"
)
Q_ERASE_ITEMS = "DELETE FROM memory_items WHERE tenant_id = ? AND subject = ?"
Q_ERASE_HISTORY = "DELETE FROM memory_history WHERE tenant_id = ? AND subject = ?"
Q_ERASE_VECTORS = """
DELETE FROM memory_vectors WHERE tenant_id = ? AND EXISTS (SELECT 1 FROM memory_items i
    WHERE i.tenant_id = memory_vectors.tenant_id AND i.namespace = memory_vectors.namespace
    AND i.key = memory_vectors.key AND i.subject = ?)
"""
Q_ERASE_METER = "DELETE FROM meter WHERE tenant_id = ? AND tbl = 'memory_items' AND channel = ?"
_CLASS = "COALESCE(cls, 'default')"  # an item with no class is of wayline's default class
Q_CLASSES = f"""
SELECT {_CLASS}, COUNT(*), COALESCE(SUM(LENGTH(value)), 0), MIN(updated_at) FROM memory_items
WHERE tenant_id = ? GROUP BY {_CLASS}
"""
Q_AGED_ITEMS = f"WHERE tenant_id = ? AND {_CLASS} = ? AND updated_at < ?"
"""Items of a class last written before a time (a retention rule's age is since the last write)."""
Q_AGED_HISTORY = f"""WHERE tenant_id = ? AND (EXISTS (SELECT 1 FROM memory_items i
    WHERE i.tenant_id = memory_history.tenant_id AND i.namespace = memory_history.namespace
    AND i.key = memory_history.key AND COALESCE(i.cls, 'default') = ? AND i.updated_at < ?)
    OR ({_CLASS} = ? AND ended_at < ?))"""
"""Kept versions of those items, and of the class's versions that ended before that time."""
Q_AGED_VECTORS = """
DELETE FROM memory_vectors WHERE tenant_id = ? AND EXISTS (SELECT 1 FROM memory_items i
    WHERE i.tenant_id = memory_vectors.tenant_id AND i.namespace = memory_vectors.namespace
    AND i.key = memory_vectors.key AND COALESCE(i.cls, 'default') = ? AND i.updated_at < ?)
"""
Q_BYTES = """
SELECT 'memory_items', COALESCE(SUM(LENGTH(value)), 0) FROM memory_items WHERE tenant_id = ?
UNION ALL
SELECT 'memory_history', COALESCE(SUM(LENGTH(value)), 0) FROM memory_history
WHERE tenant_id = ?
"""


class MemoryDataContract(Protocol):
    """What the store holds of a data subject or a data class in long-term memory."""

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


class MemoryDataSQL(MemorySQL):
    def memory_of_subject(self, tenant_id: str, subject: str) -> list[dict[str, Any]]:
        """Every item and kept version about a data subject, opened (export by subject)."""
        out = []
        for query in (Q_SUBJECT_ITEMS, Q_SUBJECT_HISTORY):
            for r in self._read(self._mq(query), (tenant_id, subject), tenant=tenant_id):
                row = self._row(tenant_id, r)
                out.append(
                    {
                        "namespace": list(row.namespace),
                        "key": row.key,
                        "value": row.value,
                        "version": row.version,
                        "ended": row.ended,
                        "run_id": row.run_id,
                        "step": row.step,
                        "node": row.node,
                        "source": row.source,
                        "observed_at": row.observed_at,
                        "cls": row.cls,
                        "invalid_reason": row.invalid_reason,
                    }
                )
        return out

    def memory_erase_subject(
        self, tenant_id: str, subject: str, classes: Collection[str] | None = None
    ) -> int:
        """Delete every item, kept version and embedding about a subject (only those of
        ``classes`` when given); rows deleted."""
        deleted = 0
        only, params = "", [tenant_id, subject]
        if classes is not None:
            if not classes:
                return 0
            only = f" AND cls IN ({', '.join(['?'] * len(classes))})"
            params += sorted(classes)
        spaces = self._read(
            self._mq(
                "SELECT DISTINCT namespace FROM memory_items WHERE tenant_id = ? AND subject = ?"
            ),
            (tenant_id, subject),
            tenant=tenant_id,
        )
        vectors = Q_ERASE_VECTORS.replace(
            "AND i.subject = ?)", f"AND i.subject = ?{only.replace('cls', 'i.cls')})"
        )
        with self._tx(tenant_id) as db:
            for query in (vectors, Q_ERASE_ITEMS + only, Q_ERASE_HISTORY + only):
                deleted += int(db.execute(self._mq(query), params).rowcount)
            # the write log names the namespaces (often the subject's id): it goes too
            db.executemany(self._mq(Q_ERASE_METER), [(tenant_id, ns) for (ns,) in spaces])
        return deleted

    def memory_classes(self, tenant_id: str) -> list[tuple[str, int, int, float]]:
        """Per data class of a tenant's live items: (class, items, value bytes, the oldest
        last write), for the store report and retention."""
        rows = self._read(self._mq(Q_CLASSES), (tenant_id,), tenant=tenant_id)
        return sorted((str(c), int(n), int(b), float(t)) for c, n, b, t in rows)

    def memory_purge_class(
        self, tenant_id: str, cls: str, before: float, *, dry_run: bool = False
    ) -> dict[str, int]:
        """Delete the items of ``cls`` last written before ``before`` (with their embeddings
        and kept versions) and the kept versions of ``cls`` that ended before it; rows per
        table (with ``dry_run``, the rows it would delete)."""
        params = (tenant_id, cls, before)
        versions = (*params, cls, before)
        q = self._mq
        if dry_run:
            count = "SELECT COUNT(*) FROM {} {}"
            live = self._read(q(count.format("memory_items", Q_AGED_ITEMS)), params, tenant_id)
            kept = self._read(
                q(count.format("memory_history", Q_AGED_HISTORY)), versions, tenant_id
            )
            return {"memory_items": int(live[0][0]), "memory_history": int(kept[0][0])}
        with self._tx(tenant_id) as db:
            vectors = int(db.execute(q(Q_AGED_VECTORS), params).rowcount)
            history = int(
                db.execute(q(f"DELETE FROM memory_history {Q_AGED_HISTORY}"), versions).rowcount
            )
            items = int(db.execute(q(f"DELETE FROM memory_items {Q_AGED_ITEMS}"), params).rowcount)
        counts = {"memory_items": items, "memory_history": history, "memory_vectors": vectors}
        return {t: n for t, n in counts.items() if n}

    def memory_bytes(self, tenant_id: str) -> dict[str, int]:
        """Value bytes a tenant's memory holds now, live items and kept versions."""
        rows = self._read(self._mq(Q_BYTES), (tenant_id, tenant_id), tenant=tenant_id)
        return {str(t): int(n) for t, n in rows}
