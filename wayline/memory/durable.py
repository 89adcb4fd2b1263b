"""``DurableStore``: LangGraph's ``BaseStore`` on the runs' own database (one URL, SQLite or
PostgreSQL), tenant first in every key, with provenance, invalidation, data classes and
subjects, TTL and semantic search over embeddings the caller supplies.

Outside a run its writes commit at once, each batch in one transaction. Inside a run a
node sees it through ``wayline.memory.step``: its writes commit with its step."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

from wayline.errors import ConfigError
from wayline.memory.base import (
    NOT_PROVIDED,
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    NotProvided,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    _validate_namespace,
    validate_op_namespace,
)
from wayline.memory.embed import Embedder, ensure_embeddings
from wayline.memory.matching import cosine, list_namespaces, matches_filter, texts_to_embed
from wayline.store.base import Store
from wayline.store.memory_records import MemoryRow, MemoryWrite, encode_value, join_namespace

__all__ = ["Candidate", "DurableStore", "rank"]

Key = tuple[tuple[str, ...], str]


class Candidate:
    """An item a search may return: its row and the embeddings of its indexed texts."""

    __slots__ = ("row", "vectors")

    def __init__(self, row: MemoryRow, vectors: list[list[float]]) -> None:
        self.row = row
        self.vectors = vectors


def when(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, UTC)


def to_item(row: MemoryRow) -> Item:
    return Item(
        value=row.value,
        key=row.key,
        namespace=row.namespace,
        created_at=when(row.created_at),
        updated_at=when(row.updated_at),
    )


def _hit(row: MemoryRow, score: float | None) -> SearchItem:
    return SearchItem(
        row.namespace, row.key, row.value, when(row.created_at), when(row.updated_at), score
    )


def rank(op: SearchOp, found: Sequence[Candidate], query: list[float] | None) -> list[SearchItem]:
    """The page of ``found`` (filtered already, newest first) a search returns: ranked by
    the best cosine similarity of any of an item's texts to the query when there is one,
    items without an embedding after those, as LangGraph's ``InMemoryStore`` ranks."""
    if query is None:
        return [_hit(c.row, None) for c in found[op.offset : op.offset + op.limit]]
    scored = sorted(  # equal scores in the order the items were made, as in memory
        ((max(cosine(query, v) for v in c.vectors), c) for c in found if c.vectors),
        key=lambda pair: (-pair[0], pair[1].row.created_at),
    )
    kept: list[tuple[float | None, Candidate]] = list(scored[op.offset : op.offset + op.limit])
    if len(kept) < op.limit:
        kept.extend((None, c) for c in [c for c in found if not c.vectors][: op.limit - len(kept)])
    return [_hit(c.row, s) for s, c in kept]


class DurableStore(BaseStore):
    """Long-term memory in a wayline store. ``store``: a URL or an open ``Store`` (the same
    database the runs use), or None for "the database of the run that reads it" (usable
    only from inside a node). ``tenant``: whose items a caller outside a run reads and
    writes; inside a run, the run's tenant. ``index``: ``{"dims", "embed", "fields"}`` for
    semantic search; ``ttl``: LangGraph's ``TTLConfig`` (expired items are never returned)."""

    supports_ttl = True

    def __init__(
        self,
        store: Any = None,
        *,
        tenant: str = "default",
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
    ) -> None:
        if isinstance(store, str):
            from wayline.store import open_store

            store = open_store(store)
        self.backend: Store | None = store
        self.tenant = tenant
        self.index_config: dict[str, Any] | None = dict(index) if index else None
        self.embeddings: Embedder | None = ensure_embeddings(index.get("embed")) if index else None
        self.ttl_config = ttl
        self._indexed: Store | None = None
        """The backend ``memory_index`` was asked of (the backend caches the answer)."""

    # -- identity ---------------------------------------------------------------------

    def bound(self, backend: Any, tenant: str) -> DurableStore:
        """The same store (index, TTL) on ``backend`` for ``tenant`` (a run's view)."""
        twin = DurableStore(None, tenant=tenant, ttl=self.ttl_config)
        twin.backend, twin.index_config, twin.embeddings = (
            backend,
            self.index_config,
            self.embeddings,
        )
        return twin

    def colocated(self, backend: Any) -> bool:
        """Whether writes can commit in ``backend``'s transactions: the same database."""
        if self.backend is None or self.backend is backend:
            return True
        url = getattr(self.backend, "url", None)
        if not isinstance(url, str) or ":memory:" in url:
            return False
        return bool(url == getattr(backend, "url", None))

    def _db(self) -> Store:
        if self.backend is None:
            raise ConfigError(
                "this DurableStore uses the database of the run that reads it: use it from "
                "inside a node (a store parameter, get_store(), runtime.store), or give it a "
                "URL, DurableStore('sqlite:///app.db'), to use it outside a run"
            )
        dims = (self.index_config or {}).get("dims")
        if dims and self._indexed is not self.backend:  # before its first write: kept by them
            self.backend.memory_index(int(dims))
            self._indexed = self.backend
        return self.backend

    # -- BaseStore --------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = _checked(ops)
        queries = _queries(ops)
        vectors = {q: self.embeddings.embed_query(q) for q in queries} if self.embeddings else {}
        results = self.read(ops, vectors)
        writes = self.writes_for(ops)
        self._db().memory_put(self.tenant, writes)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = _checked(ops)
        queries = _queries(ops)
        vectors: dict[str, list[float]] = {}
        if self.embeddings:
            found = await asyncio.gather(*(self.embeddings.aembed_query(q) for q in queries))
            vectors = dict(zip(queries, found, strict=True))
        results = await asyncio.to_thread(self.read, ops, vectors)
        writes = await self.awrites_for(ops)
        await asyncio.to_thread(self._db().memory_put, self.tenant, writes)
        return results

    def put(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        index: Literal[False] | list[str] | None = None,
        *,
        ttl: float | NotProvided | None = NOT_PROVIDED,
        source: str | None = None,
        subject: str | None = None,
        cls: str | None = None,
        observed_at: float | None = None,
    ) -> None:
        """``BaseStore.put``, and where the value came from (``source``: the caller's
        reference), when it was observed, and the data class and subject it belongs to."""
        op = self._put_op(namespace, key, value, index, ttl)
        labels = {"source": source, "subject": subject, "cls": cls, "observed_at": observed_at}
        self._db().memory_put(self.tenant, self.writes_for([op], **labels))

    async def aput(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        index: Literal[False] | list[str] | None = None,
        *,
        ttl: float | NotProvided | None = NOT_PROVIDED,
        source: str | None = None,
        subject: str | None = None,
        cls: str | None = None,
        observed_at: float | None = None,
    ) -> None:
        op = self._put_op(namespace, key, value, index, ttl)
        labels = {"source": source, "subject": subject, "cls": cls, "observed_at": observed_at}
        writes = await self.awrites_for([op], **labels)
        await asyncio.to_thread(self._db().memory_put, self.tenant, writes)

    # -- what wayline adds ------------------------------------------------------------

    def record(self, namespace: tuple[str, ...], key: str) -> MemoryRow | None:
        """The item with its provenance (run, step, node or source; observed_at; class,
        subject; whether and why it was invalidated)."""
        return self._db().memory_get(self.tenant, tuple(namespace), str(key))

    def history(self, namespace: tuple[str, ...], key: str) -> list[MemoryRow]:
        """Earlier versions of an item, oldest first: what puts replaced, deletes removed,
        and the versions invalidations marked."""
        return self._db().memory_history(self.tenant, tuple(namespace), str(key))

    def invalidate(self, namespace: tuple[str, ...], key: str, reason: str) -> bool:
        """Mark an item as no longer true: ``get`` still returns it (``record`` says why),
        ``search`` leaves it out unless ``include_invalidated``; its history is kept. A
        later put of the same key is valid again. False when there is no such valid item."""
        _validate_namespace(tuple(namespace))
        return bool(self._db().memory_invalidate(self.tenant, tuple(namespace), str(key), reason))

    def search_records(
        self,
        namespace_prefix: tuple[str, ...],
        *,
        include_invalidated: bool = False,
        limit: int = 100,
        offset: int = 0,
    ) -> list[MemoryRow]:
        """Items under a prefix with their provenance, invalidated ones too when asked."""
        rows = self._db().memory_scan(
            self.tenant, tuple(namespace_prefix), include_invalidated=include_invalidated
        )
        return list(rows[offset : offset + limit])

    def sweep(self) -> int:
        """Delete expired items now (workers do this on their own); how many."""
        return int(self._db().memory_sweep())

    # -- the pieces a run's view shares -----------------------------------------------

    def read(self, ops: Sequence[Op], vectors: Mapping[str, list[float]]) -> list[Result]:
        return [self.read_one(op, vectors, {}) for op in ops]

    def read_one(
        self, op: Op, vectors: Mapping[str, list[float]], overlay: Mapping[Key, MemoryWrite]
    ) -> Result:
        """One read op, with ``overlay`` (a node's writes not committed yet) over the store."""
        db = self._db()
        if isinstance(op, GetOp):
            if (op.namespace, op.key) in overlay:
                return _overlay_item(overlay[(op.namespace, op.key)], db, self.tenant)
            row = db.memory_get(self.tenant, op.namespace, op.key)
            if row is not None and op.refresh_ttl and row.ttl_minutes is not None:
                db.memory_refresh(self.tenant, [(op.namespace, op.key)])
            return None if row is None else to_item(row)
        if isinstance(op, SearchOp):
            query = vectors.get(op.query) if op.query and self.embeddings else None
            ttl: set[Key] = set()
            hits: list[SearchItem] | None = None
            if query is not None and not op.filter and not overlay:  # ranked by pgvector
                near = db.memory_nearest(
                    self.tenant, op.namespace_prefix, query, limit=op.limit, offset=op.offset
                )
                if near is not None and len(near) == op.limit:  # else: scoreless ones too
                    hits = [_hit(row, score) for row, score in near]
                    ttl = {(r.namespace, r.key) for r, _ in near if r.ttl_minutes}
            if hits is None:
                found = self.candidates(op, overlay, page=query is None)
                hits = rank(op, found, query)
                ttl = {(c.row.namespace, c.row.key) for c in found if c.row.ttl_minutes}
            if op.refresh_ttl and ttl:
                keys = [(h.namespace, h.key) for h in hits if (h.namespace, h.key) in ttl]
                db.memory_refresh(self.tenant, keys)
            return hits
        if isinstance(op, ListNamespacesOp):
            spaces = set(db.memory_namespaces(self.tenant))
            for (ns, _), w in overlay.items():
                spaces.add(ns) if w.value is not None else None
            return list_namespaces(op, spaces)
        return None

    def candidates(
        self, op: SearchOp, overlay: Mapping[Key, MemoryWrite], *, page: bool = False
    ) -> list[Candidate]:
        """The items a search ranks, newest first, ``overlay`` over the store's. ``page``
        (no query): only as many as the page needs are read and opened."""
        db = self._db()
        flt = op.filter

        def where(value: dict[str, Any]) -> bool:
            return matches_filter(value, flt)

        limit = op.offset + op.limit if page and not overlay else None
        rows = db.memory_scan(
            self.tenant, op.namespace_prefix, where=where if flt else None, limit=limit
        )
        with_vectors = bool(op.query and self.embeddings)
        vecs = db.memory_vectors(self.tenant, op.namespace_prefix) if with_vectors else {}
        found = []
        n = len(op.namespace_prefix)
        for (ns, _key), w in reversed(list(overlay.items())):  # a node's writes are newest
            if w.value is not None and ns[:n] == op.namespace_prefix:
                row = _overlay_row(w)
                if matches_filter(row.value, op.filter):
                    found.append(Candidate(row, [list(v) for _, v in w.vectors]))
        for row in rows:
            if (row.namespace, row.key) in overlay:
                continue
            own = vecs.get((join_namespace(row.namespace), row.key), [])
            found.append(Candidate(row, own))
        return found

    def writes_for(self, ops: Iterable[Op], **labels: Any) -> list[MemoryWrite]:
        """The puts of a batch (the last per key), embedded: what a commit writes."""
        puts = _last_puts(ops)
        texts = self._texts(puts)
        found = []
        if texts and self.embeddings:
            found = self.embeddings.embed_documents([t for _, _, t in texts])
        return self._writes(puts, texts, found, labels)

    async def awrites_for(self, ops: Iterable[Op], **labels: Any) -> list[MemoryWrite]:
        puts = _last_puts(ops)
        texts = self._texts(puts)
        found = []
        if texts and self.embeddings:
            found = await self.embeddings.aembed_documents([t for _, _, t in texts])
        return self._writes(puts, texts, found, labels)

    def _texts(self, puts: Mapping[Key, PutOp]) -> list[tuple[Key, str, str]]:
        if not self.index_config or not self.embeddings:
            return []
        fields = self.index_config.get("fields") or ["$"]
        return [
            (k, path, text) for k, op in puts.items() for path, text in texts_to_embed(op, fields)
        ]

    def _writes(
        self,
        puts: Mapping[Key, PutOp],
        texts: list[tuple[Key, str, str]],
        found: list[list[float]],
        labels: Mapping[str, Any],
    ) -> list[MemoryWrite]:
        if len(found) != len(texts):
            raise ValueError(
                f"Number of embeddings ({len(found)}) does not match number of texts ({len(texts)})"
            )
        dims = (self.index_config or {}).get("dims")
        by_key: dict[Key, list[tuple[str, tuple[float, ...]]]] = {}
        for (k, path, _), vector in zip(texts, found, strict=True):
            if dims is not None and len(vector) != dims:
                raise ConfigError(
                    f"the embedding of {path!r} of item {k[1]!r} has {len(vector)} "
                    f"dimensions, the store's index says dims={dims}: fix the embed "
                    "function or the index config; nothing was written"
                )
            by_key.setdefault(k, []).append((path, tuple(vector)))
        out = []
        for k, op in puts.items():
            value = None if op.value is None else _json_value(op.value, k)
            out.append(
                MemoryWrite(
                    op.namespace,
                    op.key,
                    value,
                    vectors=tuple(by_key.get(k, ())),
                    ttl_minutes=None if op.value is None else op.ttl,
                    **{k2: v for k2, v in labels.items() if v is not None},
                )
            )
        return out


def _json_value(value: Mapping[str, Any], k: Key) -> bytes:
    if not isinstance(value, Mapping):
        raise ConfigError(f"the value of item {k[1]!r} must be a dict, not {type(value).__name__}")
    try:
        return encode_value(value)
    except (TypeError, ValueError) as exc:
        raise ConfigError(
            f"the value of item {k[1]!r} in namespace {k[0]} is not JSON ({exc}): a memory "
            "holds JSON documents (str, numbers, bools, None, lists, dicts)"
        ) from None


def _overlay_row(w: MemoryWrite) -> MemoryRow:
    import time

    now = time.time()
    value = json.loads(w.value) if w.value is not None else {}
    return MemoryRow(w.namespace, w.key, value, now, now, ttl_minutes=w.ttl_minutes, node=w.node)


def _overlay_item(w: MemoryWrite, db: Any, tenant: str) -> Item | None:
    if w.value is None:
        return None
    row = _overlay_row(w)
    before = db.memory_get(tenant, w.namespace, w.key)
    created = before.created_at if before is not None else row.created_at
    return Item(
        value=row.value,
        key=w.key,
        namespace=w.namespace,
        created_at=when(created),
        updated_at=when(row.updated_at),
    )


def _checked(ops: Iterable[Op]) -> list[Op]:
    ops = list(ops)
    for op in ops:
        validate_op_namespace(op)
    return ops


def _queries(ops: Sequence[Op]) -> list[str]:
    return sorted({op.query for op in ops if isinstance(op, SearchOp) and op.query})


def _last_puts(ops: Iterable[Op]) -> dict[Key, PutOp]:
    return {(tuple(op.namespace), op.key): op for op in ops if isinstance(op, PutOp)}
