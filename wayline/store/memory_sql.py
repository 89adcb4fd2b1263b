"""Long-term memory over SQL (``wayline.memory``), written once for SQLite and PostgreSQL.

Kept apart from ``sql_store`` like the LangGraph tables: ``SQLStore`` inherits these
methods; they use its ``_tx``, ``_read``, ``placeholder``, ``dialect`` and ``payloads``. A
node's writes go in through ``_memory_write`` inside its step's commit (fenced by the run's
lease in the same transaction); a caller outside a run writes through ``memory_put``, a
transaction of its own. Every value goes through ``payloads`` (sealed when the store is
encrypted, checksummed over its identity) and every write is metered (table
``memory_items``, channel = namespace, under the run that wrote it, or run "" for a caller).
"""

from __future__ import annotations

import json
import logging
import math
import re
import struct
import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

from wayline.errors import CorruptionError, WaylineError
from wayline.store import memory_ann as ann
from wayline.store.memory_records import MemoryRow, MemoryWrite, join_namespace, split_namespace
from wayline.store.payloads import Payloads

__all__ = ["MEMORY_TABLES", "MemoryContract", "MemorySQL", "memory_ident"]

log = logging.getLogger("wayline.store")

MEMORY_TABLES = ("memory_items", "memory_history", "memory_vectors")

ITEM_COLUMNS = (
    "namespace, key, value, crc, created_at, updated_at, expires_at, ttl_minutes, run_id, "
    "step, node, source, observed_at, subject, cls, invalidated_at, invalid_reason"
)
HISTORY_COLUMNS = (
    "namespace, key, value, crc, updated_at, updated_at, NULL, NULL, run_id, step, node, "
    "source, observed_at, subject, cls, NULL, NULL, version, end_reason"
)
_LIVE = "(expires_at IS NULL OR expires_at > ?)"
_ITEM_COLUMNS_OF_I = ", ".join(f"i.{c.strip()}" for c in ITEM_COLUMNS.split(","))

Q_GET = f"SELECT {ITEM_COLUMNS} FROM memory_items WHERE tenant_id = ? AND namespace = ? AND key = ?"
Q_SCAN = f"SELECT {ITEM_COLUMNS} FROM memory_items WHERE tenant_id = ? AND {_LIVE}"
Q_UPSERT = """
INSERT INTO memory_items (tenant_id, namespace, key, value, crc, created_at, updated_at,
    ttl_minutes, expires_at, run_id, step, node, source, observed_at, subject, cls)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (tenant_id, namespace, key) DO UPDATE SET value = excluded.value,
    crc = excluded.crc, updated_at = excluded.updated_at,
    ttl_minutes = excluded.ttl_minutes, expires_at = excluded.expires_at,
    run_id = excluded.run_id, step = excluded.step, node = excluded.node,
    source = excluded.source, observed_at = excluded.observed_at,
    subject = excluded.subject, cls = excluded.cls, invalidated_at = NULL,
    invalid_reason = NULL
"""
Q_KEEP_HISTORY = """
INSERT INTO memory_history (tenant_id, namespace, key, version, value, crc, updated_at,
    run_id, step, node, source, observed_at, subject, cls, ended_at, end_reason)
SELECT tenant_id, namespace, key,
    (SELECT COALESCE(MAX(version), 0) + 1 FROM memory_history h
     WHERE h.tenant_id = i.tenant_id AND h.namespace = i.namespace AND h.key = i.key),
    value, crc, updated_at, run_id, step, node, source, observed_at, subject, cls, ?, ?
FROM memory_items i WHERE tenant_id = ? AND namespace = ? AND key = ?
"""
Q_DELETE = "DELETE FROM memory_items WHERE tenant_id = ? AND namespace = ? AND key = ?"
Q_DELETE_VECTORS = "DELETE FROM memory_vectors WHERE tenant_id = ? AND namespace = ? AND key = ?"
Q_PUT_VECTOR = (
    "INSERT INTO memory_vectors (tenant_id, namespace, key, path, embedding) VALUES (?, ?, ?, ?, ?)"
)
Q_VECTORS = "SELECT namespace, key, path, embedding FROM memory_vectors WHERE tenant_id = ?"
Q_METER = (
    "INSERT INTO meter (tenant_id, run_id, step, tbl, channel, bytes) VALUES (?, ?, ?, ?, ?, ?)"
)
Q_REFRESH = (
    "UPDATE memory_items SET expires_at = ? + ttl_minutes * 60.0 "
    "WHERE tenant_id = ? AND namespace = ? AND key = ? AND ttl_minutes IS NOT NULL"
)
Q_NAMESPACES = f"SELECT DISTINCT namespace FROM memory_items WHERE tenant_id = ? AND {_LIVE}"
Q_INVALIDATE = """
UPDATE memory_items SET invalidated_at = ?, invalid_reason = ?
WHERE tenant_id = ? AND namespace = ? AND key = ? AND invalidated_at IS NULL
"""
Q_HISTORY = (
    f"SELECT {HISTORY_COLUMNS} FROM memory_history WHERE tenant_id = ? AND namespace = ? "
    "AND key = ? ORDER BY version"
)
Q_EXPIRED = "SELECT tenant_id, namespace, key FROM memory_items WHERE expires_at <= ?"


def memory_ident(tenant_id: str, namespace: str, key: str) -> tuple[str, ...]:
    """A memory value's identity (its checksum covers it): the same for the live item and
    the versions history keeps of it, which are copied row for row."""
    return ("memory", tenant_id, namespace, key)


def _prefix_clause(prefix: tuple[str, ...], ph: str) -> tuple[str, list[Any]]:
    """Namespaces equal to ``prefix`` or under it, as a range an index serves (``/``
    follows ``.``, and no label holds a ``.``)."""
    if not prefix:
        return "", []
    joined = join_namespace(prefix)
    # the range [p, p/) is what an index narrows to; within it, p itself or p.<more> (not
    # p-x, which sorts between: "-" comes before ".")
    clause = (
        f" AND namespace >= {ph} AND namespace < {ph} AND (namespace = {ph} OR namespace >= {ph})"
    )
    return clause, [joined, joined + "/", joined, joined + "."]


class MemoryContract(Protocol):
    """Long-term memory (``wayline.memory``): items, their kept versions and embeddings."""

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

    def memory_index(self, dims: int) -> bool:
        """Make sure embeddings of ``dims`` dimensions have an approximate index (PostgreSQL
        with pgvector: HNSW), so that writes keep it; False: none (searches rank exactly)."""
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


class MemorySQL:
    placeholder: str
    dialect: str
    payloads: Payloads

    def _tx(self, tenant: str | None = None) -> AbstractContextManager[Any]:
        raise NotImplementedError

    def _read(self, query: str, params: Sequence[Any], tenant: str | None = None) -> list[Any]:
        raise NotImplementedError

    if TYPE_CHECKING:  # SQLCore's (the migrations' lock), whatever the order of the bases

        def _lock_schema(self, db: Any) -> None: ...

    def _mq(self, query: str) -> str:
        return query if self.placeholder == "?" else query.replace("?", self.placeholder)

    # -- writes -----------------------------------------------------------------------

    def memory_put(
        self, tenant_id: str, writes: Sequence[MemoryWrite], *, run_id: str | None = None
    ) -> None:
        """Apply puts and deletes in one transaction of their own (a caller outside a run)."""
        if not writes:
            return
        with self._tx(tenant_id) as db:
            self._memory_write(db, tenant_id, run_id, writes, time.time())

    def _memory_write(
        self,
        db: Any,
        tenant_id: str,
        run_id: str | None,
        writes: Iterable[MemoryWrite],
        now: float,
    ) -> None:
        """Each write in order; the version a put replaces or a delete removes is kept in
        the history first. Called inside a step's commit transaction, after its fence."""
        q = self._mq
        for w in writes:
            ns = join_namespace(w.namespace)
            where = (tenant_id, ns, w.key)
            reason = "deleted" if w.value is None else "superseded"
            db.execute(q(Q_KEEP_HISTORY), (now, reason, *where))
            db.execute(q(Q_DELETE_VECTORS), where)
            if w.value is None:
                db.execute(q(Q_DELETE), where)
                continue
            ident = memory_ident(tenant_id, ns, w.key)
            stored, crc = self.payloads.put(ident, tenant_id, "memory", w.value)
            expires = None if w.ttl_minutes is None else now + w.ttl_minutes * 60.0
            observed = w.observed_at if w.observed_at is not None else now
            db.execute(
                q(Q_UPSERT),
                (
                    *where,
                    stored,
                    crc,
                    now,
                    now,
                    w.ttl_minutes,
                    expires,
                    run_id,
                    w.step,
                    w.node,
                    w.source,
                    observed,
                    w.subject,
                    w.cls,
                ),
            )
            if w.vectors:
                db.executemany(
                    q(Q_PUT_VECTOR),
                    [(*where, path, self._pack(vec)) for path, vec in w.vectors],
                )
            step = -1 if w.step is None else w.step
            db.execute(q(Q_METER), (tenant_id, run_id or "", step, "memory_items", ns, len(stored)))

    def _pack(self, vector: Sequence[float]) -> Any:
        if self.dialect == "postgres":
            return [float(x) for x in vector]
        return struct.pack(f"<{len(vector)}f", *vector)

    def _unpack(self, stored: Any) -> list[float]:
        if isinstance(stored, bytes | bytearray | memoryview):
            data = bytes(stored)
            return list(struct.unpack(f"<{len(data) // 4}f", data))
        return [float(x) for x in stored]

    # -- reads ------------------------------------------------------------------------

    def memory_get(self, tenant_id: str, namespace: tuple[str, ...], key: str) -> MemoryRow | None:
        """The live item (None: absent or expired)."""
        ns = join_namespace(namespace)
        rows = self._read(self._mq(Q_GET), (tenant_id, ns, key), tenant=tenant_id)
        if not rows:
            return None
        row = self._row(tenant_id, rows[0])
        if row.expires_at is not None and row.expires_at <= time.time():
            return None
        return row

    def memory_scan(
        self,
        tenant_id: str,
        prefix: tuple[str, ...],
        *,
        include_invalidated: bool = False,
        where: Callable[[dict[str, Any]], bool] | None = None,
        limit: int | None = None,
    ) -> list[MemoryRow]:
        """Live items under ``prefix``, most recently updated first: those whose value
        ``where`` accepts, the first ``limit`` of them (a page needs no more: the rest are
        not opened, and without ``where`` not even read)."""
        clause, params = _prefix_clause(prefix, self.placeholder)
        query = self._mq(Q_SCAN) + clause
        if not include_invalidated:
            query += " AND invalidated_at IS NULL"
        query += " ORDER BY updated_at DESC, namespace, key"
        if limit is not None and where is None:
            query += f" LIMIT {int(limit)}"
        rows = self._read(query, (tenant_id, time.time(), *params), tenant=tenant_id)
        out = []
        for r in rows:
            row = self._row(tenant_id, r)
            if where is not None and not where(row.value):
                continue
            out.append(row)
            if limit is not None and len(out) >= limit:
                break
        return out

    def memory_nearest(
        self,
        tenant_id: str,
        prefix: tuple[str, ...],
        query: Sequence[float],
        *,
        limit: int,
        offset: int,
    ) -> list[tuple[MemoryRow, float]] | None:
        """The items under ``prefix`` nearest ``query`` by cosine similarity (the best of
        each item's texts). On PostgreSQL with pgvector, ranked in the database: exactly when
        at most ``memory_ann.EXACT_UNDER`` embeddings lie under the prefix, else by walking
        the HNSW index (approximate, as LangGraph's ``PostgresStore``); elsewhere by an exact
        scan of the embeddings (values are opened only for the page)."""
        vs = self._pgvector_schema()
        clause, params = _prefix_clause(prefix, self.placeholder)
        clause = clause.replace("namespace", "v.namespace")
        if vs is None:
            return self._nearest_by_scan(tenant_id, clause, params, query, limit, offset)
        dims, vec, now = len(query), ann.literal(query), time.time()
        counted = ann.count_query(clause, ann.EXACT_UNDER + 1)
        few = int(self._read(counted, (tenant_id, *params), tenant=tenant_id)[0][0])
        if few <= ann.EXACT_UNDER or not self.memory_index(dims):
            sql = ann.exact_query(vs, dims, clause, _ITEM_COLUMNS_OF_I, limit, offset)
            rows = self._read(sql, (vec, now, tenant_id, *params), tenant=tenant_id)
            return [(self._row(tenant_id, r[:-1]), float(r[-1])) for r in rows]
        return self._nearest_by_index(tenant_id, vs, dims, clause, (vec, params), limit, offset)

    def _nearest_by_index(
        self,
        tenant_id: str,
        vs: str,
        dims: int,
        clause: str,
        query: tuple[str, list[Any]],
        limit: int,
        offset: int,
    ) -> list[tuple[MemoryRow, float]]:
        """The page by the HNSW index: the nearest embeddings in its order (twice the page
        and one, as LangGraph's; four times more while items with several embeddings leave
        the page short), the best per item, equal scores in the order the items were made."""
        vec, params = query
        want, fetch, now = offset + limit, 2 * (offset + limit) + 1, time.time()
        iterative = self.__dict__.get("_pgvector_version", (0,)) >= (0, 8)
        while True:
            with self._tx(tenant_id) as db:
                for setting in ann.scan_settings(fetch, iterative=iterative):
                    db.execute(setting)
                sql = ann.ann_query(vs, dims, clause, _ITEM_COLUMNS_OF_I, fetch)
                rows = db.execute(sql, (vec, now, tenant_id, *params, vec)).fetchall()
            best: dict[tuple[str, str], tuple[float, float, Any]] = {}
            for r in rows:
                score, seen = float(r[-1]), best.get((r[0], r[1]))
                if seen is None or score > seen[0]:
                    best[(r[0], r[1])] = (score, float(r[4]), r)
            if len(best) >= want or len(rows) < fetch:
                break
            fetch *= 4
        ranked = sorted(best.values(), key=lambda b: (-b[0], b[1]))[offset:want]
        return [(self._row(tenant_id, r[:-1]), score) for score, _, r in ranked]

    def memory_index(self, dims: int) -> bool:
        """Make sure embeddings of ``dims`` dimensions have their HNSW index (PostgreSQL
        with pgvector, up to ``memory_ann.MAX_INDEX_DIMS``), made once under the schema
        lock if it is missing (while it builds, writes to ``memory_vectors`` wait); False:
        no index (SQLite, no pgvector, a role that may not create one): searches rank
        exactly."""
        vs = self._pgvector_schema()
        if vs is None or not 0 < int(dims) <= ann.MAX_INDEX_DIMS:
            return False
        made: dict[int, bool] = self.__dict__.setdefault("_ann_dims", {})
        if dims not in made:
            name = ann.index_name(dims)
            try:
                if not self._read(ann.Q_INDEX_EXISTS, (name,)):
                    with self._tx() as db:
                        self._lock_schema(db)
                        db.execute(ann.create_index(vs, dims))
                made[dims] = True
            except WaylineError as exc:  # not the table's owner: exact ranking
                log.warning("no HNSW index %s for memory searches: %s", name, exc)
                made[dims] = False
        return made[dims]

    def _nearest_by_scan(
        self,
        tenant_id: str,
        clause: str,
        params: list[Any],
        query: Sequence[float],
        limit: int,
        offset: int,
    ) -> list[tuple[MemoryRow, float]]:
        """The exact scan: every live item's embeddings read (not its value), the best
        cosine similarity per item, equal scores in creation order; only the page's items
        are opened."""
        ph = self.placeholder
        sql = (
            "SELECT v.namespace, v.key, v.embedding, i.created_at FROM memory_vectors v "
            "JOIN memory_items i ON i.tenant_id = v.tenant_id AND i.namespace = v.namespace "
            f"AND i.key = v.key WHERE v.tenant_id = {ph} AND (i.expires_at IS NULL OR "
            f"i.expires_at > {ph}) AND i.invalidated_at IS NULL{clause}"
        )
        rows = self._read(sql, (tenant_id, time.time(), *params), tenant=tenant_id)
        q = [float(x) for x in query]
        qn = math.sqrt(sum(x * x for x in q))
        best: dict[tuple[str, str], tuple[float, float]] = {}
        for ns, key, stored, created in rows:
            v = self._unpack(stored)
            vn = math.sqrt(sum(x * x for x in v))
            score = sum(a * b for a, b in zip(q, v, strict=False)) / (qn * vn) if qn and vn else 0.0
            seen = best.get((ns, key))
            if seen is None or score > seen[0]:
                best[(ns, key)] = (score, float(created))
        ranked = sorted(best.items(), key=lambda kv: (-kv[1][0], kv[1][1]))
        out = []
        for (ns, key), (score, _) in ranked[offset : offset + limit]:
            row = self.memory_get(tenant_id, split_namespace(ns), key)
            if row is not None:
                out.append((row, score))
        return out

    def _pgvector_schema(self) -> str | None:
        """The schema pgvector lives in (it is made on first use when the role may), or
        None: not PostgreSQL, or no pgvector."""
        if self.dialect != "postgres":
            return None
        cached = self.__dict__.get("_pgvector")
        if cached is not None:
            return cached or None
        find = (
            "SELECT n.nspname, e.extversion FROM pg_extension e JOIN pg_namespace n "
            "ON n.oid = e.extnamespace WHERE e.extname = 'vector'"
        )
        rows = self._read(find, ())
        if not rows:
            try:
                with self._tx() as db:
                    db.execute("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public")
            except WaylineError:  # not installed on the server, or not allowed: exact scans
                self.__dict__["_pgvector"] = ""
                return None
            rows = self._read(find, ())
        name = str(rows[0][0]) if rows else ""
        if rows:  # "0.8.6": the index walk is iterative from 0.8
            parts = re.findall(r"\d+", str(rows[0][1]))
            self.__dict__["_pgvector_version"] = tuple(int(p) for p in parts)
        self.__dict__["_pgvector"] = f'"{name}"' if name else ""
        return self.__dict__["_pgvector"] or None

    def memory_vectors(
        self, tenant_id: str, prefix: tuple[str, ...]
    ) -> dict[tuple[str, str], list[list[float]]]:
        """The embeddings of the items under ``prefix``, by (stored namespace, key)."""
        clause, params = _prefix_clause(prefix, self.placeholder)
        rows = self._read(self._mq(Q_VECTORS) + clause, (tenant_id, *params), tenant=tenant_id)
        out: dict[tuple[str, str], list[list[float]]] = {}
        for ns, key, _path, stored in rows:
            out.setdefault((ns, key), []).append(self._unpack(stored))
        return out

    def memory_namespaces(self, tenant_id: str) -> list[tuple[str, ...]]:
        rows = self._read(self._mq(Q_NAMESPACES), (tenant_id, time.time()), tenant=tenant_id)
        return [split_namespace(ns) for (ns,) in rows]

    def memory_refresh(self, tenant_id: str, keys: Sequence[tuple[tuple[str, ...], str]]) -> None:
        """Restart the TTL clock of these items (a read with ``refresh_ttl``)."""
        if not keys:
            return
        now = time.time()
        with self._tx(tenant_id) as db:
            db.executemany(
                self._mq(Q_REFRESH),
                [(now, tenant_id, join_namespace(ns), key) for ns, key in keys],
            )

    def memory_history(
        self, tenant_id: str, namespace: tuple[str, ...], key: str
    ) -> list[MemoryRow]:
        """Earlier versions of an item, oldest first (what a put replaced, a delete removed)."""
        rows = self._read(
            self._mq(Q_HISTORY), (tenant_id, join_namespace(namespace), key), tenant=tenant_id
        )
        return [self._row(tenant_id, r) for r in rows]

    def memory_invalidate(
        self, tenant_id: str, namespace: tuple[str, ...], key: str, reason: str
    ) -> bool:
        """Mark an item invalid, keeping it and its history; False when there is none (or it
        is invalid already)."""
        ns = join_namespace(namespace)
        now = time.time()
        with self._tx(tenant_id) as db:
            keep = self._mq(Q_KEEP_HISTORY) + " AND invalidated_at IS NULL"
            db.execute(keep, (now, f"invalidated: {reason}", tenant_id, ns, key))
            cur = db.execute(self._mq(Q_INVALIDATE), (now, reason, tenant_id, ns, key))
            return bool(cur.rowcount == 1)

    def memory_sweep(self, now: float | None = None) -> int:
        """Delete every expired item (workers call this between claims); how many."""
        now = time.time() if now is None else now
        expired = self._read(self._mq(Q_EXPIRED), (now,))
        by_tenant: dict[str, list[MemoryWrite]] = {}
        for tenant_id, ns, key in expired:
            by_tenant.setdefault(tenant_id, []).append(MemoryWrite(split_namespace(ns), key, None))
        for tenant_id, writes in by_tenant.items():
            with self._tx(tenant_id) as db:
                self._memory_write(db, tenant_id, None, writes, now)
        return len(expired)

    def _row(self, tenant_id: str, r: Sequence[Any]) -> MemoryRow:
        ns, key, stored, crc = r[0], r[1], r[2], r[3]
        ident = memory_ident(tenant_id, ns, key)
        value: dict[str, Any] = {}
        if stored is not None:
            data = self.payloads.get(ident, tenant_id, "memory", stored, crc)
            try:
                value = json.loads(data)
            except ValueError as exc:
                raise CorruptionError.of(ident, f"its value is not JSON: {exc}") from None
        extra = {"version": int(r[17]), "ended": r[18]} if len(r) > 17 else {}
        return MemoryRow(
            namespace=split_namespace(ns),
            key=key,
            value=value,
            created_at=float(r[4]),
            updated_at=float(r[5]),
            expires_at=None if r[6] is None else float(r[6]),
            ttl_minutes=None if r[7] is None else float(r[7]),
            run_id=r[8],
            step=None if r[9] is None else int(r[9]),
            node=r[10],
            source=r[11],
            observed_at=None if r[12] is None else float(r[12]),
            subject=r[13],
            cls=r[14],
            invalidated_at=None if r[15] is None else float(r[15]),
            invalid_reason=r[16],
            **extra,
        )
